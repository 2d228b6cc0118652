//! `i9-bench pipeline`: what happens after a write commits, each stage
//! against a bare lapin / sqlx / reqwest program doing the least the same
//! work needs, in one run (issue 14, "The pipeline").
//!
//! 1. The API's highest write rate R: `POST /v1/employees` with `createI9`
//!    (the write that makes a `create_i9` job), closed loop, with the outbox
//!    relay and the worker not running (the API alone on the machine).
//! 2. The relay draining a backlog of `--jobs` `create_i9` outbox rows (made
//!    by those POSTs, topped up by more), against a lapin publisher of the
//!    same bodies with the same confirm window.
//! 3. One worker creating the `--jobs` I-9s, against a lapin consumer running
//!    the same transaction in substance on a copy of the requests.
//! 4. One worker posting `--callbacks` signed partner callbacks to a
//!    loopback receiver, against reqwest posting the same signed bodies.
//! 5. The time from a POST to its I-9 under an open-loop load at R/2, the
//!    relay and the worker running.
//!
//! Goals: the relay and the worker each ≥ 2R; at R/2, the time to I-9 p50
//! ≤ 3 × the POST's p50. The section `pipeline` of BENCHMARKS.md.

use std::{
    fmt::Write as _,
    path::PathBuf,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context as _};
use futures_util::{StreamExt as _, TryStreamExt as _};
use hdrhistogram::Histogram;
use i9_common::{
    crypto::DataCipher,
    domain::{calendar::Calendar, I9Status, FORM_VERSION},
    jobs::JobKind,
};
use lapin::{
    options::{
        BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicPublishOptions,
        BasicQosOptions, ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions,
    },
    types::{AMQPValue, FieldTable},
    BasicProperties, Confirmation,
};
use reqwest::{header::CONTENT_TYPE, StatusCode};
use sqlx::{postgres::PgPoolOptions, PgPool, Row as _};
use tokio::{sync::watch, task::JoinHandle};
use uuid::Uuid;

use crate::{
    load::{self, quantile_ms, LoadResult, ProfileIds, Target},
    ours::{self, Ours, Parts},
    report, sys, workspace_root, Cleanup,
};

/// The relay's batch (`RelayConfig::new`): rows claimed per round, published
/// and then confirmed together. The bare publisher keeps the same window.
const RELAY_BATCH: usize = 200;
/// The worker's prefetch in the bench (`ours::spawn_worker`), and so the
/// bare consumer's and the bare callback poster's concurrency.
const PREFETCH: u16 = 16;
/// How often a drain is polled for its end.
const DRAIN_POLL: Duration = Duration::from_millis(20);
/// Limit on one confirm, one ack, one callback.
const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// Most POSTs of the open-loop load in flight at once; beyond, a POST due is
/// not sent and counted.
const MAX_IN_FLIGHT: usize = 2048;
const I9_POLL: Duration = Duration::from_millis(2);
const I9_DEADLINE: Duration = Duration::from_secs(30);
/// The partner whose callbacks are posted (fixtures/org.json).
const PARTNER: &str = "greenhouse-ats";

#[derive(clap::Args, Debug, Clone)]
pub struct PipelineArgs {
    /// `create_i9` jobs in the backlog the relay and the worker drain.
    #[arg(long, default_value_t = 50_000)]
    pub jobs: usize,
    /// Partner status callbacks the worker posts.
    #[arg(long, default_value_t = 10_000)]
    pub callbacks: usize,
    /// Seconds measured: of the API's write rate, and of the open-loop load at R/2.
    #[arg(long, default_value_t = 15)]
    pub duration: u64,
    /// Seconds of warm-up before each of those two (not measured).
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
    /// Concurrent keep-alive connections of the closed-loop write load.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// POSTs of the open-loop load timed until their I-9 exists (spread over
    /// the measured window); every POST's own latency is measured.
    #[arg(long = "i9-samples", default_value_t = 500)]
    pub i9_samples: usize,
    /// Seconds a drain may take before the run fails.
    #[arg(long = "drain-deadline", default_value_t = 600)]
    pub drain_deadline: u64,
    /// Where to write the report (default: BENCHMARKS.md at the workspace root).
    #[arg(long)]
    pub output: Option<PathBuf>,
}

impl PipelineArgs {
    fn check(&self) -> anyhow::Result<()> {
        if !(10..=500_000).contains(&self.jobs) {
            bail!("--jobs must be 10..=500000");
        }
        if !(10..=200_000).contains(&self.callbacks) {
            bail!("--callbacks must be 10..=200000");
        }
        if !(1..=600).contains(&self.duration) {
            bail!("--duration must be 1..=600 seconds");
        }
        if self.warmup > 60 {
            bail!("--warmup must be at most 60 seconds");
        }
        if !(1..=1024).contains(&self.connections) {
            bail!("--connections must be 1..=1024");
        }
        if !(1..=100_000).contains(&self.i9_samples) {
            bail!("--i9-samples must be 1..=100000");
        }
        if !(10..=3600).contains(&self.drain_deadline) {
            bail!("--drain-deadline must be 10..=3600 seconds");
        }
        Ok(())
    }

    fn drain_deadline(&self) -> Duration {
        Duration::from_secs(self.drain_deadline)
    }
}

/// The bare queue of the run, deleted at the end (it is not in ours' topology).
#[derive(Default)]
struct BareQueue {
    name: Option<String>,
}

impl BareQueue {
    async fn delete(&self) {
        let Some(name) = &self.name else { return };
        let deleted = async {
            let conn = amqp_connect().await?;
            let channel = conn.create_channel().await?;
            channel
                .queue_delete(name.as_str().into(), QueueDeleteOptions::default())
                .await?;
            let _ = conn.close(200, "bench done".into()).await;
            anyhow::Ok(())
        };
        match tokio::time::timeout(Duration::from_secs(15), deleted).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("cleanup: could not delete queue {name}: {e:#}"),
            Err(_) => eprintln!("cleanup: timed out deleting queue {name}"),
        }
    }
}

fn amqp_url() -> String {
    std::env::var("AMQP_URL").unwrap_or_else(|_| i9_common::config::DEFAULT_AMQP_URL.to_owned())
}

async fn amqp_connect() -> anyhow::Result<lapin::Connection> {
    tokio::time::timeout(
        Duration::from_secs(10),
        i9_common::amqp::connect(&amqp_url().into()),
    )
    .await
    .context("timed out connecting to RabbitMQ")?
}

pub async fn main(args: PipelineArgs) -> anyhow::Result<()> {
    args.check()?;
    let mut cleanup = Cleanup::new();
    let mut queue = BareQueue::default();
    let result = tokio::select! {
        r = run(&args, &mut cleanup, &mut queue) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow!("interrupted")),
    };
    queue.delete().await;
    cleanup.run().await;
    result
}

/// A background part (relay, worker, bare consumer) stopped by the phase
/// that started it, or by the end of the run.
struct Part {
    name: &'static str,
    stop: Arc<watch::Sender<bool>>,
    handle: JoinHandle<()>,
}

/// A stop signal that also turns true when the run ends.
fn stop_pair(cleanup: &Cleanup) -> (Arc<watch::Sender<bool>>, watch::Receiver<bool>) {
    let (tx, rx) = watch::channel(false);
    let tx = Arc::new(tx);
    let forward = tx.clone();
    let mut global = cleanup.stop_signal();
    tokio::spawn(async move {
        if global.wait_for(|stop| *stop).await.is_ok() {
            let _ = forward.send(true);
        }
    });
    (tx, rx)
}

impl Part {
    /// `task` runs until its receiver turns true; the run's cleanup waits for it.
    fn spawn<F>(
        name: &'static str,
        cleanup: &mut Cleanup,
        task: impl FnOnce(watch::Receiver<bool>) -> F,
    ) -> Self
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let (stop, rx) = stop_pair(cleanup);
        let (done_tx, mut done_rx) = watch::channel(false);
        let fut = task(rx);
        let handle = tokio::spawn(async move {
            fut.await;
            let _ = done_tx.send(true);
        });
        cleanup.task(
            name,
            tokio::spawn(async move {
                let _ = done_rx.wait_for(|done| *done).await;
            }),
        );
        Self { name, stop, handle }
    }

    async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(true);
        tokio::time::timeout(Duration::from_secs(30), self.handle)
            .await
            .map_err(|_| anyhow!("{} did not stop within 30 s", self.name))?
            .map_err(|e| anyhow!("{} failed: {e}", self.name))
    }
}

fn relay_part(ours: &Ours, cleanup: &mut Cleanup) -> Part {
    let (pool, config, topology) = (
        ours.pool.clone(),
        ours.config.clone(),
        ours.topology.clone(),
    );
    Part::spawn("outbox relay", cleanup, move |stop| async move {
        let _ = ours::spawn_relay(&pool, &config, &topology, stop).await;
    })
}

fn worker_part(ours: &Ours, kinds: Vec<JobKind>, cleanup: &mut Cleanup) -> Part {
    let (config, topology) = (ours.config.clone(), ours.topology.clone());
    Part::spawn("worker", cleanup, move |stop| async move {
        match ours::spawn_worker(&config, &topology, kinds, stop).await {
            Ok(handle) => {
                let _ = handle.await;
            }
            Err(e) => eprintln!("worker did not start: {e:#}"),
        }
    })
}

/// One drain: how many, how long, the CPU over it.
pub struct Drain {
    pub count: u64,
    pub took: Duration,
    pub cpu: sys::CpuUsage,
}

impl Drain {
    pub fn rate(&self) -> f64 {
        self.count as f64 / self.took.as_secs_f64().max(1e-9)
    }
}

/// A stage: ours and its bare counterpart.
pub struct Stage {
    pub ours: Drain,
    pub bare: Drain,
}

impl Stage {
    pub fn ratio(&self) -> f64 {
        self.ours.rate() / self.bare.rate().max(1e-9)
    }
}

/// The open-loop load at R/2.
pub struct OpenLoop {
    pub rate: f64,
    pub sent: u64,
    pub created: u64,
    pub errors: std::collections::BTreeMap<String, u64>,
    pub first_error: Option<String>,
    pub not_sent: u64,
    pub post: Histogram<u64>,
    pub i9: Histogram<u64>,
    pub i9_failures: std::collections::BTreeMap<String, u64>,
    pub i9_first_failure: Option<String>,
    pub cpu: sys::CpuUsage,
    pub elapsed: Duration,
    /// The samples whose I-9 appeared: employee, when due, time to I-9.
    pub traced: Vec<(i64, chrono::DateTime<chrono::Utc>, Duration)>,
    /// Where their time went, step by step (microseconds).
    pub steps: Vec<(&'static str, Histogram<u64>)>,
}

pub struct Results {
    pub command: String,
    pub date: chrono::DateTime<chrono::Utc>,
    pub machine: sys::Machine,
    pub postgres_version: String,
    pub args: PipelineArgs,
    pub load_before: [f64; 3],
    pub load_after: [f64; 3],
    pub writes: LoadResult,
    /// The commit probe: (statement, commits per second, p50 ms).
    pub probe: Vec<(&'static str, f64, f64)>,
    /// Outbox rows the write load left; how many more POSTs topped the
    /// backlog up, or how many rows beyond `--jobs` were set aside.
    pub left: u64,
    pub topped_up: u64,
    pub set_aside: u64,
    pub relay: Stage,
    pub worker: Stage,
    pub callbacks: Stage,
    pub open: OpenLoop,
}

impl Results {
    pub fn r(&self) -> f64 {
        self.writes.requests_per_second()
    }
}

async fn count(pool: &PgPool, sql: &str) -> anyhow::Result<i64> {
    sqlx::query_scalar(sql)
        .fetch_one(pool)
        .await
        .with_context(|| format!("polling: {sql}"))
}

/// Poll `sql` (a count) until it reaches `target`; the time from `t0`.
async fn wait_count(
    pool: &PgPool,
    sql: &str,
    target: i64,
    t0: Instant,
    deadline: Duration,
) -> anyhow::Result<Duration> {
    loop {
        let n = count(pool, sql).await?;
        if n >= target {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() > deadline {
            bail!("{n} of {target} after {} s: {sql}", deadline.as_secs());
        }
        // Every 20 ms at first, then every 1/200 of the time so far (at most
        // 1 s): the end is found to within 0.5 %, and a count over tens of
        // thousands of rows is not run 50 times a second beside the drain.
        let every = (t0.elapsed() / 200).clamp(DRAIN_POLL, Duration::from_secs(1));
        tokio::time::sleep(every).await;
    }
}

fn create_i9_target(ours: &Ours, ids: &Arc<ProfileIds>) -> Target {
    let url = format!("{}/v1/employees", ours.base_url);
    let token = ours.tokens.admin.clone();
    let location = ours.location_id;
    let ids = ids.clone();
    Target::new("ours", StatusCode::CREATED, move |c, _| {
        c.post(&url)
            .bearer_auth(&token)
            .header(CONTENT_TYPE, "application/json")
            .body(load::body(location, &ids, true))
    })
}

/// `count` requests of `target`, `connections` at a time (the backlog's top-up).
async fn fixed_count(target: &Target, count: u64, connections: usize) -> anyhow::Result<u64> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .timeout(Duration::from_secs(30))
        .build()?;
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let (client, target, next) = (client.clone(), target.clone(), next.clone());
        tasks.spawn(async move {
            let mut ok = 0u64;
            while next.fetch_add(1, Ordering::Relaxed) < count {
                let response = (target.build)(&client, rand::random()).send().await?;
                let status = response.status();
                let body = response.bytes().await?;
                if status != target.expect {
                    bail!(
                        "topping up the backlog: HTTP {status}: {}",
                        String::from_utf8_lossy(&body)
                            .chars()
                            .take(300)
                            .collect::<String>()
                    );
                }
                ok += 1;
            }
            anyhow::Ok(ok)
        });
    }
    let mut ok = 0;
    while let Some(joined) = tasks.join_next().await {
        ok += joined.context("a top-up task failed")??;
    }
    Ok(ok)
}

/// Connections of the commit probe.
const PROBE_CONNECTIONS: usize = 16;
const PROBE_TIME: Duration = Duration::from_secs(3);

/// One-row inserts, each its own transaction, with and without a `NOTIFY`
/// in it, `PROBE_CONNECTIONS` at a time for `PROBE_TIME` each: commits per
/// second and the p50 in ms. A transaction that notifies holds a lock of the
/// whole server from before its commit until after it (the notification
/// queue's order), so notifying commits are serialized, each waiting for the
/// previous one's WAL flush.
async fn commit_probe(url: &str) -> anyhow::Result<Vec<(&'static str, f64, f64)>> {
    let pool = PgPoolOptions::new()
        .max_connections(u32::try_from(PROBE_CONNECTIONS)?)
        .acquire_timeout(Duration::from_secs(30))
        .connect(url)
        .await
        .context("connecting the commit probe")?;
    sqlx::raw_sql(
        "CREATE TABLE commit_probe (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v TEXT)",
    )
    .execute(&pool)
    .await?;
    let mut out = Vec::new();
    for (name, sql) in [
        (
            "`INSERT` of one row",
            "INSERT INTO commit_probe (v) VALUES ('x')",
        ),
        (
            "the same `INSERT` and `pg_notify` in one statement (as the API's write did until 2026-12)",
            "WITH i AS (INSERT INTO commit_probe (v) VALUES ('x') RETURNING id),
                  n AS (SELECT pg_notify('i9_bench_probe', ''))
             SELECT (SELECT count(*) FROM n) FROM i",
        ),
    ] {
        let deadline = Instant::now() + PROBE_TIME;
        let t0 = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..PROBE_CONNECTIONS {
            let pool = pool.clone();
            tasks.spawn(async move {
                let mut h = histogram()?;
                let mut n = 0u64;
                while Instant::now() < deadline && n < 1_000_000 {
                    let t = Instant::now();
                    sqlx::query(sql).execute(&pool).await?;
                    h.saturating_record(micros(t.elapsed()));
                    n += 1;
                }
                anyhow::Ok(h)
            });
        }
        let mut all = histogram()?;
        while let Some(joined) = tasks.join_next().await {
            all.add(joined.context("a probe task failed")??)
                .context("merging histograms")?;
        }
        let took = t0.elapsed().as_secs_f64();
        out.push((name, all.len() as f64 / took, quantile_ms(&all, 0.5)));
    }
    pool.close().await;
    Ok(out)
}

/// The bare program's database: the least a `create_i9` transaction needs.
const BARE_SCHEMA: &str = r#"
CREATE TABLE employees (
    id                BIGINT PRIMARY KEY,
    first_name        TEXT NOT NULL,
    last_name         TEXT NOT NULL,
    middle_name       TEXT,
    other_name        TEXT,
    date_of_birth     DATE,
    ssn_ciphertext    BYTEA,
    ssn_last4         TEXT,
    email_address     TEXT,
    phone_number      TEXT,
    address_street    TEXT,
    address_apartment TEXT,
    address_city      TEXT,
    address_state     TEXT,
    address_zip       TEXT,
    start_date        DATE,
    period_id         BIGINT
);
CREATE TABLE i9s (
    id                   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    employee_id          BIGINT NOT NULL REFERENCES employees (id),
    employment_period_id BIGINT,
    status               TEXT NOT NULL,
    remote               BOOLEAN NOT NULL,
    onboarding_type      TEXT,
    form_version         TEXT NOT NULL,
    date_created         TIMESTAMPTZ NOT NULL,
    date_due             DATE,
    start_date           DATE,
    first_name           TEXT NOT NULL,
    last_name            TEXT NOT NULL,
    middle_initial       TEXT,
    other_name           TEXT,
    date_of_birth        DATE,
    ssn_ciphertext       BYTEA,
    ssn_last4            TEXT,
    email_address        TEXT,
    phone_number         TEXT,
    address_street       TEXT,
    address_apartment    TEXT,
    address_city         TEXT,
    address_state        TEXT,
    address_zip          TEXT,
    integration_transaction_id TEXT
);
CREATE INDEX i9s_employee_idx ON i9s (employee_id);
CREATE TABLE i9_requests (
    id                         UUID PRIMARY KEY,
    employee_id                BIGINT NOT NULL REFERENCES employees (id),
    remote                     BOOLEAN NOT NULL,
    onboarding_type            TEXT,
    integration_transaction_id TEXT,
    i9_id                      BIGINT REFERENCES i9s (id)
);
CREATE TABLE processed_jobs (
    job_id       UUID PRIMARY KEY,
    kind         TEXT NOT NULL,
    processed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
"#;

/// The backlog's employees (with their current period) and requests, from
/// ours' database.
const BARE_EMPLOYEES_FROM_OURS: &str = r#"SELECT e.id, e.first_name, e.last_name, e.middle_name,
    e.other_name, e.date_of_birth, encode(e.ssn_ciphertext, 'base64') AS ssn_ciphertext, e.ssn_last4,
    e.email_address, COALESCE(e.cell_number, e.home_number, e.work_number) AS phone_number,
    e.address_street, e.address_apartment, e.address_city, e.address_state, e.address_zip,
    p.start_date, p.id AS period_id
  FROM employees e
  LEFT JOIN LATERAL (SELECT id, start_date FROM employment_periods WHERE employee_id = e.id
                     ORDER BY id DESC LIMIT 1) p ON TRUE
  WHERE e.id IN (SELECT r.employee_id FROM i9_requests r
                 JOIN job_outbox o ON o.payload->>'request_id' = r.id::text
                 WHERE o.published_at IS NULL)"#;
const BARE_REQUESTS_FROM_OURS: &str = r#"SELECT r.id, r.employee_id, r.remote, r.onboarding_type,
    r.integration_transaction_id
  FROM i9_requests r JOIN job_outbox o ON o.payload->>'request_id' = r.id::text
  WHERE o.published_at IS NULL"#;

struct Bare {
    url: String,
    pool: PgPool,
    queue: String,
    calendar: Arc<Calendar>,
}

async fn start_bare(
    run_id: &str,
    ours: &Ours,
    cleanup: &mut Cleanup,
    queue: &mut BareQueue,
) -> anyhow::Result<Bare> {
    let url = cleanup
        .create_database(&format!("i9_bench_{run_id}_bare"))
        .await?;
    let pool = PgPoolOptions::new()
        .max_connections(u32::from(PREFETCH))
        .acquire_timeout(Duration::from_secs(10))
        // The server's 100 connection slots are shared by every pool of the run.
        .idle_timeout(Duration::from_secs(2))
        .min_connections(0)
        .connect(&url)
        .await
        .context("connecting the bare consumer's pool")?;
    cleanup.pool(&pool);
    sqlx::raw_sql(BARE_SCHEMA)
        .execute(&pool)
        .await
        .context("creating the bare schema")?;
    // The organization's closed days, read once (a bare program's cache).
    let closed: Vec<chrono::NaiveDate> = sqlx::query_scalar("SELECT day FROM closed_days")
        .fetch_all(&ours.poll_pool)
        .await
        .context("reading the closed days")?;
    let name = format!("{}.bare_create_i9", ours_prefix(ours));
    queue.name = Some(name.clone());
    let conn = amqp_connect().await?;
    let channel = conn.create_channel().await?;
    let mut args = FieldTable::default();
    args.insert(
        "x-queue-type".into(),
        AMQPValue::LongString("quorum".into()),
    );
    channel
        .queue_declare(
            name.as_str().into(),
            QueueDeclareOptions {
                durable: true,
                ..Default::default()
            },
            args,
        )
        .await
        .with_context(|| format!("declaring {name}"))?;
    let _ = conn.close(200, "declared".into()).await;
    Ok(Bare {
        url,
        pool,
        queue: name,
        calendar: Arc::new(Calendar::with_closed_days(closed)),
    })
}

fn ours_prefix(ours: &Ours) -> String {
    // `<prefix>.jobs` is ours' exchange.
    ours.topology
        .jobs_exchange()
        .trim_end_matches(".jobs")
        .to_owned()
}

/// Copy the backlog's employees and requests into the bare database.
async fn copy_backlog(ours: &Ours, bare: &Bare) -> anyhow::Result<u64> {
    for (select, table) in [
        (BARE_EMPLOYEES_FROM_OURS, "employees"),
        (BARE_REQUESTS_FROM_OURS, "i9_requests"),
    ] {
        let rows: serde_json::Value = sqlx::query_scalar(&format!(
            "SELECT coalesce(json_agg(x), '[]') FROM ({select}) x"
        ))
        .fetch_one(&ours.poll_pool)
        .await
        .with_context(|| format!("reading ours' {table}"))?;
        let insert = if table == "employees" {
            // The ciphertext travels as base64 in JSON.
            "INSERT INTO employees SELECT id, first_name, last_name, middle_name, other_name,
                 date_of_birth, decode(ssn_ciphertext, 'base64'), ssn_last4, email_address,
                 phone_number, address_street, address_apartment, address_city, address_state,
                 address_zip, start_date, period_id
             FROM jsonb_to_recordset($1) AS x(id BIGINT, first_name TEXT, last_name TEXT,
                 middle_name TEXT, other_name TEXT, date_of_birth DATE, ssn_ciphertext TEXT,
                 ssn_last4 TEXT, email_address TEXT, phone_number TEXT, address_street TEXT,
                 address_apartment TEXT, address_city TEXT, address_state TEXT, address_zip TEXT,
                 start_date DATE, period_id BIGINT)"
        } else {
            "INSERT INTO i9_requests (id, employee_id, remote, onboarding_type, integration_transaction_id)
             SELECT id, employee_id, remote, onboarding_type, integration_transaction_id
             FROM jsonb_to_recordset($1) AS x(id UUID, employee_id BIGINT, remote BOOLEAN,
                 onboarding_type TEXT, integration_transaction_id TEXT)"
        };
        sqlx::query(insert)
            .bind(rows)
            .execute(&bare.pool)
            .await
            .with_context(|| format!("filling the bare {table}"))?;
    }
    sqlx::raw_sql("ANALYZE")
        .execute(&bare.pool)
        .await
        .context("ANALYZE of the bare database")?;
    count(&bare.pool, "SELECT count(*) FROM i9_requests")
        .await
        .map(|n| u64::try_from(n).unwrap_or(0))
}

/// One message of the backlog, as the relay publishes it.
struct Message {
    job_id: Uuid,
    body: Vec<u8>,
    created_at: i64,
}

async fn backlog_messages(ours: &Ours) -> anyhow::Result<Vec<Message>> {
    let rows = sqlx::query(
        "SELECT job_id, payload, created_at FROM job_outbox WHERE published_at IS NULL ORDER BY id",
    )
    .fetch_all(&ours.poll_pool)
    .await
    .context("reading the backlog")?;
    rows.iter()
        .map(|r| {
            let payload: serde_json::Value = r.try_get("payload")?;
            let created: chrono::DateTime<chrono::Utc> = r.try_get("created_at")?;
            Ok(Message {
                job_id: r.try_get("job_id")?,
                body: serde_json::to_vec(&payload)?,
                created_at: created.timestamp(),
            })
        })
        .collect()
}

/// The bare publisher: the backlog's bodies from memory to a quorum queue of
/// its own, persistent and mandatory, with publisher confirms, `RELAY_BATCH`
/// published and then confirmed at a time.
async fn bare_publish(queue: &str, messages: &[Message]) -> anyhow::Result<Drain> {
    let conn = amqp_connect().await?;
    let channel = conn.create_channel().await?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    let before = sys::CpuSnapshot::take();
    let t0 = Instant::now();
    let mut confirmed = 0u64;
    for batch in messages.chunks(RELAY_BATCH) {
        let mut pending = Vec::with_capacity(batch.len());
        for m in batch {
            let props = BasicProperties::default()
                .with_delivery_mode(2)
                .with_content_type("application/json".into())
                .with_message_id(m.job_id.to_string().into())
                .with_timestamp(u64::try_from(m.created_at).unwrap_or_default());
            let confirm = channel
                .basic_publish(
                    "".into(),
                    queue.into(),
                    BasicPublishOptions {
                        mandatory: true,
                        ..Default::default()
                    },
                    &m.body,
                    props,
                )
                .await
                .context("bare publish")?;
            pending.push(confirm);
        }
        for confirm in pending {
            match tokio::time::timeout(IO_TIMEOUT, confirm).await {
                Ok(Ok(Confirmation::Ack(None))) => confirmed += 1,
                other => bail!("bare publish not confirmed: {other:?}"),
            }
        }
    }
    let took = t0.elapsed();
    let cpu = before.usage_since();
    let _ = conn.close(200, "published".into()).await;
    Ok(Drain {
        count: confirmed,
        took,
        cpu,
    })
}

/// The bare `create_i9`: one transaction that reads the request (locked)
/// with its employee, inserts the I-9, links the request to it and records
/// the job done; a request with its I-9 already is only recorded done.
async fn bare_create_i9(pool: &PgPool, calendar: &Calendar, data: &[u8]) -> anyhow::Result<()> {
    let envelope: serde_json::Value = serde_json::from_slice(data)?;
    let job_id: Uuid = envelope["job_id"].as_str().context("no job_id")?.parse()?;
    let request: Uuid = envelope["request_id"]
        .as_str()
        .context("no request_id")?
        .parse()?;
    let mut tx = pool.begin().await?;
    let row = sqlx::query(
        "SELECT r.i9_id, r.remote, r.onboarding_type, r.integration_transaction_id, e.*
         FROM i9_requests r JOIN employees e ON e.id = r.employee_id
         WHERE r.id = $1 FOR UPDATE OF r",
    )
    .bind(request)
    .fetch_one(&mut *tx)
    .await?;
    if row.try_get::<Option<i64>, _>("i9_id")?.is_none() {
        let start: Option<chrono::NaiveDate> = row.try_get("start_date")?;
        let middle: Option<String> = row.try_get("middle_name")?;
        sqlx::query(
            "WITH i AS (
                 INSERT INTO i9s (employee_id, employment_period_id, status, remote, onboarding_type,
                     form_version, date_created, date_due, start_date, first_name, last_name,
                     middle_initial, other_name, date_of_birth, ssn_ciphertext, ssn_last4,
                     email_address, phone_number, address_street, address_apartment, address_city,
                     address_state, address_zip, integration_transaction_id)
                 VALUES ($2, $3, $4, $5, $6, $7, now(), $8, $9, $10, $11, $12, $13, $14, $15, $16,
                     $17, $18, $19, $20, $21, $22, $23, $24)
                 RETURNING id)
             UPDATE i9_requests SET i9_id = (SELECT id FROM i) WHERE id = $1",
        )
        .bind(request)
        .bind(row.try_get::<i64, _>("id")?)
        .bind(row.try_get::<Option<i64>, _>("period_id")?)
        .bind(I9Status::INITIAL.as_str())
        .bind(row.try_get::<bool, _>("remote")?)
        .bind(row.try_get::<Option<String>, _>("onboarding_type")?)
        .bind(FORM_VERSION)
        .bind(start.map(|s| calendar.section2_due(s)))
        .bind(start)
        .bind(row.try_get::<String, _>("first_name")?)
        .bind(row.try_get::<String, _>("last_name")?)
        .bind(middle.and_then(|m| m.chars().next()).map(String::from))
        .bind(row.try_get::<Option<String>, _>("other_name")?)
        .bind(row.try_get::<Option<chrono::NaiveDate>, _>("date_of_birth")?)
        .bind(row.try_get::<Option<Vec<u8>>, _>("ssn_ciphertext")?)
        .bind(row.try_get::<Option<String>, _>("ssn_last4")?)
        .bind(row.try_get::<Option<String>, _>("email_address")?)
        .bind(row.try_get::<Option<String>, _>("phone_number")?)
        .bind(row.try_get::<Option<String>, _>("address_street")?)
        .bind(row.try_get::<Option<String>, _>("address_apartment")?)
        .bind(row.try_get::<Option<String>, _>("address_city")?)
        .bind(row.try_get::<Option<String>, _>("address_state")?)
        .bind(row.try_get::<Option<String>, _>("address_zip")?)
        .bind(row.try_get::<Option<String>, _>("integration_transaction_id")?)
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query(
        "INSERT INTO processed_jobs (job_id, kind) VALUES ($1, 'create_i9') ON CONFLICT DO NOTHING",
    )
    .bind(job_id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The bare consumer: prefetch `PREFETCH`, as many jobs at once, ack after commit.
async fn bare_consume(bare: &Bare, mut stop: watch::Receiver<bool>) -> anyhow::Result<()> {
    let conn = amqp_connect().await?;
    let channel = conn.create_channel().await?;
    channel
        .basic_qos(PREFETCH, BasicQosOptions::default())
        .await?;
    let consumer = channel
        .basic_consume(
            bare.queue.as_str().into(),
            "bench-bare-consumer".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let (pool, calendar) = (bare.pool.clone(), bare.calendar.clone());
    let work = consumer
        .map(|delivery| {
            let (pool, calendar) = (pool.clone(), calendar.clone());
            async move {
                let d = delivery?;
                bare_create_i9(&pool, &calendar, &d.data).await?;
                tokio::time::timeout(IO_TIMEOUT, d.acker.ack(BasicAckOptions::default()))
                    .await
                    .context("ack timed out")??;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(usize::from(PREFETCH))
        .try_for_each(|()| async { Ok(()) });
    let result = tokio::select! {
        r = work => r,
        _ = stop.wait_for(|s| *s) => Ok(()),
    };
    let _ = channel
        .basic_cancel("bench-bare-consumer".into(), BasicCancelOptions::default())
        .await;
    let _ = conn.close(200, "bare consumer done".into()).await;
    result
}

/// Link `count` of the backlog's employees (with their I-9s) to the partner
/// and record a status event of each I-9 as ours does
/// (`events::record_status_change`: the event and its callback job, in the
/// outbox), one transaction each, `PREFETCH` at a time.
async fn make_callbacks(ours: &Ours, count: usize) -> anyhow::Result<()> {
    let i9s: Vec<i64> = sqlx::query_scalar(
        "WITH linked AS (
             UPDATE employees SET integration_client_id = (SELECT id FROM oauth_clients WHERE client_id = $2),
                 integration_candidate_id = 'bench-cb-' || id
             WHERE id IN (SELECT employee_id FROM i9s ORDER BY id LIMIT $1)
             RETURNING id)
         SELECT i.id FROM i9s i JOIN linked l ON l.id = i.employee_id ORDER BY i.id",
    )
    .bind(i64::try_from(count)?)
    .bind(PARTNER)
    .fetch_all(&ours.poll_pool)
    .await
    .context("linking employees to the partner")?;
    if i9s.is_empty() {
        bail!("no I-9s to post callbacks of");
    }
    let i9s = Arc::new(i9s);
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..PREFETCH {
        let (pool, i9s, next) = (ours.pool.clone(), i9s.clone(), next.clone());
        let base = ours.config.public_base_url.clone();
        tasks.spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    return anyhow::Ok(());
                }
                let i9 = i9s[n % i9s.len()];
                let mut tx = pool.begin().await?;
                i9_common::events::record_status_change(&mut tx, i9, None, &base)
                    .await?
                    .context("the I-9's employee is not the partner's")?;
                tx.commit().await?;
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.context("a callback task failed")??;
    }
    Ok(())
}

/// The bare callbacks: the same events' bodies signed with the partner's
/// secrets as ours signs them, posted with reqwest (keep-alive), `PREFETCH`
/// at a time; 2xx counts.
async fn bare_callbacks(ours: &Ours, count: usize) -> anyhow::Result<Drain> {
    let rows = sqlx::query(
        "SELECT ev.id, ev.payload FROM partner_events ev ORDER BY ev.created_at, ev.id LIMIT $1",
    )
    .bind(i64::try_from(count)?)
    .fetch_all(&ours.poll_pool)
    .await?;
    let (client_id, secret): (i64, Vec<u8>) = sqlx::query_as(
        "SELECT id, signing_secret_ciphertext FROM oauth_clients WHERE client_id = $1",
    )
    .bind(PARTNER)
    .fetch_one(&ours.poll_pool)
    .await
    .context("the partner's signing secret")?;
    let cipher = DataCipher::from_config(&ours.config);
    let secrets = i9_common::signing_secrets::valid(&ours.poll_pool, &cipher, client_id, &secret)
        .await
        .map_err(|e| anyhow!("the partner's signing secrets: {e}"))?;
    let events: Vec<(String, Vec<u8>)> = rows
        .iter()
        .map(|r| {
            let id: Uuid = r.try_get("id")?;
            let payload: serde_json::Value = r.try_get("payload")?;
            Ok((id.to_string(), serde_json::to_vec(&payload)?))
        })
        .collect::<anyhow::Result<_>>()?;
    let events = Arc::new(events);
    let secrets = Arc::new(secrets);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::from(PREFETCH))
        .timeout(IO_TIMEOUT)
        .build()?;
    let url = Arc::new(ours.callback_url.clone());
    let next = Arc::new(AtomicUsize::new(0));
    let before = sys::CpuSnapshot::take();
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..PREFETCH {
        let (http, url, events, secrets, next) = (
            http.clone(),
            url.clone(),
            events.clone(),
            secrets.clone(),
            next.clone(),
        );
        tasks.spawn(async move {
            let mut ok = 0u64;
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let Some((id, body)) = events.get(n) else {
                    return anyhow::Ok(ok);
                };
                let timestamp = chrono::Utc::now().timestamp();
                let signature =
                    i9_common::signing_secrets::signature_header(&secrets, id, timestamp, body)
                        .map_err(|e| anyhow!("signing: {e}"))?;
                let response = http
                    .post(url.as_str())
                    .header("content-type", "application/json")
                    .header("webhook-id", id.as_str())
                    .header("webhook-timestamp", timestamp.to_string())
                    .header("webhook-signature", signature)
                    .body(body.clone())
                    .send()
                    .await?;
                if response.status().is_success() {
                    ok += 1;
                }
                response.bytes().await?;
            }
        });
    }
    let mut ok = 0;
    while let Some(joined) = tasks.join_next().await {
        ok += joined.context("a bare callback task failed")??;
    }
    Ok(Drain {
        count: ok,
        took: t0.elapsed(),
        cpu: before.usage_since(),
    })
}

fn histogram() -> anyhow::Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 120_000_000, 3).context("creating a histogram")
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// What one POST of the open loop gave.
enum Outcome {
    Created {
        post: Duration,
        i9: Option<Result<Duration, String>>,
        /// A sample whose I-9 appeared: the employee, and when its POST was
        /// due by the wall clock.
        traced: Option<(i64, chrono::DateTime<chrono::Utc>)>,
    },
    Failed(String, String),
}

/// One POST sent at `due` (its latency counts from `due`, so a late send is
/// not hidden); a sampled one then polled until its I-9 exists.
async fn open_post(
    client: reqwest::Client,
    target: Arc<load::I9Target>,
    ids: Arc<ProfileIds>,
    pool: PgPool,
    due: Instant,
    sampled: bool,
) -> Outcome {
    let mut request = client
        .post(&target.url)
        .header(CONTENT_TYPE, "application/json")
        .body(load::body(target.location_id, &ids, true));
    if let Some(token) = &target.token {
        request = request.bearer_auth(token);
    }
    let due_wall =
        chrono::Utc::now() - chrono::Duration::from_std(due.elapsed()).unwrap_or_default();
    let sent = async {
        let response = request.send().await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        Ok::<_, reqwest::Error>((status, bytes))
    }
    .await;
    let post = due.elapsed();
    let (status, bytes) = match sent {
        Ok(s) => s,
        Err(e) => return Outcome::Failed("transport".into(), e.to_string()),
    };
    if status != StatusCode::CREATED {
        let text: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
        return Outcome::Failed(
            format!("HTTP {}", status.as_u16()),
            format!("HTTP {status}: {text}"),
        );
    }
    if !sampled {
        return Outcome::Created {
            post,
            i9: None,
            traced: None,
        };
    }
    let Some(id) = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v["id"].as_i64())
    else {
        return Outcome::Created {
            post,
            i9: Some(Err("response without id".into())),
            traced: None,
        };
    };
    loop {
        let exists: Result<bool, _> =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM i9s WHERE employee_id = $1)")
                .bind(id)
                .fetch_one(&pool)
                .await;
        match exists {
            Ok(true) => {
                return Outcome::Created {
                    post,
                    i9: Some(Ok(due.elapsed())),
                    traced: Some((id, due_wall)),
                }
            }
            Ok(false) if due.elapsed() > I9_DEADLINE => {
                return Outcome::Created {
                    post,
                    i9: Some(Err("no I-9 within 30 s".into())),
                    traced: None,
                }
            }
            Ok(false) => tokio::time::sleep(I9_POLL).await,
            Err(e) => {
                return Outcome::Created {
                    post,
                    i9: Some(Err(format!("polling failed: {e}"))),
                    traced: None,
                }
            }
        }
    }
}

/// POSTs with `createI9` at `rate` per second (open loop: each sent when due,
/// whatever the answers before it), `warmup` then `duration`; the measured
/// window's POSTs are counted, `samples` of them spread evenly timed to
/// their I-9.
async fn open_loop(
    ours: &Ours,
    ids: &Arc<ProfileIds>,
    rate: f64,
    warmup: Duration,
    duration: Duration,
    samples: usize,
) -> anyhow::Result<OpenLoop> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(MAX_IN_FLIGHT)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .build()?;
    let target = Arc::new(ours.i9_target());
    let interval = Duration::from_secs_f64(1.0 / rate.max(1.0));
    let warm_n = (warmup.as_secs_f64() * rate).floor() as u64;
    let measured_n = ((duration.as_secs_f64() * rate).floor() as u64).max(1);
    let every = (measured_n / samples.max(1) as u64).max(1);
    let in_flight = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    let mut result = OpenLoop {
        rate,
        sent: 0,
        created: 0,
        errors: Default::default(),
        first_error: None,
        not_sent: 0,
        post: histogram()?,
        i9: histogram()?,
        i9_failures: Default::default(),
        i9_first_failure: None,
        cpu: sys::CpuUsage::default(),
        elapsed: Duration::ZERO,
        traced: Vec::new(),
        steps: Vec::new(),
    };
    let mut before = None;
    let mut window_start = None;
    let start = Instant::now() + Duration::from_millis(10);
    let total = warm_n + measured_n;
    let mut i = 0u64;
    while i < total {
        let due = start + interval.mul_f64(i as f64);
        if due > Instant::now() {
            tokio::time::sleep_until(due.into()).await;
        }
        // Every request due by now goes out (the timer's granularity is 1 ms).
        let now = Instant::now();
        while i < total && start + interval.mul_f64(i as f64) <= now {
            let due = start + interval.mul_f64(i as f64);
            let measured = i >= warm_n;
            if i == warm_n {
                before = Some(sys::CpuSnapshot::take());
                window_start = Some(due);
            }
            let sampled = measured && (i - warm_n).is_multiple_of(every);
            i += 1;
            if in_flight.load(Ordering::Relaxed) >= MAX_IN_FLIGHT {
                if measured {
                    result.not_sent += 1;
                }
                continue;
            }
            if measured {
                result.sent += 1;
            }
            in_flight.fetch_add(1, Ordering::Relaxed);
            let (client, target, ids, pool, in_flight) = (
                client.clone(),
                target.clone(),
                ids.clone(),
                ours.poll_pool.clone(),
                in_flight.clone(),
            );
            tasks.spawn(async move {
                let outcome = open_post(client, target, ids, pool, due, sampled).await;
                in_flight.fetch_sub(1, Ordering::Relaxed);
                (measured, outcome)
            });
        }
        // Tally what finished, so the set stays small.
        while let Some(joined) = tasks.try_join_next() {
            result.tally(joined.context("an open-loop task failed")?);
        }
    }
    result.cpu = before.map(|b| b.usage_since()).unwrap_or_default();
    result.elapsed = window_start.map(|w| w.elapsed()).unwrap_or_default();
    while let Some(joined) = tasks.join_next().await {
        result.tally(joined.context("an open-loop task failed")?);
    }
    result.steps = steps(&ours.poll_pool, &result.traced).await?;
    Ok(result)
}

/// The steps of the sampled POSTs' way to their I-9, from the timestamps
/// the rows keep (one clock: the machine's): the POST due → its statement
/// began (`job_outbox.created_at`, the API's transaction time) → the relay
/// claimed the row (`published_at`, the relay's transaction time, before
/// its publish) → the worker inserted the I-9 (`i9s.date_created`) → the
/// bench saw it.
async fn steps(
    pool: &PgPool,
    traced: &[(i64, chrono::DateTime<chrono::Utc>, Duration)],
) -> anyhow::Result<Vec<(&'static str, Histogram<u64>)>> {
    let ids: Vec<i64> = traced.iter().map(|t| t.0).collect();
    let rows = sqlx::query(
        "SELECT r.employee_id, o.created_at, o.published_at, i.date_created
         FROM i9_requests r
         JOIN job_outbox o ON o.kind = 'create_i9' AND o.payload->>'request_id' = r.id::text
         JOIN i9s i ON i.id = r.i9_id
         WHERE r.employee_id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await
    .context("reading the sampled I-9s' timestamps")?;
    let mut by_id = std::collections::HashMap::new();
    for r in &rows {
        let id: i64 = r.try_get("employee_id")?;
        let created: chrono::DateTime<chrono::Utc> = r.try_get("created_at")?;
        let published: Option<chrono::DateTime<chrono::Utc>> = r.try_get("published_at")?;
        let inserted: chrono::DateTime<chrono::Utc> = r.try_get("date_created")?;
        if let Some(published) = published {
            by_id.insert(id, (created, published, inserted));
        }
    }
    let mut steps = vec![
        (
            "the POST due → its statement began (`job_outbox.created_at`)",
            histogram()?,
        ),
        (
            "→ the relay claimed the row (`job_outbox.published_at`)",
            histogram()?,
        ),
        (
            "→ the worker inserted the I-9 (`i9s.date_created`)",
            histogram()?,
        ),
        ("→ the bench saw the I-9 (commit, ack, poll)", histogram()?),
    ];
    let us = |d: chrono::TimeDelta| u64::try_from(d.num_microseconds().unwrap_or(0)).unwrap_or(0);
    for (id, due, took) in traced {
        let Some((created, published, inserted)) = by_id.get(id) else {
            continue;
        };
        let seen = *due + chrono::Duration::from_std(*took).unwrap_or_default();
        for (step, d) in [
            (0, *created - *due),
            (1, *published - *created),
            (2, *inserted - *published),
            (3, seen - *inserted),
        ] {
            steps[step].1.saturating_record(us(d));
        }
    }
    Ok(steps)
}

impl OpenLoop {
    fn tally(&mut self, (measured, outcome): (bool, Outcome)) {
        if !measured {
            return;
        }
        match outcome {
            Outcome::Created { post, i9, traced } => {
                self.created += 1;
                if let (Some((id, due)), Some(Ok(took))) = (traced, &i9) {
                    self.traced.push((id, due, *took));
                }
                self.post.saturating_record(micros(post));
                match i9 {
                    None => {}
                    Some(Ok(took)) => self.i9.saturating_record(micros(took)),
                    Some(Err(e)) => {
                        *self.i9_failures.entry(e.clone()).or_default() += 1;
                        self.i9_first_failure.get_or_insert(e);
                    }
                }
            }
            Outcome::Failed(key, detail) => {
                *self.errors.entry(key).or_default() += 1;
                self.first_error.get_or_insert(detail);
            }
        }
    }
}

const BACKLOG_LEFT: &str = "SELECT count(*) FROM job_outbox WHERE published_at IS NULL";
/// 1 once every outbox row is published.
const OUTBOX_EMPTY: &str =
    "SELECT (NOT EXISTS (SELECT 1 FROM job_outbox WHERE published_at IS NULL))::int::int8";

async fn run(
    args: &PipelineArgs,
    cleanup: &mut Cleanup,
    queue: &mut BareQueue,
) -> anyhow::Result<()> {
    let load_before = sys::load_average();
    let machine = sys::machine_facts().await;
    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let jobs = i64::try_from(args.jobs)?;
    let deadline = args.drain_deadline();

    eprintln!("starting our API alone (no relay, no worker)...");
    let parts = Parts {
        relay: false,
        worker: false,
    };
    let ours = ours::start_with(&run_id, 8, parts, cleanup).await?;
    let postgres_version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(&ours.poll_pool)
        .await
        .context("reading the Postgres version")?;
    let bare = start_bare(&run_id, &ours, cleanup, queue).await?;
    let ids = ProfileIds::new(&run_id);

    // 1. The API's highest write rate, the relay and the worker off.
    eprintln!(
        "writes: POST /v1/employees with createI9, {} connections, {} s + {} s warm-up...",
        args.connections, args.duration, args.warmup
    );
    let settings = load::Settings {
        connections: args.connections,
        warmup: Duration::from_secs(args.warmup),
        duration: Duration::from_secs(args.duration),
    };
    let target = create_i9_target(&ours, &ids);
    let writes = load::throughput(&target, &settings).await?;
    let r = writes.requests_per_second();
    eprintln!("writes: R = {r:.1} per second; commits with and without NOTIFY...");
    // The server's connection slots are shared: a probe that cannot get
    // its connections is left out of the report, not the run's end.
    let probe = match commit_probe(&bare.url).await {
        Ok(p) => p,
        Err(e) => {
            eprintln!("commit probe not measured: {e:#}");
            Vec::new()
        }
    };

    // 2. The backlog: exactly `--jobs` rows.
    let left = count(&ours.poll_pool, BACKLOG_LEFT).await?;
    let (mut topped_up, mut set_aside) = (0u64, 0u64);
    if left < jobs {
        let more = u64::try_from(jobs - left)?;
        eprintln!("backlog: {left} rows; {more} more POSTs...");
        topped_up = fixed_count(&target, more, args.connections).await?;
    } else if left > jobs {
        // Beyond the backlog: marked published, never sent (their requests
        // stay without an I-9).
        let done = sqlx::query(
            "UPDATE job_outbox SET published_at = now() WHERE published_at IS NULL
             AND id > (SELECT id FROM job_outbox WHERE published_at IS NULL ORDER BY id
                       OFFSET $1 - 1 LIMIT 1)",
        )
        .bind(jobs)
        .execute(&ours.poll_pool)
        .await
        .context("setting aside the rows beyond --jobs")?;
        set_aside = done.rows_affected();
    }
    let backlog = count(&ours.poll_pool, BACKLOG_LEFT).await?;
    if backlog != jobs {
        bail!("the backlog holds {backlog} rows, not {jobs}");
    }
    sqlx::raw_sql("VACUUM ANALYZE")
        .execute(&ours.poll_pool)
        .await
        .context("VACUUM ANALYZE before the drains")?;
    let messages = backlog_messages(&ours).await?;
    let copied = copy_backlog(&ours, &bare).await?;
    if copied != u64::try_from(jobs)? {
        bail!("the bare copy holds {copied} requests, not {jobs}");
    }
    let i9s_before = count(&ours.poll_pool, "SELECT count(*) FROM i9s").await?;

    // 3. The relay drains the backlog; then the bare publisher.
    eprintln!("relay: ours draining {jobs} rows...");
    let snapshot = sys::CpuSnapshot::take();
    let t0 = Instant::now();
    let relay = relay_part(&ours, cleanup);
    let took = wait_count(&ours.poll_pool, OUTBOX_EMPTY, 1, t0, deadline).await?;
    let ours_relay = Drain {
        count: u64::try_from(jobs)?,
        took,
        cpu: snapshot.usage_since(),
    };
    relay.stop().await?;
    eprintln!("relay: ours {:.1} jobs/s; bare...", ours_relay.rate());
    let bare_relay = bare_publish(&bare.queue, &messages).await?;
    drop(messages);
    eprintln!("relay: bare {:.1} jobs/s", bare_relay.rate());

    // 4. One worker creates the I-9s; then the bare consumer.
    eprintln!("worker: ours creating {jobs} I-9s...");
    let snapshot = sys::CpuSnapshot::take();
    let t0 = Instant::now();
    let worker = worker_part(&ours, vec![JobKind::CreateI9], cleanup);
    let took = wait_count(
        &ours.poll_pool,
        "SELECT count(*) FROM i9s",
        i9s_before + jobs,
        t0,
        deadline,
    )
    .await?;
    let ours_worker = Drain {
        count: u64::try_from(jobs)?,
        took,
        cpu: snapshot.usage_since(),
    };
    worker.stop().await?;
    eprintln!("worker: ours {:.1} jobs/s; bare...", ours_worker.rate());
    let snapshot = sys::CpuSnapshot::take();
    let t0 = Instant::now();
    let consumer = {
        let bare = Bare {
            url: bare.url.clone(),
            pool: bare.pool.clone(),
            queue: bare.queue.clone(),
            calendar: bare.calendar.clone(),
        };
        Part::spawn("bare consumer", cleanup, move |stop| async move {
            if let Err(e) = bare_consume(&bare, stop).await {
                eprintln!("bare consumer stopped: {e:#}");
            }
        })
    };
    let took = wait_count(&bare.pool, "SELECT count(*) FROM i9s", jobs, t0, deadline).await?;
    let bare_worker = Drain {
        count: u64::try_from(jobs)?,
        took,
        cpu: snapshot.usage_since(),
    };
    consumer.stop().await?;
    eprintln!("worker: bare {:.1} jobs/s", bare_worker.rate());

    // 5. Callbacks: events recorded as ours records them, relayed (not
    // timed), then one worker posts them; then the bare poster.
    let callbacks = i64::try_from(args.callbacks)?;
    eprintln!("callbacks: recording {callbacks} partner events...");
    make_callbacks(&ours, args.callbacks).await?;
    let t0 = Instant::now();
    let relay = relay_part(&ours, cleanup);
    wait_count(&ours.poll_pool, OUTBOX_EMPTY, 1, t0, deadline).await?;
    relay.stop().await?;
    eprintln!("callbacks: ours posting {callbacks}...");
    let snapshot = sys::CpuSnapshot::take();
    let t0 = Instant::now();
    let worker = worker_part(&ours, vec![JobKind::PostStatusCallback], cleanup);
    let took = wait_count(
        &ours.poll_pool,
        "SELECT count(*) FROM partner_events WHERE delivered_at IS NOT NULL",
        callbacks,
        t0,
        deadline,
    )
    .await?;
    let ours_callbacks = Drain {
        count: u64::try_from(callbacks)?,
        took,
        cpu: snapshot.usage_since(),
    };
    worker.stop().await?;
    eprintln!(
        "callbacks: ours {:.1} per second; bare...",
        ours_callbacks.rate()
    );
    let bare_callbacks = bare_callbacks(&ours, args.callbacks).await?;
    eprintln!("callbacks: bare {:.1} per second", bare_callbacks.rate());

    // 6. The time to an I-9 at R/2, the relay and a worker (every kind) running.
    sqlx::raw_sql("VACUUM ANALYZE")
        .execute(&ours.poll_pool)
        .await
        .context("VACUUM ANALYZE before the open loop")?;
    let relay = relay_part(&ours, cleanup);
    let worker = worker_part(&ours, JobKind::ALL.to_vec(), cleanup);
    let rate = r / 2.0;
    eprintln!(
        "time to I-9: open loop at {rate:.1} POSTs per second, {} s + {} s warm-up...",
        args.duration, args.warmup
    );
    let open = open_loop(
        &ours,
        &ids,
        rate,
        Duration::from_secs(args.warmup),
        Duration::from_secs(args.duration),
        args.i9_samples,
    )
    .await?;
    worker.stop().await?;
    relay.stop().await?;

    let results = Results {
        command: crate::command_line(),
        date: chrono::Utc::now(),
        machine,
        postgres_version,
        args: args.clone(),
        load_before,
        load_after: sys::load_average(),
        writes,
        probe,
        left: u64::try_from(left)?,
        topped_up,
        set_aside,
        relay: Stage {
            ours: ours_relay,
            bare: bare_relay,
        },
        worker: Stage {
            ours: ours_worker,
            bare: bare_worker,
        },
        callbacks: Stage {
            ours: ours_callbacks,
            bare: bare_callbacks,
        },
        open,
    };
    println!("{}", tables(&results));
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| workspace_root().join("BENCHMARKS.md"));
    report::write_section(&path, "pipeline", &section(&results))?;
    eprintln!("wrote the pipeline section of {}", path.display());
    Ok(())
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "missed"
    }
}

fn cpu_row(s: &mut String, phase: &str, program: &str, c: &sys::CpuUsage) {
    let _ = writeln!(
        s,
        "| {phase} | {program} | {:.0}% | {:.0}% | {:.0}% | {:.0}% |",
        c.own, c.postgres, c.rabbitmq, c.machine
    );
}

fn map_cell(m: &std::collections::BTreeMap<String, u64>) -> String {
    let n: u64 = m.values().sum();
    if n == 0 {
        return "0".to_owned();
    }
    let parts: Vec<String> = m.iter().map(|(k, v)| format!("{v} × {k}")).collect();
    format!("{n} ({})", parts.join(", "))
}

/// The tables (Markdown), as printed and as in the section.
pub fn tables(r: &Results) -> String {
    let mut s = String::new();
    let a = &r.args;
    let rate = r.r();
    let w = &r.writes;
    let _ = writeln!(
        s,
        "#### The API's highest write rate R ({} connections, closed loop, {} s measured after {} s warm-up; the relay and the worker not running)\n",
        a.connections, a.duration, a.warmup
    );
    let _ = writeln!(
        s,
        "| request | R (201s per second) | p50 / p99 ms | 201s | errors |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---|");
    let errors = map_cell(&w.errors);
    let _ = writeln!(
        s,
        "| `POST /v1/employees` (`admin`, `createI9: \"yes\"`) | **{:.1}** | {:.2} / {:.2} | {} | {} |",
        rate,
        quantile_ms(&w.latency, 0.5),
        quantile_ms(&w.latency, 0.99),
        w.ok,
        errors
    );
    if !r.probe.is_empty() {
        let _ = writeln!(
            s,
            "\nWhy the write does not notify: Postgres commits of one-row inserts in a table of their own, {PROBE_CONNECTIONS} connections, {} s each, without and with a `NOTIFY` (a notifying transaction holds a lock of the whole server from before its commit until after it, so notifying commits are serialized, each waiting for the WAL flush of the one before):\n",
            PROBE_TIME.as_secs()
        );
        let _ = writeln!(
            s,
            "| statement (autocommit) | commits per second | p50 ms |"
        );
        let _ = writeln!(s, "|---|---:|---:|");
        for (name, rate, p50) in &r.probe {
            let _ = writeln!(s, "| {name} | {rate:.1} | {p50:.2} |");
        }
    }
    let _ = writeln!(
        s,
        "\n#### The stages, each alone on the machine ({} `create_i9` jobs, {} callbacks)\n",
        a.jobs, a.callbacks
    );
    let _ = writeln!(
        s,
        "| stage | ours | bare counterpart | ours per second | bare per second | **ours / bare** | ours / R | ours s / bare s |"
    );
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|");
    for (stage, ours, bare, st) in [
        (
            "relay",
            "the outbox relay (`i9_common::relay::run`) drains the backlog",
            "lapin publishes the same bodies from memory",
            &r.relay,
        ),
        (
            "worker",
            "one worker (`create_i9` only, prefetch 16, pool 16) creates the I-9s",
            "lapin consumer (prefetch 16) runs the transaction in substance",
            &r.worker,
        ),
        (
            "callbacks",
            "one worker (`post_status_callback` only, prefetch 16) posts signed callbacks",
            "reqwest posts the same signed bodies, 16 at a time",
            &r.callbacks,
        ),
    ] {
        let _ = writeln!(
            s,
            "| {stage} | {ours} | {bare} | {:.1} | {:.1} | **{:.2}** | {:.2} | {:.2} / {:.2} |",
            st.ours.rate(),
            st.bare.rate(),
            st.ratio(),
            st.ours.rate() / rate.max(1e-9),
            st.ours.took.as_secs_f64(),
            st.bare.took.as_secs_f64(),
        );
    }
    let o = &r.open;
    let post50 = quantile_ms(&o.post, 0.5);
    let i950 = quantile_ms(&o.i9, 0.5);
    let _ = writeln!(
        s,
        "\n#### Time from POST to I-9 at R/2 = {:.1} POSTs per second (open loop, {} s measured after {} s warm-up; the relay and one worker serving every kind running)\n",
        o.rate, a.duration, a.warmup
    );
    let _ = writeln!(s, "| measure | p50 ms | p99 ms | counted | failures |");
    let _ = writeln!(s, "|---|---:|---:|---:|---|");
    let _ = writeln!(
        s,
        "| `POST /v1/employees` with `createI9` (from when it was due) | {:.2} | {:.2} | {} of {} sent ({:.1} per second) | {}{} |",
        post50,
        quantile_ms(&o.post, 0.99),
        o.created,
        o.sent,
        o.created as f64 / o.elapsed.as_secs_f64().max(1e-9),
        map_cell(&o.errors),
        if o.not_sent > 0 {
            format!("; {} due but not sent ({MAX_IN_FLIGHT} in flight)", o.not_sent)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "| from just before the POST to its I-9 row (sampled) | {:.2} | {:.2} | {} | {} |",
        i950,
        quantile_ms(&o.i9, 0.99),
        o.i9.len(),
        map_cell(&o.i9_failures)
    );
    if o.steps.iter().any(|(_, h)| !h.is_empty()) {
        let _ = writeln!(
            s,
            "\nWhere the sampled POSTs' time to I-9 went, step by step (from the rows' timestamps; medians of steps do not add up to the median of the whole):\n"
        );
        let _ = writeln!(s, "| step | p50 ms | p99 ms | samples |");
        let _ = writeln!(s, "|---|---:|---:|---:|");
        for (step, h) in &o.steps {
            let _ = writeln!(
                s,
                "| {step} | {:.2} | {:.2} | {} |",
                quantile_ms(h, 0.5),
                quantile_ms(h, 0.99),
                h.len()
            );
        }
    }
    let ratio = i950 / post50.max(1e-9);
    let _ = writeln!(s, "\n#### Goals (issue 14)\n");
    let _ = writeln!(s, "| goal | figures | result |");
    let _ = writeln!(s, "|---|---|---|");
    let _ = writeln!(
        s,
        "| relay ≥ 2R | relay {:.1} jobs/s; 2R = {:.1} ({:.2} R) | **{}** |",
        r.relay.ours.rate(),
        2.0 * rate,
        r.relay.ours.rate() / rate.max(1e-9),
        met(r.relay.ours.rate() >= 2.0 * rate)
    );
    let _ = writeln!(
        s,
        "| worker ≥ 2R | worker {:.1} jobs/s; 2R = {:.1} ({:.2} R) | **{}** |",
        r.worker.ours.rate(),
        2.0 * rate,
        r.worker.ours.rate() / rate.max(1e-9),
        met(r.worker.ours.rate() >= 2.0 * rate)
    );
    let _ = writeln!(
        s,
        "| time to I-9 p50 ≤ 3 × POST p50 (at R/2) | {:.2} ms / {:.2} ms = {:.2} | **{}** |",
        i950,
        post50,
        ratio,
        met(!o.i9.is_empty() && ratio <= 3.0)
    );
    let _ = writeln!(
        s,
        "\nCPU during each phase, in % of one core (the machine has {}, so {}% is all of it); the bench process holds ours' API, relay and worker, the bare programs, and the load generator:\n",
        r.machine.nproc,
        r.machine.nproc * 100
    );
    let _ = writeln!(
        s,
        "| phase | program | bench process | Postgres | RabbitMQ | whole machine |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|");
    cpu_row(&mut s, "writes (R)", "ours' API", &w.cpu);
    cpu_row(&mut s, "relay", "ours", &r.relay.ours.cpu);
    cpu_row(&mut s, "relay", "bare", &r.relay.bare.cpu);
    cpu_row(&mut s, "worker", "ours", &r.worker.ours.cpu);
    cpu_row(&mut s, "worker", "bare", &r.worker.bare.cpu);
    cpu_row(&mut s, "callbacks", "ours", &r.callbacks.ours.cpu);
    cpu_row(&mut s, "callbacks", "bare", &r.callbacks.bare.cpu);
    cpu_row(
        &mut s,
        "open loop at R/2",
        "ours (API, relay, worker)",
        &o.cpu,
    );
    s
}

const SIDES: &str = "\
- **Ours, the write**: `POST /v1/employees` as `admin` with `createI9: \"yes\"`: one SQL \
statement inserts the employee, its period of employment, the audit entry, the I-9 request \
with its Section 1 link token and the `create_i9` job in `job_outbox` \
(`common/src/models/employee.rs`, `create`); once it has committed, the request wakes the \
relay of its own process (`common/src/outbox.rs`, `waking_relays`: no `NOTIFY` in the write).
- **Ours, the relay** (`common/src/relay.rs`, batch 200): in one transaction per round, \
`SELECT … FROM job_outbox WHERE published_at IS NULL ORDER BY id LIMIT 200 FOR UPDATE SKIP \
LOCKED`; each row's payload serialized and published (persistent, `mandatory`, message id, \
timestamp, the trace headers) to the jobs exchange, one publish awaited after the other; then \
the 200 confirms awaited; one `UPDATE … SET published_at = now() WHERE id = ANY($1)`; commit. A \
full batch starts the next round at once.
- **Bare, the relay**: one lapin channel in confirm mode publishes the same bodies (read from \
`job_outbox` into memory before the clock starts) with the same properties less the trace \
headers (persistent, `mandatory`, message id, timestamp) through the default exchange to a \
quorum queue of its own, 200 published and then their 200 confirms awaited, as the relay's \
window. No database: the least moving committed jobs to the broker needs, less the outbox's \
reading and marking. Its messages are the bare consumer's input.
- **Ours, the worker** (`workers/src/jobs/create_i9.rs`), per job: decode the envelope, open a \
span; in one transaction: whether the job is done (`processed_jobs`), the request locked, the \
employee with its current period, the calendar's closed days, the I-9 inserted (its indexes, \
constraints and triggers), whether the employee is a partner's (status event), the request \
linked to the I-9, the job recorded done; commit; metrics; ack.
- **Bare, the worker**: a lapin consumer (prefetch 16, 16 jobs at once, a pool of 16) on its \
own queue and database (the backlog's employees, with their current period, and requests \
copied from ours'), per message: parse the JSON; in one transaction: the request locked and \
read with its employee (one statement); if it has no I-9, the I-9 inserted (the same 24 \
columns, the Section 2 due date from the closed days read once at start) and the request \
linked to it (one statement); the job recorded done; commit; ack. Its tables have their keys \
and the one index on `i9s.employee_id`, no triggers.
- **Ours, the callbacks** (`workers/src/jobs/post_status_callback.rs`), per job: the event \
with its partner's URL and secret (one query), the partner's valid signing secrets, the \
signature, the claim in `processed_jobs`, the post through `callback_client::connect` (the URL \
checked, a new client connected to the checked address: one TCP connection per callback), the \
attempt and the delivery recorded in a transaction; ack. The events are made beforehand as \
ours makes them (`events::record_status_change` of I-9s whose employees were linked to \
`greenhouse-ats`), and relayed to the queue before the clock starts.
- **Bare, the callbacks**: the same events' bodies, each signed with the partner's secrets as \
ours signs them (`webhook-id`, `webhook-timestamp`, `webhook-signature`), posted with one \
keep-alive reqwest client, 16 at a time, to the same receiver (204). No database, no broker.";

/// The section `pipeline`, markers included.
pub fn section(r: &Results) -> String {
    let m = &r.machine;
    let a = &r.args;
    let mut s = String::new();
    let _ = writeln!(s, "<!-- bench:pipeline -->");
    let _ = writeln!(
        s,
        "## Pipeline: outbox relay, worker and callbacks against the API's write rate\n"
    );
    let _ = writeln!(s, "- Command: `{}`", r.command);
    let _ = writeln!(s, "- Date: {} UTC", r.date.format("%Y-%m-%d %H:%M:%S"));
    let _ = writeln!(
        s,
        "- Machine: {}",
        crate::sys::machine_line(m, &r.postgres_version, r.load_before, r.load_after)
    );
    let _ = writeln!(
        s,
        "- Setup: {}; ours' API (pool of 32), its outbox relay (on the API's pool, as `i9-api` \
         runs it), its worker (a pool of 16, prefetch 16), the bare programs and the load \
         generator run in the one `i9-bench` process (a multi-threaded Tokio runtime); each part \
         is started only for its phase, so each stage has the machine to itself. Ours has a \
         fresh database and RabbitMQ topology of its own (quorum queues); the bare consumer a \
         database and a quorum queue of its own.",
        if cfg!(debug_assertions) {
            "a debug build (not representative: use the release build of scripts/bench.sh)"
        } else {
            "release build"
        }
    );
    let _ = writeln!(
        s,
        "- Backlog: the write load's POSTs left {} `create_i9` rows in the outbox{}; the backlog \
         is {} rows, each a real I-9 request of a new employee (no SSN: names, location, start \
         date, `profileId`). `VACUUM ANALYZE` before the drains.\n",
        r.left,
        if r.topped_up > 0 {
            format!(
                "; {} more POSTs of the same kind, {} at a time, topped it up",
                r.topped_up, a.connections
            )
        } else if r.set_aside > 0 {
            format!(
                "; the {} rows beyond `--jobs` were marked published unsent (their requests \
                 keep no I-9)",
                r.set_aside
            )
        } else {
            String::new()
        },
        a.jobs
    );
    let _ = writeln!(s, "### Results\n");
    s.push_str(&tables(r));
    if let Some(e) = &r.writes.first_error {
        let _ = writeln!(
            s,
            "\nFirst error of the write load: `{}`",
            e.replace('`', "'")
        );
    }
    if let Some(e) = &r.open.first_error {
        let _ = writeln!(
            s,
            "\nFirst error of the open loop: `{}`",
            e.replace('`', "'")
        );
    }
    if let Some(e) = &r.open.i9_first_failure {
        let _ = writeln!(
            s,
            "\nFirst failure of the time to I-9: `{}`",
            e.replace('`', "'")
        );
    }
    let _ = writeln!(s, "\n### What each side does\n");
    s.push_str(SIDES);
    let _ = writeln!(s);
    let _ = writeln!(s, "\n### Method notes\n");
    let _ = writeln!(
        s,
        "- R: 201s / measured wall time of the closed-loop load (`load::throughput`, as \
         `writes` measures POST), with the relay and the worker off: the API's own ceiling on \
         this machine, the strictest reference for the goals (with the relay and the worker \
         sharing the 2 cores, the API's rate is lower)."
    );
    let _ = writeln!(
        s,
        "- The drains: ours' clock starts just before the relay (or the worker) is started \
         (its connection to RabbitMQ and its declarations included) and stops when a poll \
         sees the outbox empty (every I-9 created; every event delivered), polled every {} ms \
         and later every 1/200 of the time so far (at most 1 s; the end is found to within \
         0.5 %); jobs/s = jobs / that time. The bare clocks: the publisher's from its first publish to its last \
         confirm; the consumer's as ours' (polled count of its I-9s); the callback poster's \
         from its first post to its last answer.",
        DRAIN_POLL.as_millis()
    );
    let _ = writeln!(
        s,
        "- The open loop: POSTs due at a constant rate of R/2 whatever the answers before \
         them (a POST due while {MAX_IN_FLIGHT} are in flight is not sent, and counted), {} s \
         warm-up then {} s measured; each POST's latency counts from when it was due. {} of \
         the measured POSTs, one every so many, are each polled every {} ms (`SELECT EXISTS \
         (SELECT 1 FROM i9s WHERE employee_id = $1)`, a pool of the bench's own) until their \
         I-9 exists, for at most {} s; that time also counts from when the POST was due.",
        a.warmup,
        a.duration,
        a.i9_samples,
        I9_POLL.as_millis(),
        I9_DEADLINE.as_secs()
    );
    let _ = writeln!(
        s,
        "- CPU figures come from `/proc` over each phase: the `i9-bench` process, the \
         `postgres` processes, RabbitMQ's `beam.smp`, and the whole machine."
    );
    let _ = writeln!(s, "<!-- /bench:pipeline -->");
    s
}
