//! Our service, started as the tests start it: a fresh migrated and seeded
//! database, the API on a free loopback port, the outbox relay and one worker
//! serving every job kind on a topology of its own; the partner client's
//! callbacks go to a receiver of the bench that answers 204.
//!
//! The example organization (`fixtures/org.json`) gets one more role and user
//! for the reads: `west.auditor`, an HR Manager of West Region whose role
//! also has permission 12 (full SSNs, every read audited) but not 11, beside
//! `west.hr` (the same groups, masked SSNs).

use std::time::Duration;

use anyhow::{bail, Context as _};
use i9_api::Application;
use i9_common::{
    amqp::Topology, crypto::DataCipher, db::MIGRATOR, jobs::JobKind, relay, seed, Config,
};
use i9_workers::consumer::WorkerConfig;
use sqlx::{postgres::PgPoolOptions, PgPool};

use crate::{load::I9Target, workspace_root, Cleanup};

pub const PORTAL: (&str, &str) = ("acme-hr-portal", "portal-secret-change-me");
const PARTNER: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");
pub const ADMIN: (&str, &str) = ("admin", "admin-Passw0rd!");
pub const WEST_HR: (&str, &str) = ("west.hr", "west-Passw0rd!");
pub const WEST_AUDITOR: (&str, &str) = ("west.auditor", "auditor-Passw0rd!");
const ATS_BOT: (&str, &str) = ("ats.bot", "ats-Passw0rd!");
pub const LOCATION: &str = "Portland Warehouse";

/// Access tokens of the callers the bench uses.
pub struct Tokens {
    /// `admin` (every permission) through `acme-hr-portal`.
    pub admin: String,
    /// `west.hr`: HR Manager of West Region (no 11, no 12: group check, masked SSNs).
    pub hr: String,
    /// `west.auditor`: as `west.hr`, and permission 12 (full SSNs, audited).
    pub auditor: String,
    /// `ats.bot` through the partner client `greenhouse-ats`.
    pub partner: String,
}

pub struct Ours {
    pub base_url: String,
    pub tokens: Tokens,
    pub location_id: i64,
    /// The bench's own connections, for polling and reading `ours`' database.
    pub poll_pool: PgPool,
    pub database_url: String,
    /// The API's configuration (the relay and workers started later take it).
    pub config: Config,
    /// The API's pool (32 connections), which its outbox relay shares.
    pub pool: PgPool,
    /// The queues and exchanges of this run.
    pub topology: Topology,
    /// The bench's receiver of the partner's callbacks (answers 204).
    pub callback_url: String,
}

/// Which of ours' background parts [`start_with`] starts beside the API.
#[derive(Debug, Clone, Copy)]
pub struct Parts {
    /// The outbox relay, on the API's pool (as `i9-api` runs it).
    pub relay: bool,
    /// One worker serving every job kind, prefetch 16, a pool of 16.
    pub worker: bool,
}

impl Ours {
    pub fn i9_target(&self) -> I9Target {
        I9Target {
            url: format!("{}/v1/employees", self.base_url),
            token: Some(self.tokens.admin.clone()),
            location_id: self.location_id,
        }
    }
}

/// The example organization with `west.auditor` and its role added.
fn organization() -> anyhow::Result<seed::OrgFile> {
    let fixture = workspace_root().join("fixtures/org.json");
    let text = std::fs::read_to_string(&fixture)
        .with_context(|| format!("reading {}", fixture.display()))?;
    let mut org: serde_json::Value =
        serde_json::from_str(&text).context("parsing fixtures/org.json")?;
    org["roles"]
        .as_array_mut()
        .context("fixtures/org.json without roles")?
        .push(serde_json::json!({
            "name": "HR Auditor",
            "description": "HR Manager who sees full social security numbers (bench)",
            "permissions": [1, 2, 3, 4, 5, 6, 7, 8, 9, 12],
        }));
    org["users"]
        .as_array_mut()
        .context("fixtures/org.json without users")?
        .push(serde_json::json!({
            "login": WEST_AUDITOR.0,
            "password": WEST_AUDITOR.1,
            "firstName": "Aud",
            "lastName": "Itor",
            "title": "HR Auditor",
            "emailAddress": "aud.itor@acme.example",
            "role": "HR Auditor",
            "groups": ["West Region"],
        }));
    seed::parse(&org.to_string()).context("parsing the bench organization")
}

/// A loopback endpoint that answers every partner callback with 204.
async fn callback_receiver(cleanup: &mut Cleanup) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the callback receiver")?;
    let addr = listener.local_addr()?;
    let router = axum::Router::new().fallback(|| async { axum::http::StatusCode::NO_CONTENT });
    let stopped = cleanup.stopped();
    cleanup.task(
        "callback receiver",
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router)
                .with_graceful_shutdown(stopped)
                .await
            {
                eprintln!("callback receiver stopped: {e}");
            }
        }),
    );
    Ok(format!("http://{addr}/i9-status"))
}

fn amqp_url() -> String {
    std::env::var("AMQP_URL").unwrap_or_else(|_| i9_common::config::DEFAULT_AMQP_URL.to_owned())
}

/// `poll_connections` extra connections serve the bench's polling.
pub async fn start(
    run_id: &str,
    poll_connections: usize,
    cleanup: &mut Cleanup,
) -> anyhow::Result<Ours> {
    let parts = Parts {
        relay: true,
        worker: true,
    };
    start_with(run_id, poll_connections, parts, cleanup).await
}

/// The outbox relay on `pool`, until `stop` turns true.
pub fn spawn_relay(
    pool: &PgPool,
    config: &Config,
    topology: &Topology,
    stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let relay_config = relay::RelayConfig::new(config.amqp_url.clone(), topology.clone());
    tokio::spawn(relay::run(pool.clone(), relay_config, stop))
}

/// One worker serving `kinds` (prefetch 16) on a pool of its own, as the
/// separate `i9-worker` process has: 16 connections, as many as the messages
/// it takes at once (the server's 100 connection slots are shared by every
/// pool of the run). Runs until `stop` turns true; the pool closes with it.
pub async fn spawn_worker(
    config: &Config,
    topology: &Topology,
    kinds: Vec<JobKind>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let mut worker_config = config.clone();
    worker_config.database_max_connections = 16;
    let worker_pool = i9_common::db::connect(&worker_config).await?;
    let ctx = i9_workers::Context::new(config.clone(), worker_pool.clone())?;
    let mut wc = WorkerConfig::new(kinds, topology.clone());
    wc.prefetch = 16;
    Ok(tokio::spawn(async move {
        if let Err(e) = i9_workers::consumer::run(ctx, wc, stop).await {
            eprintln!("worker stopped: {e:#}");
        }
        worker_pool.close().await;
    }))
}

/// [`start`], with the relay and the worker only as `parts` says.
pub async fn start_with(
    run_id: &str,
    poll_connections: usize,
    parts: Parts,
    cleanup: &mut Cleanup,
) -> anyhow::Result<Ours> {
    let db_url = cleanup
        .create_database(&format!("i9_bench_{run_id}"))
        .await?;
    let mut config = Config::for_tests(&db_url);
    config.amqp_url = amqp_url().into();
    config.database_max_connections = 32;
    // Partner callbacks go to the bench's receiver on loopback.
    config.allow_private_callbacks = true;
    config.mail_dir = cleanup.temp_dir(&format!("i9-bench-{run_id}-mail"))?;

    let pool = i9_common::db::connect(&config).await?;
    cleanup.pool(&pool);
    MIGRATOR.run(&pool).await.context("applying migrations")?;
    seed::load(&pool, &DataCipher::from_config(&config), &organization()?)
        .await
        .context("seeding the example organization")?;
    let hr_url = callback_receiver(cleanup).await?;
    sqlx::query("UPDATE oauth_clients SET integration_hr_url = $1 WHERE client_id = $2")
        .bind(&hr_url)
        .bind(PARTNER.0)
        .execute(&pool)
        .await
        .context("pointing the partner's callbacks at the bench")?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding our API")?;
    let addr = listener.local_addr()?;
    config.bind_addr = addr;
    config.public_base_url = format!("http://{addr}");

    let app = Application::with_listener(listener, config.clone(), pool.clone());
    let stopped = cleanup.stopped();
    cleanup.task(
        "our API",
        tokio::spawn(async move {
            if let Err(e) = app.run(stopped).await {
                eprintln!("our API stopped: {e}");
            }
        }),
    );

    // The API process relays the outbox it writes (as `i9-api` does).
    let topology = Topology::new(format!("bench{run_id}"));
    cleanup.topology(&amqp_url(), &topology);
    if parts.relay {
        let relay = spawn_relay(&pool, &config, &topology, cleanup.stop_signal());
        cleanup.task("outbox relay", relay);
    }
    if parts.worker {
        let worker = spawn_worker(
            &config,
            &topology,
            JobKind::ALL.to_vec(),
            cleanup.stop_signal(),
        )
        .await?;
        cleanup.task("worker", worker);
    }

    let poll_pool = PgPoolOptions::new()
        .max_connections(u32::try_from(poll_connections + 2).unwrap_or(16))
        .acquire_timeout(Duration::from_secs(10))
        .connect(&db_url)
        .await
        .context("connecting the polling pool")?;
    cleanup.pool(&poll_pool);
    let location_id: i64 = sqlx::query_scalar("SELECT id FROM groups WHERE name = $1")
        .bind(LOCATION)
        .fetch_one(&poll_pool)
        .await
        .with_context(|| format!("group {LOCATION:?} in the fixture"))?;

    let base_url = config.public_base_url.clone();
    let tokens = Tokens {
        admin: sign_in(&base_url, PORTAL, ADMIN).await?,
        hr: sign_in(&base_url, PORTAL, WEST_HR).await?,
        auditor: sign_in(&base_url, PORTAL, WEST_AUDITOR).await?,
        partner: sign_in(&base_url, PARTNER, ATS_BOT).await?,
    };
    Ok(Ours {
        base_url,
        tokens,
        location_id,
        poll_pool,
        database_url: db_url,
        config,
        pool,
        topology,
        callback_url: hr_url,
    })
}

/// An access token of `user` through `client`.
pub async fn sign_in(
    base_url: &str,
    client: (&str, &str),
    user: (&str, &str),
) -> anyhow::Result<String> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let form = [
        ("grant_type", "password"),
        ("client_id", client.0),
        ("client_secret", client.1),
        ("username", user.0),
        ("password", user.1),
    ];
    let response = http
        .post(format!("{base_url}/oauth2/access_token"))
        .form(&form)
        .send()
        .await
        .context("token request")?;
    let status = response.status();
    let body = response.text().await?;
    if status != 200 {
        bail!("sign-in of {} failed with {status}: {body}", user.0);
    }
    let value: serde_json::Value = serde_json::from_str(&body).context("token response JSON")?;
    value["access_token"]
        .as_str()
        .map(str::to_owned)
        .context("token response without access_token")
}
