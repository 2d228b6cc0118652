//! Test helpers: `spawn_app()` starts the real API on a free port against a
//! fresh Postgres database of its own, migrated and seeded with the example
//! organization. The database is dropped when the `TestApp` is dropped.

pub mod log_scan;
pub mod logs;
pub mod private_postgres;
pub mod proxy;
pub mod receiver;
pub mod smtp;

use std::{future::Future, path::PathBuf, sync::Arc, time::Duration};

use i9_api::Application;
use i9_common::{
    amqp::Topology, crypto::DataCipher, db::MIGRATOR, relay, retry::RetryPolicy, seed, Config,
};
use i9_workers::consumer::WorkerConfig;
use secrecy::SecretString;
use serde_json::Value;
use sqlx::{postgres::PgPoolOptions, Connection, Executor, PgConnection, PgPool};
use tokio::sync::watch;

pub use proxy::TcpProxy;
pub use receiver::Receiver;
pub use smtp::TestSmtp;

/// RabbitMQ as the machine runs it: `AMQP_URL` as the tests' configuration
/// reads it (`Config::for_tests`).
pub fn amqp_url() -> SecretString {
    Config::for_tests("").amqp_url
}

/// Poll `check` until it holds, or fail after 30 s. No sleeps as synchronisation.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The server (maintenance) database tests create their databases from.
pub fn admin_database_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

pub fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/org.json")
}

pub fn fixture() -> seed::OrgFile {
    let text = std::fs::read_to_string(fixture_path()).expect("fixture readable");
    seed::parse(&text).expect("fixture parses")
}

/// Credentials of the example organization.
pub const PORTAL: (&str, &str) = ("acme-hr-portal", "portal-secret-change-me");
pub const REPORTING: (&str, &str) = ("acme-reporting", "reporting-secret-change-me");
pub const ADMIN: (&str, &str) = ("admin", "admin-Passw0rd!");
pub const WEST_HR: (&str, &str) = ("west.hr", "west-Passw0rd!");
pub const BOSTON_VIEWER: (&str, &str) = ("boston.viewer", "boston-Passw0rd!");
pub const ATS_BOT: (&str, &str) = ("ats.bot", "ats-Passw0rd!");

/// A database of its own, dropped on drop.
pub struct TestDb {
    pub name: String,
    pub url: String,
    pub pool: PgPool,
}

impl TestDb {
    pub async fn new() -> Self {
        let db = Self::unmigrated().await;
        MIGRATOR.run(&db.pool).await.expect("migrations apply");
        db
    }

    /// An empty database (a test of a migration applies what it needs).
    pub async fn unmigrated() -> Self {
        logs::init();
        let admin_url = admin_database_url();
        let name = format!("i9_test_{}", uuid::Uuid::new_v4().simple());
        let mut conn = PgConnection::connect(&admin_url)
            .await
            .expect("Postgres reachable (TEST_DATABASE_URL)");
        conn.execute(format!(r#"CREATE DATABASE "{name}""#).as_str())
            .await
            .expect("create test database");
        conn.close().await.ok();
        let url = match admin_url.rsplit_once('/') {
            Some((base, _)) => format!("{base}/{name}"),
            None => panic!("TEST_DATABASE_URL needs a database path"),
        };
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .connect(&url)
            .await
            .expect("connect test database");
        Self { name, url, pool }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        let admin_url = admin_database_url();
        // Drop needs its own runtime: the test's may be shutting down.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(rt) = rt {
                rt.block_on(async {
                    if let Ok(mut conn) = PgConnection::connect(&admin_url).await {
                        let _ = conn
                            .execute(
                                format!(r#"DROP DATABASE IF EXISTS "{name}" WITH (FORCE)"#)
                                    .as_str(),
                            )
                            .await;
                    }
                });
            }
        })
        .join();
    }
}

pub struct TestApp {
    pub address: String,
    pub port: u16,
    pub config: Arc<Config>,
    pub cipher: DataCipher,
    pub http: reqwest::Client,
    /// Queue and exchange names of this test alone.
    pub topology: Topology,
    pub smtp: Option<TestSmtp>,
    pub proxy: Option<TcpProxy>,
    /// The API's bound on password hashing (its turns can be held).
    pub hashing: i9_api::hashing::Hashing,
    /// Delay queues that workers of this test may have declared (removed at the end).
    waits: std::sync::Mutex<Vec<Duration>>,
    stop: watch::Sender<bool>,
    worker: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    // Dropped last: the database outlives the tasks using it.
    pub db: TestDb,
}

/// What to run beside the API.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stack {
    /// The outbox relay and a worker serving every job kind, with a real SMTP server.
    pub jobs: bool,
    /// Reach RabbitMQ through a proxy the test can cut.
    pub proxy: bool,
    /// Start no worker (when `jobs`); the test starts its own.
    pub no_worker: bool,
}

/// Start the API with a fresh, seeded database.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

pub async fn spawn_app_with(configure: impl FnOnce(&mut Config)) -> TestApp {
    spawn(Stack::default(), configure).await
}

/// The API, the outbox relay, a worker and an SMTP server, on this test's own
/// database and queues.
pub async fn spawn_stack() -> TestApp {
    spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await
}

pub async fn spawn(stack: Stack, configure: impl FnOnce(&mut Config)) -> TestApp {
    logs::init();
    let db = TestDb::new().await;
    let mut config = Config::for_tests(&db.url);
    config.bind_addr = ([127, 0, 0, 1], 0).into();
    config.amqp_url = amqp_url();
    let proxy = if stack.proxy {
        Some(TcpProxy::start("127.0.0.1:5672").await)
    } else {
        None
    };
    if let Some(p) = &proxy {
        config.amqp_url = p.amqp_url().into();
    }
    let smtp = stack.jobs.then(TestSmtp::start);
    if let Some(s) = &smtp {
        config.smtp_url = Some(s.url().into());
    }
    configure(&mut config);
    let cipher = DataCipher::from_config(&config);
    seed::load(&db.pool, &cipher, &fixture())
        .await
        .expect("seed the example organization");
    let topology = Topology::new(format!("t{}", uuid::Uuid::new_v4().simple()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind API");
    let port = listener.local_addr().expect("addr").port();
    let public = format!("http://127.0.0.1:{port}");
    config.public_base_url.clone_from(&public);
    let (stop, stop_rx) = watch::channel(false);
    let app = Application::with_listener(listener, config.clone(), db.pool.clone());
    let hashing = app.hashing();
    tokio::spawn(app.run(std::future::pending()));
    let mut worker = None;
    if stack.jobs {
        let mut relay_config = relay::RelayConfig::new(config.amqp_url.clone(), topology.clone());
        relay_config.poll = Duration::from_millis(500);
        relay_config.max_backoff = Duration::from_secs(1);
        tokio::spawn(relay::run(db.pool.clone(), relay_config, stop_rx.clone()));
        if !stack.no_worker {
            worker = Some(start_worker(&config, &db.pool, &topology, stop_rx.clone()));
        }
    }
    let waits = test_worker_config(&topology).waits();
    TestApp {
        address: public,
        port,
        config: Arc::new(config),
        cipher,
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client"),
        topology,
        smtp,
        proxy,
        hashing,
        waits: std::sync::Mutex::new(waits),
        stop,
        worker,
        db,
    }
}

/// The whole stack (relay, worker, SMTP) with a partner's callback endpoint
/// set as the example partner client's: callbacks may reach this machine,
/// where the endpoint listens.
pub async fn spawn_partner_stack() -> (TestApp, Receiver) {
    let app = spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        |c| c.allow_private_callbacks = true,
    )
    .await;
    let receiver = app.partner_endpoint().await;
    (app, receiver)
}

/// The worker configuration of the tests: every job kind, one job at a time
/// per kind (a test can tell a job was handled once a later one of the same
/// kind is), and short retry policies: four attempts of a job, three of a
/// callback, a second apart.
pub fn test_worker_config(topology: &Topology) -> WorkerConfig {
    let mut wc = WorkerConfig::new(i9_common::jobs::JobKind::ALL.to_vec(), topology.clone());
    wc.prefetch = 1;
    wc.retry = RetryPolicy {
        max_attempts: 4,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(1),
        jitter: 0.0,
    };
    wc.callback_retry = RetryPolicy {
        max_attempts: 3,
        ..wc.retry
    };
    wc
}

/// A worker with the tests' configuration.
pub fn start_worker(
    config: &Config,
    pool: &PgPool,
    topology: &Topology,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    run_worker(config, pool, test_worker_config(topology), stop)
}

pub fn run_worker(
    config: &Config,
    pool: &PgPool,
    wc: WorkerConfig,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    let ctx = i9_workers::Context::new(config.clone(), pool.clone()).expect("worker context");
    tokio::spawn(i9_workers::consumer::run(ctx, wc, stop))
}

/// Serve the worker's `/healthz` and `/metrics` (workers/src/http.rs) on a
/// free port of this machine, for a worker started with `health`; returns its
/// base URL. The metrics are this process's (one recorder per process).
pub async fn serve_worker_http(health: i9_workers::http::WorkerHealth) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the worker's HTTP endpoint");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(i9_workers::http::serve(
        listener,
        health,
        i9_common::metrics::handle(),
    ));
    format!("http://{addr}")
}

/// The value of the sample `name{labels…}` in a Prometheus text scrape: the
/// line of that name whose labels include every one of `labels`; None when
/// there is none, and a panic when several match.
pub fn sample(scrape: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in scrape.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = match line.rsplit_once(' ') {
            Some(p) => p,
            None => continue,
        };
        let (metric, label_text) = match series.split_once('{') {
            Some((m, rest)) => (m, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        if metric != name {
            continue;
        }
        let has = |(k, v): &(&str, &str)| label_text.contains(&format!("{k}=\"{v}\""));
        if labels.iter().all(has) {
            assert!(found.is_none(), "several samples of {name}{labels:?}");
            found = Some(value.parse::<f64>().expect("a number"));
        }
    }
    found
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(w) = self.worker.take() {
            w.abort();
        }
        if self.smtp.is_none() {
            return; // no relay or worker declared anything
        }
        let topology = self.topology.clone();
        let waits = self.waits.lock().map(|w| w.clone()).unwrap_or_default();
        // Remove this test's queues and exchanges from the shared broker.
        let _ = std::thread::spawn(move || {
            if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                rt.block_on(async {
                    if let Ok(conn) = i9_common::amqp::connect(&amqp_url()).await {
                        if let Ok(ch) = conn.create_channel().await {
                            let _ = topology.delete(&ch, &waits).await;
                        }
                        let _ = conn.close(200, "test done".into()).await;
                    }
                });
            }
        })
        .join();
    }
}

impl TestApp {
    pub fn pool(&self) -> &PgPool {
        &self.db.pool
    }

    pub fn smtp(&self) -> &TestSmtp {
        self.smtp.as_ref().expect("spawned with an SMTP server")
    }

    /// Start a worker of this test's own configuration (its delay queues are
    /// removed at the end with the rest).
    pub fn start_worker_with(
        &self,
        wc: WorkerConfig,
        stop: watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<anyhow::Result<()>> {
        if let Ok(mut w) = self.waits.lock() {
            w.extend(wc.waits());
            w.sort();
            w.dedup();
        }
        run_worker(&self.config, self.pool(), wc, stop)
    }

    /// Messages ready in each of `queues` (not those in a consumer's hands;
    /// 0 for a queue not declared yet).
    pub async fn queue_depths(&self, queues: &[String]) -> Vec<u32> {
        let conn = i9_common::amqp::connect(&amqp_url())
            .await
            .expect("RabbitMQ reachable");
        let mut depths = Vec::with_capacity(queues.len());
        for q in queues {
            // A channel each: the broker closes the channel of a missing queue.
            let ch = conn.create_channel().await.expect("channel");
            let declared = ch
                .queue_declare(
                    q.as_str().into(),
                    lapin::options::QueueDeclareOptions {
                        passive: true,
                        ..Default::default()
                    },
                    lapin::types::FieldTable::default(),
                )
                .await;
            depths.push(declared.map(|d| d.message_count()).unwrap_or(0));
        }
        conn.close(200, "counted".into()).await.ok();
        depths
    }

    /// Copies of jobs waiting in this test's delay queues, in all.
    pub async fn delayed_copies(&self) -> u32 {
        let waits = self.waits.lock().map(|w| w.clone()).unwrap_or_default();
        let queues: Vec<String> = waits
            .iter()
            .map(|w| self.topology.delay_queue(*w))
            .collect();
        self.queue_depths(&queues).await.iter().sum()
    }

    /// Jobs in this test's dead-letter queue.
    pub async fn dead_letters(&self) -> u32 {
        self.queue_depths(&[self.topology.dead_letter_queue()])
            .await[0]
    }

    /// A partner's callback endpoint, set as the example partner client's
    /// (`greenhouse-ats`) `integrationHrUrl`.
    pub async fn partner_endpoint(&self) -> Receiver {
        let receiver = Receiver::start().await;
        sqlx::query(
            "UPDATE oauth_clients SET integration_hr_url = $1 WHERE client_id = 'greenhouse-ats'",
        )
        .bind(&receiver.url)
        .execute(self.pool())
        .await
        .expect("set the partner's callback URL");
        receiver
    }

    /// A partner client of its own (`client_id`) with `url` as its callback
    /// URL, an employee of it with an I-9, and a status event recorded for
    /// it (as the API and the worker record them): the worker posts it to
    /// `url`. Returns the event's id.
    pub async fn status_event_towards(&self, client_id: &str, url: &str) -> uuid::Uuid {
        let client: i64 = sqlx::query_scalar(
            "INSERT INTO oauth_clients (client_id, secret_hash, scopes, integration_client_system,
                                        integration_hr_url, signing_secret_ciphertext)
             SELECT $1, secret_hash, scopes, integration_client_system, $2, signing_secret_ciphertext
             FROM oauth_clients WHERE client_id = 'greenhouse-ats' RETURNING id",
        )
        .bind(client_id)
        .bind(url)
        .fetch_one(self.pool())
        .await
        .expect("a partner client");
        let employee = self
            .insert_employee("Ana", "Diaz", "Portland Warehouse", None)
            .await;
        sqlx::query(
            "UPDATE employees SET integration_client_id = $2, integration_candidate_id = $3 WHERE id = $1",
        )
        .bind(employee)
        .bind(client)
        .bind(format!("cand-{client_id}"))
        .execute(self.pool())
        .await
        .expect("the partner's employee");
        let i9 = self.insert_i9(employee, "Section 1 Incomplete").await;
        let mut tx = self.pool().begin().await.expect("a transaction");
        let event = i9_common::events::record_status_change(
            &mut tx,
            i9,
            None,
            &self.config.public_base_url,
        )
        .await
        .expect("an event recorded")
        .expect("an event");
        tx.commit().await.expect("committed");
        event
    }

    /// A receiver that turns true when the test ends (for tasks a test starts itself).
    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    pub async fn post_json(&self, path: &str, token: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("POST")
    }

    pub async fn patch_json(&self, path: &str, token: &str, body: &Value) -> reqwest::Response {
        self.http
            .patch(self.url(path))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("PATCH")
    }

    pub async fn count(&self, sql: &str, id: i64) -> i64 {
        sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(self.pool())
            .await
            .expect("count")
    }

    /// I-9s of an employee.
    pub async fn i9_count(&self, employee: i64) -> i64 {
        self.count("SELECT count(*) FROM i9s WHERE employee_id = $1", employee)
            .await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// POST a form to the token endpoint.
    pub async fn token_request(&self, form: &[(&str, &str)]) -> reqwest::Response {
        self.http
            .post(self.url("/oauth2/access_token"))
            .form(form)
            .send()
            .await
            .expect("token request")
    }

    pub async fn token_request_owned(&self, form: Vec<(&str, &str)>) -> reqwest::Response {
        self.token_request(&form).await
    }

    /// Sign in with the password grant; returns the whole token response.
    pub async fn sign_in_with(
        &self,
        client: (&str, &str),
        user: (&str, &str),
        scope: Option<&str>,
    ) -> Value {
        let mut form = vec![
            ("grant_type", "password"),
            ("client_id", client.0),
            ("client_secret", client.1),
            ("username", user.0),
            ("password", user.1),
        ];
        if let Some(s) = scope {
            form.push(("scope", s));
        }
        let r = self.token_request(&form).await;
        assert_eq!(r.status(), 200, "sign-in of {} failed", user.0);
        r.json().await.expect("token json")
    }

    /// An access token of `user` through the read+write portal client.
    pub async fn token(&self, user: (&str, &str)) -> String {
        self.sign_in_with(PORTAL, user, None).await["access_token"]
            .as_str()
            .expect("access_token")
            .to_owned()
    }

    pub async fn get(&self, path: &str, token: &str) -> reqwest::Response {
        self.http
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("GET")
    }

    /// GET and expect 200 with JSON.
    pub async fn get_json(&self, path: &str, token: &str) -> Value {
        let r = self.get(path, token).await;
        let status = r.status();
        let body = r.text().await.expect("body");
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).expect("json body")
    }

    pub async fn id_of(&self, sql: &str, key: &str) -> i64 {
        sqlx::query_scalar(sql)
            .bind(key)
            .fetch_one(self.pool())
            .await
            .expect("id lookup")
    }

    pub async fn employee_id(&self, profile_id: &str) -> i64 {
        self.id_of("SELECT id FROM employees WHERE profile_id = $1", profile_id)
            .await
    }

    pub async fn group_id(&self, name: &str) -> i64 {
        self.id_of("SELECT id FROM groups WHERE name = $1", name)
            .await
    }

    /// Insert an employee directly (the write API comes later), optionally with an SSN.
    pub async fn insert_employee(
        &self,
        first: &str,
        last: &str,
        group: &str,
        ssn: Option<&str>,
    ) -> i64 {
        let location = self.group_id(group).await;
        let ssn = ssn.map(|s| i9_common::domain::Ssn::parse(s).expect("valid ssn"));
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO employees (first_name, last_name, location_id, ssn_ciphertext, ssn_hash, ssn_last4)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(first)
        .bind(last)
        .bind(location)
        .bind(ssn.as_ref().map(|s| self.cipher.encrypt_ssn(i9_common::crypto::Purpose::EmployeeSsn, s)))
        .bind(ssn.as_ref().map(|s| self.cipher.ssn_search_hash(s)))
        .bind(ssn.as_ref().map(|s| s.last4().to_owned()))
        .fetch_one(self.pool())
        .await
        .expect("insert employee");
        sqlx::query("INSERT INTO employment_periods (employee_id, start_date) VALUES ($1, DATE '2026-11-02')")
            .bind(id)
            .execute(self.pool())
            .await
            .expect("insert period");
        id
    }

    /// Insert an I-9 for an employee directly, copying its names; returns its id.
    pub async fn insert_i9(&self, employee_id: i64, status: &str) -> i64 {
        use i9_common::crypto::Purpose;
        let ssn: Option<Vec<u8>> =
            sqlx::query_scalar("SELECT ssn_ciphertext FROM employees WHERE id = $1")
                .bind(employee_id)
                .fetch_one(self.pool())
                .await
                .expect("employee exists");
        let ssn = ssn.map(|ct| {
            let plain = self
                .cipher
                .decrypt_ssn(Purpose::EmployeeSsn, &ct)
                .expect("decrypts");
            self.cipher.encrypt_ssn(Purpose::I9Ssn, &plain)
        });
        sqlx::query_scalar(
            "INSERT INTO i9s (employee_id, status, form_version, first_name, last_name, email_address,
                              start_date, date_due, ssn_ciphertext, ssn_last4)
             SELECT e.id, $2, '01/20/25', e.first_name, e.last_name, e.email_address,
                    p.start_date, p.start_date + 3, $3, e.ssn_last4
             FROM employees e LEFT JOIN employment_periods p ON p.employee_id = e.id
             WHERE e.id = $1 ORDER BY p.id DESC LIMIT 1
             RETURNING id",
        )
        .bind(employee_id)
        .bind(status)
        .bind(ssn)
        .fetch_one(self.pool())
        .await
        .expect("insert i9")
    }
}

/// The `href` of the link with `rel`, if any.
pub fn link(body: &Value, rel: &str) -> Option<String> {
    body["links"]
        .as_array()?
        .iter()
        .find(|l| l["rel"] == rel)
        .and_then(|l| l["href"].as_str())
        .map(str::to_owned)
}

/// The ids of a list response's `searchResult`.
pub fn ids(body: &Value) -> Vec<i64> {
    body["searchResult"]
        .as_array()
        .expect("searchResult array")
        .iter()
        .map(|r| r["id"].as_i64().expect("int id"))
        .collect()
}
