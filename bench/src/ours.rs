//! Our service, started as the tests start it: a fresh migrated and seeded
//! database, the API on a free loopback port, the outbox relay and one worker
//! serving every job kind on a topology of its own.

use std::time::Duration;

use anyhow::{bail, Context as _};
use i9_api::Application;
use i9_common::{
    amqp::Topology, crypto::DataCipher, db::MIGRATOR, jobs::JobKind, relay, seed, Config,
};
use i9_workers::consumer::WorkerConfig;
use sqlx::{postgres::PgPoolOptions, PgPool};

use crate::{load::Target, workspace_root, Cleanup};

const PORTAL: (&str, &str) = ("acme-hr-portal", "portal-secret-change-me");
const ADMIN: (&str, &str) = ("admin", "admin-Passw0rd!");
const LOCATION: &str = "Portland Warehouse";

pub struct Ours {
    pub base_url: String,
    pub token: String,
    pub location_id: i64,
    /// The bench's own connections, for polling `i9s`.
    pub poll_pool: PgPool,
}

impl Ours {
    pub fn target(&self) -> Target {
        Target {
            name: "ours",
            url: format!("{}/v1/employees", self.base_url),
            token: Some(self.token.clone()),
            location_id: self.location_id,
        }
    }
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
    let db_url = cleanup
        .create_database(&format!("i9_bench_{run_id}"))
        .await?;
    let mut config = Config::for_tests(&db_url);
    config.amqp_url = amqp_url().into();
    config.database_max_connections = 32;

    let pool = i9_common::db::connect(&config).await?;
    cleanup.pool(&pool);
    MIGRATOR.run(&pool).await.context("applying migrations")?;
    let fixture = workspace_root().join("fixtures/org.json");
    let text = std::fs::read_to_string(&fixture)
        .with_context(|| format!("reading {}", fixture.display()))?;
    let org = seed::parse(&text).context("parsing fixtures/org.json")?;
    seed::load(&pool, &DataCipher::from_config(&config), &org)
        .await
        .context("seeding the example organization")?;

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
    let relay_config = relay::RelayConfig::new(config.amqp_url.clone(), topology.clone());
    cleanup.task(
        "outbox relay",
        tokio::spawn(relay::run(
            pool.clone(),
            relay_config,
            cleanup.stop_signal(),
        )),
    );

    // The worker has a pool of its own, as the separate `i9-worker` process does.
    let worker_pool = i9_common::db::connect(&config).await?;
    cleanup.pool(&worker_pool);
    let ctx = i9_workers::Context::new(config.clone(), worker_pool)?;
    let mut wc = WorkerConfig::new(JobKind::ALL.to_vec(), topology);
    wc.prefetch = 16;
    let stop = cleanup.stop_signal();
    cleanup.task(
        "worker",
        tokio::spawn(async move {
            if let Err(e) = i9_workers::consumer::run(ctx, wc, stop).await {
                eprintln!("worker stopped: {e:#}");
            }
        }),
    );

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
    let token = sign_in(&base_url).await?;
    Ok(Ours {
        base_url,
        token,
        location_id,
        poll_pool,
    })
}

/// An access token of `admin` through the read+write portal client.
async fn sign_in(base_url: &str) -> anyhow::Result<String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let form = [
        ("grant_type", "password"),
        ("client_id", PORTAL.0),
        ("client_secret", PORTAL.1),
        ("username", ADMIN.0),
        ("password", ADMIN.1),
    ];
    let response = client
        .post(format!("{base_url}/oauth2/access_token"))
        .form(&form)
        .send()
        .await
        .context("token request")?;
    let status = response.status();
    let body = response.text().await?;
    if status != 200 {
        bail!("sign-in of {} failed with {status}: {body}", ADMIN.0);
    }
    let value: serde_json::Value = serde_json::from_str(&body).context("token response JSON")?;
    value["access_token"]
        .as_str()
        .map(str::to_owned)
        .context("token response without access_token")
}
