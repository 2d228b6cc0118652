//! `i9-bench`: measures, in one run on one machine, our service against a
//! bare axum + sqlx program, and writes its section of `BENCHMARKS.md` at the
//! workspace root (each mode rewrites only its own section).
//!
//! - `i9-bench writes` (the default): `POST /v1/employees`, `PATCH
//!   /v1/employees/{id}` and the partner operation against the bare
//!   program's two inserts and one `UPDATE`, and the time to an I-9.
//! - `i9-bench reads`: `GET /v1/employees/{id}` (a user limited to some
//!   groups; and one who sees full SSNs, every read audited) against a `GET`
//!   by primary key of an as wide row, and `GET /v1/employees?lastName=` and
//!   `GET /v1/i9s?lastName=` against the same count and page SQL run bare.
//!
//! Everything runs in this process and talks over loopback only: our API
//! (with the outbox relay and a worker), the bare program, and the load
//! generator. Every loop is bounded in count and in time. The databases and
//! the RabbitMQ queues it creates are removed at the end, also after an
//! error or Ctrl-C.
//!
//! `i9-bench faults` is the fault suite instead (see [`faults`]), which
//! writes `RELIABILITY.md`.

mod bare;
mod faults;
mod growth;
mod load;
mod memory;
mod modes;
mod ours;
mod pipeline;
mod report;
mod seed;
mod sys;
mod tokens;

use std::{path::PathBuf, time::Duration};

use anyhow::{bail, Context as _};
use clap::{Parser, Subcommand};
use i9_common::amqp::Topology;
use sqlx::{Connection, Executor, PgConnection, PgPool};
use tokio::{sync::watch, task::JoinHandle};

/// The benchmark (the default), or another mode.
#[derive(Parser, Debug)]
#[command(
    name = "i9-bench",
    about = "Benchmarks our API against a bare axum + sqlx program and writes BENCHMARKS.md",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    #[command(flatten)]
    bench: Args,
}

#[derive(Subcommand, Debug)]
enum Mode {
    /// POST, PATCH and the partner operation, and the time to an I-9 (the default).
    Writes(Args),
    /// GET of one employee (group visibility; full SSN) and the employee and I-9 lists.
    Reads(Args),
    /// The outbox relay, the worker and the callbacks against the API's write rate.
    Pipeline(pipeline::PipelineArgs),
    /// The fault suite: writes RELIABILITY.md (scripts/faults.sh).
    Faults(faults::FaultArgs),
    /// The token endpoint under a sign-in flood, and reads meanwhile.
    Tokens(tokens::TokenArgs),
    /// Resident memory of i9-api and i9-worker (separate processes).
    Memory(memory::MemoryArgs),
    /// The bare program alone in this process (for `memory`).
    #[command(hide = true)]
    BareServe(memory::BareServeArgs),
    /// The reads and writes on the seeded tables and on 1,000,000 loaded
    /// employees, and the plans of every list and filter.
    Growth(growth::GrowthArgs),
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Seconds of measured load per program.
    #[arg(long, default_value_t = 15)]
    pub duration: u64,
    /// Seconds of warm-up load per program (not measured).
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
    /// Concurrent keep-alive connections (one task each) of the load.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// POSTs with `createI9: "yes"` timed until their I-9 exists.
    #[arg(long = "i9-samples", default_value_t = 200)]
    pub i9_samples: usize,
    /// Time-to-I-9 samples in flight at once.
    #[arg(long = "i9-concurrency", default_value_t = 8)]
    pub i9_concurrency: usize,
    /// Employees (each with an SSN and an I-9) created in ours through its API
    /// before measuring: what the reads and the PATCHes work on.
    #[arg(long, default_value_t = 10_000)]
    pub employees: usize,
    /// Where to write the report (default: BENCHMARKS.md at the workspace root).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Before measuring, send one request of each kind with Postgres logging
    /// every statement of ours' database, between marker statements, to
    /// count its round trips in the server's log.
    #[arg(long)]
    pub log_statements: bool,
}

impl Args {
    fn check(&self) -> anyhow::Result<()> {
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
        if !(1..=256).contains(&self.i9_concurrency) {
            bail!("--i9-concurrency must be 1..=256");
        }
        if !(10..=200_000).contains(&self.employees) {
            bail!("--employees must be 10..=200000");
        }
        Ok(())
    }
}

/// The server (maintenance) database the bench creates its databases from.
pub fn admin_database_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What the run created, removed at the end whatever happened.
pub struct Cleanup {
    databases: Vec<String>,
    topology: Option<(String, Topology)>,
    stop: watch::Sender<bool>,
    tasks: Vec<(&'static str, JoinHandle<()>)>,
    pools: Vec<PgPool>,
    dirs: Vec<PathBuf>,
}

impl Cleanup {
    fn new() -> Self {
        Self {
            databases: Vec::new(),
            topology: None,
            stop: watch::channel(false).0,
            tasks: Vec::new(),
            pools: Vec::new(),
            dirs: Vec::new(),
        }
    }

    /// A fresh directory under the system's temporary one; removed at the end.
    pub fn temp_dir(&mut self, name: &str) -> anyhow::Result<PathBuf> {
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        self.dirs.push(dir.clone());
        Ok(dir)
    }

    /// A receiver that turns true when the run ends.
    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// A future that completes when the run ends (for graceful shutdowns).
    pub fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.stop.subscribe();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    }

    /// Create a fresh database on the server; it is dropped at the end.
    pub async fn create_database(&mut self, name: &str) -> anyhow::Result<String> {
        let admin_url = admin_database_url();
        let mut conn = PgConnection::connect(&admin_url).await.with_context(|| {
            format!("connecting to Postgres at {admin_url} (TEST_DATABASE_URL)")
        })?;
        conn.execute(format!(r#"CREATE DATABASE "{name}""#).as_str())
            .await
            .with_context(|| format!("creating database {name}"))?;
        self.databases.push(name.to_owned());
        conn.close().await.ok();
        match admin_url.rsplit_once('/') {
            Some((base, _)) => Ok(format!("{base}/{name}")),
            None => bail!("TEST_DATABASE_URL needs a database path"),
        }
    }

    pub fn task(&mut self, name: &'static str, handle: JoinHandle<()>) {
        self.tasks.push((name, handle));
    }

    pub fn pool(&mut self, pool: &PgPool) {
        self.pools.push(pool.clone());
    }

    pub fn topology(&mut self, amqp_url: &str, topology: &Topology) {
        self.topology = Some((amqp_url.to_owned(), topology.clone()));
    }

    async fn run(self) {
        let _ = self.stop.send(true);
        for (name, mut handle) in self.tasks {
            if tokio::time::timeout(Duration::from_secs(10), &mut handle)
                .await
                .is_err()
            {
                eprintln!("cleanup: {name} did not stop within 10 s; aborting it");
                handle.abort();
            }
        }
        for pool in self.pools {
            let _ = tokio::time::timeout(Duration::from_secs(5), pool.close()).await;
        }
        if let Some((url, topology)) = self.topology {
            if let Err(e) = delete_topology(&url, &topology).await {
                eprintln!("cleanup: could not delete the bench queues and exchanges: {e:#}");
            }
        }
        if !self.databases.is_empty() {
            match PgConnection::connect(&admin_database_url()).await {
                Ok(mut conn) => {
                    for name in &self.databases {
                        let sql = format!(r#"DROP DATABASE IF EXISTS "{name}" WITH (FORCE)"#);
                        if let Err(e) = conn.execute(sql.as_str()).await {
                            eprintln!("cleanup: could not drop database {name}: {e}");
                        }
                    }
                    conn.close().await.ok();
                }
                Err(e) => eprintln!(
                    "cleanup: cannot reach Postgres to drop {:?}: {e}",
                    self.databases
                ),
            }
        }
        for dir in self.dirs {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                eprintln!("cleanup: could not remove {}: {e}", dir.display());
            }
        }
        eprintln!("cleanup: done");
    }
}

async fn delete_topology(url: &str, topology: &Topology) -> anyhow::Result<()> {
    let conn = tokio::time::timeout(
        Duration::from_secs(10),
        i9_common::amqp::connect(&url.into()),
    )
    .await
    .context("timed out connecting to RabbitMQ")??;
    let channel: lapin::Channel = conn.create_channel().await?;
    // The delay queues of the worker's default policies (bench/src/ours.rs).
    let waits = i9_workers::consumer::WorkerConfig::new(
        i9_common::jobs::JobKind::ALL.to_vec(),
        topology.clone(),
    )
    .waits();
    topology.delete(&channel, &waits).await?;
    let _ = channel.close(200, "bench done".into()).await;
    let _ = conn.close(200, "bench done".into()).await;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let log = i9_common::config::LogSettings {
        filter: std::env::var("RUST_LOG").ok(),
        json: false,
        otlp_endpoint: None,
    };
    i9_common::telemetry::init(&log, "warn");
    let cli = Cli::parse();
    let (kind, args) = match cli.mode {
        Some(Mode::Faults(args)) => return faults::main(args).await,
        Some(Mode::Pipeline(args)) => return pipeline::main(args).await,
        Some(Mode::Tokens(args)) => return tokens::main(args).await,
        Some(Mode::Memory(args)) => return memory::main(args).await,
        Some(Mode::BareServe(args)) => return memory::bare_serve(args).await,
        Some(Mode::Growth(args)) => return growth::main(args).await,
        Some(Mode::Writes(args)) => (Kind::Writes, args),
        Some(Mode::Reads(args)) => (Kind::Reads, args),
        None => (Kind::Writes, cli.bench),
    };
    args.check()?;
    let mut cleanup = Cleanup::new();
    let result = tokio::select! {
        r = run(kind, &args, &mut cleanup) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    cleanup.run().await;
    result
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Writes,
    Reads,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Writes => "writes",
            Kind::Reads => "reads",
        }
    }
}

async fn run(kind: Kind, args: &Args, cleanup: &mut Cleanup) -> anyhow::Result<()> {
    let load_before = sys::load_average();
    let machine = sys::machine_facts().await;
    let run_id = uuid::Uuid::new_v4().simple().to_string();

    eprintln!("starting our API, relay and worker...");
    let ours = ours::start(&run_id, args.i9_concurrency, cleanup).await?;
    let postgres_version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(&ours.poll_pool)
        .await
        .context("reading the Postgres version")?;
    // The groups whose employees west.hr sees, as ours reads them
    // (api/src/auth/mod.rs, `visibility`): the bare lists' restriction.
    let groups: Vec<i64> = sqlx::query_scalar(
        "WITH RECURSIVE visible AS (
             SELECT group_id AS id FROM user_groups
             WHERE user_id = (SELECT id FROM users WHERE login = 'west.hr')
             UNION
             SELECT g.id FROM groups g JOIN visible v ON g.parent_id = v.id
         )
         SELECT id FROM visible ORDER BY id",
    )
    .fetch_all(&ours.poll_pool)
    .await
    .context("reading the groups west.hr sees")?;
    eprintln!("starting the bare program...");
    let bare = bare::start(
        &run_id,
        args.i9_concurrency,
        &ours.database_url,
        groups,
        cleanup,
    )
    .await?;

    eprintln!(
        "seeding {} employees with their I-9s through our API...",
        args.employees
    );
    let seeded = seed::seed(&ours, args.employees).await?;
    let copied = bare.copy_employees(&ours.poll_pool).await?;
    eprintln!(
        "seeded in {:.1} s; {copied} rows in the bare program's wide table",
        seeded.took.as_secs_f64()
    );
    let ids = load::ProfileIds::new(&run_id);

    if args.log_statements {
        let targets = match kind {
            Kind::Reads => modes::read_targets(&ours, &bare, &seeded),
            Kind::Writes => modes::write_targets(&ours, &bare, &seeded, &ids),
        };
        modes::probe(&ours, &format!("i9_bench_{run_id}"), &targets).await?;
        eprintln!("probed: see the statements of database i9_bench_{run_id} in the Postgres log");
        return Ok(());
    }

    let (rows, i9) = match kind {
        Kind::Reads => (modes::reads(args, &ours, &bare, &seeded).await?, None),
        Kind::Writes => {
            let (rows, o, b) = modes::writes(args, &ours, &bare, &seeded, &ids).await?;
            (rows, Some((o, b)))
        }
    };
    let results = report::Results {
        kind,
        command: command_line(),
        date: chrono::Utc::now(),
        machine,
        postgres_version,
        args: args.clone(),
        load_before,
        load_after: sys::load_average(),
        seeded_employees: args.employees,
        seed_took: seeded.took,
        rows,
        i9,
    };
    println!("{}", report::tables(&results));
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| workspace_root().join("BENCHMARKS.md"));
    report::write_section(&path, kind.name(), &report::section(&results))?;
    eprintln!("wrote the {} section of {}", kind.name(), path.display());
    Ok(())
}

/// The command as a person runs it: the script and the flags given.
fn command_line() -> String {
    let mut cmd = String::from("scripts/bench.sh");
    for a in std::env::args().skip(1) {
        cmd.push(' ');
        if a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=./:".contains(c))
        {
            cmd.push_str(&a);
        } else {
            cmd.push_str(&format!("'{}'", a.replace('\'', r"'\''")));
        }
    }
    cmd
}
