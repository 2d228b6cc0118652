//! `i9-bench memory`: the resident memory of `i9-api` and `i9-worker`, each
//! its own process (the release binaries, run with the environment
//! `scripts/dev.sh` gives them, on a fresh database and AMQP prefix), at
//! rest, under the standard load and with 2,000 idle keep-alive connections
//! open; beside the bare axum + sqlx program (bench/src/bare.rs) run as a
//! process of its own (`i9-bench bare-serve`, hidden) under the same loads.
//! Figures from `/proc/<pid>/status` (`VmRSS`, `RssAnon`, `VmHWM`).
//!
//! Ours' processes are stopped before the bare program starts (the
//! server's 100 connection slots are shared by every pool).

use std::{
    net::{Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _};
use reqwest::{header::CONTENT_TYPE, StatusCode};
use sqlx::{postgres::PgPoolOptions, PgPool};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt},
    net::{TcpSocket, TcpStream},
    sync::watch,
};

use crate::{
    bare,
    load::{self, LoadResult, ProfileIds, Target},
    ours, seed, sys, workspace_root, Cleanup,
};

mod report;

/// The goals, in MiB.
const API_GOAL_MIB: f64 = 50.0;
const WORKER_GOAL_MIB: f64 = 30.0;
/// Connections per loopback source address: below the API's
/// `HTTP_MAX_CONNECTIONS_PER_ADDRESS` (256).
const PER_ADDRESS: usize = 250;
/// Connections being opened at once.
const OPENING_AT_ONCE: usize = 64;
const START_DEADLINE: Duration = Duration::from_secs(120);
const BUILD_DEADLINE: Duration = Duration::from_secs(3600);
/// How often the resident size is sampled under load.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

#[derive(clap::Args, Debug, Clone)]
pub struct MemoryArgs {
    /// Seconds of measured standard load per program.
    #[arg(long, default_value_t = 15)]
    pub duration: u64,
    /// Seconds of warm-up load per program (sampled too).
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
    /// Connections of each of the standard load's two requests.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Idle keep-alive connections opened (each after one request).
    #[arg(long = "open-connections", default_value_t = 2_000)]
    pub open_connections: usize,
    /// Employees (with I-9s) created in ours through its API before the load.
    #[arg(long, default_value_t = 1_000)]
    pub employees: usize,
    /// Use the release binaries as they are (no `cargo build` first).
    #[arg(long)]
    pub no_build: bool,
    /// An extra variable for `i9-api` and `i9-worker` (NAME=VALUE, repeatable),
    /// e.g. `--env MALLOC_ARENA_MAX=2`; the report names them.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Where to write the report (default: BENCHMARKS.md at the workspace root).
    #[arg(long)]
    pub output: Option<PathBuf>,
}

impl MemoryArgs {
    fn check(&self) -> anyhow::Result<()> {
        if !(1..=600).contains(&self.duration) {
            bail!("--duration must be 1..=600 seconds");
        }
        if self.warmup > 60 {
            bail!("--warmup must be at most 60 seconds");
        }
        if !(1..=512).contains(&self.connections) {
            bail!("--connections must be 1..=512");
        }
        if !(1..=10_000).contains(&self.open_connections) {
            bail!("--open-connections must be 1..=10000");
        }
        if !(10..=200_000).contains(&self.employees) {
            bail!("--employees must be 10..=200000");
        }
        for e in &self.env {
            match e.split_once('=') {
                Some((name, _)) if !name.is_empty() => {}
                _ => bail!("--env takes NAME=VALUE, not {e:?}"),
            }
        }
        Ok(())
    }
}

/// The hidden `bare-serve`: the bare program alone in this process.
#[derive(clap::Args, Debug, Clone)]
pub struct BareServeArgs {
    /// Names its database (`i9_bench_<run-id>_bare`).
    #[arg(long)]
    pub run_id: String,
    /// Ours' database, whose employees the wide table copies.
    #[arg(long)]
    pub ours_database_url: String,
}

pub async fn main(args: MemoryArgs) -> anyhow::Result<()> {
    args.check()?;
    let mut cleanup = Cleanup::new();
    let result = tokio::select! {
        r = run(&args, &mut cleanup) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    cleanup.run().await;
    result
}

/// Serve the bare program until stdin closes, SIGTERM or Ctrl-C; prints
/// `listening <base url>` once its wide table is filled.
pub async fn bare_serve(args: BareServeArgs) -> anyhow::Result<()> {
    let mut cleanup = Cleanup::new();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let result = tokio::select! {
        r = serve_bare(&args, &mut cleanup) => r,
        _ = tokio::signal::ctrl_c() => Ok(()),
        _ = term.recv() => Ok(()),
    };
    cleanup.run().await;
    result
}

async fn serve_bare(args: &BareServeArgs, cleanup: &mut Cleanup) -> anyhow::Result<()> {
    let b = bare::start(
        &args.run_id,
        2,
        &args.ours_database_url,
        Vec::new(),
        cleanup,
    )
    .await?;
    let ours = PgPoolOptions::new()
        .max_connections(2)
        .connect(&args.ours_database_url)
        .await
        .context("connecting to ours' database")?;
    cleanup.pool(&ours);
    let copied = b.copy_employees(&ours).await?;
    ours.close().await;
    eprintln!("bare-serve: {copied} rows in the wide table");
    println!("listening {}", b.base_url);
    // Until the parent closes our stdin (or ends).
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    while stdin.read(&mut buf).await.unwrap_or(0) > 0 {}
    Ok(())
}

/// Resident memory of one process, in KiB, from `/proc/<pid>/status`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mem {
    pub rss: u64,
    pub anon: u64,
    pub hwm: u64,
    pub threads: u64,
}

impl Mem {
    pub fn read(pid: u32) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .with_context(|| format!("reading /proc/{pid}/status"))?;
        let field = |name: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        Ok(Self {
            rss: field("VmRSS:"),
            anon: field("RssAnon:"),
            hwm: field("VmHWM:"),
            threads: field("Threads:"),
        })
    }
}

/// Open files of a process (`/proc/<pid>/fd`).
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The soft open-file limit of a process (`/proc/<pid>/limits`).
fn nofile_limit(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/limits"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3).map(str::to_owned))
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A child process, ended with SIGTERM (then killed) when asked or when the run ends.
struct Child {
    name: &'static str,
    pid: u32,
    stop: watch::Sender<bool>,
    exited: watch::Receiver<Option<String>>,
}

impl Child {
    fn spawn(
        name: &'static str,
        mut command: tokio::process::Command,
        cleanup: &mut Cleanup,
    ) -> anyhow::Result<(Self, Option<tokio::process::ChildStdout>)> {
        command.kill_on_drop(true);
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let pid = child.id().context("the child has no pid")?;
        let stdout = child.stdout.take();
        let stdin = child.stdin.take();
        let (stop, mut stop_rx) = watch::channel(false);
        let (exited_tx, exited) = watch::channel(None);
        let mut run_end = cleanup.stop_signal();
        cleanup.task(
            name,
            tokio::spawn(async move {
                let _stdin = stdin;
                // A dropped `Child` (an error of the run) ends the process too.
                let exited = tokio::select! {
                    s = child.wait() => Some(s),
                    _ = stop_rx.wait_for(|s| *s) => None,
                    _ = run_end.wait_for(|s| *s) => None,
                };
                let status = match exited {
                    Some(s) => s,
                    None => end(&mut child, pid).await,
                };
                let status = match status {
                    Ok(s) => s.to_string(),
                    Err(e) => e.to_string(),
                };
                let _ = exited_tx.send(Some(status));
            }),
        );
        Ok((
            Self {
                name,
                pid,
                stop,
                exited,
            },
            stdout,
        ))
    }

    fn alive(&self) -> anyhow::Result<()> {
        match &*self.exited.borrow() {
            Some(status) => bail!("{} exited ({status})", self.name),
            None => Ok(()),
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(
            Duration::from_secs(15),
            self.exited.wait_for(Option::is_some),
        )
        .await;
    }
}

/// SIGTERM, then SIGKILL after 8 s.
async fn end(
    child: &mut tokio::process::Child,
    pid: u32,
) -> std::io::Result<std::process::ExitStatus> {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    match tokio::time::timeout(Duration::from_secs(8), child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            let _ = child.kill().await;
            child.wait().await
        }
    }
}

/// A free loopback port (bound, then released for the child to bind).
fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr()?.port())
}

/// `cargo build --release --locked -p i9-bench -p i9-api -p i9-workers` at
/// the workspace root: with the bench in the selection, the binaries are built
/// with the bench's features and so from its compiled dependencies (alone,
/// `-p i9-api -p i9-workers` selects other features and builds about 350
/// crates again).
async fn build() -> anyhow::Result<()> {
    eprintln!("building the release binaries of i9-api and i9-worker...");
    let mut cmd =
        tokio::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args([
        "build",
        "--release",
        "--locked",
        "-p",
        "i9-bench",
        "-p",
        "i9-api",
        "-p",
        "i9-workers",
    ])
    .current_dir(workspace_root())
    .kill_on_drop(true);
    let status = tokio::time::timeout(BUILD_DEADLINE, cmd.status())
        .await
        .context("the build took longer than an hour")?
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build of i9-api and i9-workers failed: {status}");
    }
    Ok(())
}

fn release_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d).join("release"),
        None => workspace_root().join("target/release"),
    }
}

/// Poll `url` until it answers 200, while `child` lives.
async fn wait_ready(url: &str, child: &Child) -> anyhow::Result<()> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()?;
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        child.alive()?;
        if let Ok(r) = client.get(url).send().await {
            if r.status() == StatusCode::OK {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!(
                "{} did not answer {url} within {START_DEADLINE:?}",
                child.name
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One program's figures.
pub struct Measured {
    pub rest: Mem,
    /// Largest `VmRSS` sampled during the standard load, and at its end.
    pub load_peak: Mem,
    pub load_end: Mem,
    /// With the idle connections open.
    pub connections: Mem,
    /// Of the idle connections, how many were opened and answered.
    pub opened: usize,
    pub open_files: usize,
    pub nofile: String,
    pub get: LoadResult,
    pub post: LoadResult,
}

/// The worker's figures (ours only).
pub struct WorkerMeasured {
    pub rest: Mem,
    pub load_peak: Mem,
    pub load_end: Mem,
    /// When every I-9 of the load's POSTs exists (or after 120 s).
    pub drained: Mem,
    pub drained_after: Duration,
    pub connections: Mem,
}

pub struct Results {
    pub command: String,
    pub date: chrono::DateTime<chrono::Utc>,
    pub machine: sys::Machine,
    pub postgres_version: String,
    pub args: MemoryArgs,
    pub seed_took: Duration,
    pub ours: Measured,
    pub worker: WorkerMeasured,
    pub bare: Measured,
    pub addresses: usize,
    pub load_before: [f64; 3],
    pub load_after: [f64; 3],
}

/// The environment `scripts/dev.sh` gives the binaries, on this run's database and prefix.
fn service_env(
    db_url: &str,
    prefix: &str,
    api_port: u16,
    worker_port: u16,
    mail_dir: &Path,
    extra: &[String],
) -> Vec<(String, String)> {
    let amqp = std::env::var("AMQP_URL")
        .unwrap_or_else(|_| i9_common::config::DEFAULT_AMQP_URL.to_owned());
    let mut env: Vec<(String, String)> = [
        ("DATABASE_URL", db_url.to_owned()),
        ("AMQP_URL", amqp),
        ("AMQP_PREFIX", prefix.to_owned()),
        ("BIND_ADDR", format!("127.0.0.1:{api_port}")),
        ("PUBLIC_BASE_URL", format!("http://127.0.0.1:{api_port}")),
        ("ALLOW_PRIVATE_CALLBACKS", "true".to_owned()),
        ("EVERIFY_POLL_SECS", "5".to_owned()),
        ("APP_ENV", "development".to_owned()),
        ("WORKER_HTTP_ADDR", format!("127.0.0.1:{worker_port}")),
        ("MAIL_DIR", mail_dir.display().to_string()),
        ("RUST_LOG", "warn,lapin=off".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    for e in extra {
        if let Some((k, v)) = e.split_once('=') {
            env.retain(|(name, _)| name != k);
            env.push((k.to_owned(), v.to_owned()));
        }
    }
    env
}

fn service(
    binary: &Path,
    env: &[(String, String)],
    log: &Path,
) -> anyhow::Result<tokio::process::Command> {
    let mut cmd = tokio::process::Command::new(binary);
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?);
    Ok(cmd)
}

async fn run(args: &MemoryArgs, cleanup: &mut Cleanup) -> anyhow::Result<()> {
    let load_before = sys::load_average();
    if !args.no_build {
        build().await?;
    }
    let bin = release_dir();
    for b in ["i9-api", "i9-worker"] {
        if !bin.join(b).exists() {
            bail!(
                "{} is missing (build it, or leave out --no-build)",
                bin.join(b).display()
            );
        }
    }
    let machine = sys::machine_facts().await;
    let run_id = uuid::Uuid::new_v4().simple().to_string();

    // A fresh database: migrated, the example organization.
    let db_url = cleanup
        .create_database(&format!("i9_bench_{run_id}"))
        .await?;
    let config = i9_common::Config::for_tests(&db_url);
    let pool = PgPoolOptions::new()
        .max_connections(6)
        .acquire_timeout(Duration::from_secs(10))
        .connect(&db_url)
        .await
        .context("connecting to the run's database")?;
    cleanup.pool(&pool);
    i9_common::db::MIGRATOR
        .run(&pool)
        .await
        .context("applying migrations")?;
    let org = std::fs::read_to_string(workspace_root().join("fixtures/org.json"))
        .context("reading fixtures/org.json")?;
    i9_common::seed::load(
        &pool,
        &i9_common::crypto::DataCipher::from_config(&config),
        &i9_common::seed::parse(&org).context("parsing fixtures/org.json")?,
    )
    .await
    .context("seeding the example organization")?;
    let postgres_version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(&pool)
        .await?;

    let prefix = format!("bench{run_id}");
    let amqp = std::env::var("AMQP_URL")
        .unwrap_or_else(|_| i9_common::config::DEFAULT_AMQP_URL.to_owned());
    cleanup.topology(&amqp, &i9_common::amqp::Topology::new(prefix.clone()));
    let (api_port, worker_port) = (free_port()?, free_port()?);
    let dir = cleanup.temp_dir(&format!("i9-bench-{run_id}-memory"))?;
    std::fs::create_dir_all(dir.join("mail")).context("creating the mail folder")?;
    let env = service_env(
        &db_url,
        &prefix,
        api_port,
        worker_port,
        &dir.join("mail"),
        &args.env,
    );

    eprintln!("starting i9-worker and i9-api...");
    let (worker, _) = Child::spawn(
        "i9-worker",
        service(&bin.join("i9-worker"), &env, &dir.join("worker.log"))?,
        cleanup,
    )?;
    let (api, _) = Child::spawn(
        "i9-api",
        service(&bin.join("i9-api"), &env, &dir.join("api.log"))?,
        cleanup,
    )?;
    let base_url = format!("http://127.0.0.1:{api_port}");
    let started = async {
        wait_ready(&format!("http://127.0.0.1:{worker_port}/healthz"), &worker).await?;
        wait_ready(&format!("{base_url}/healthz"), &api).await
    };
    if let Err(e) = started.await {
        for log in ["api.log", "worker.log"] {
            let text = std::fs::read_to_string(dir.join(log)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(20).collect();
            eprintln!(
                "--- {log} (last lines, newest first) ---\n{}",
                tail.join("\n")
            );
        }
        return Err(e);
    }

    // The first requests: sign-ins, one employee with its I-9, its GET.
    let admin = ours::sign_in(&base_url, ours::PORTAL, ours::ADMIN).await?;
    let hr = ours::sign_in(&base_url, ours::PORTAL, ours::WEST_HR).await?;
    let location_id: i64 = sqlx::query_scalar("SELECT id FROM groups WHERE name = $1")
        .bind(ours::LOCATION)
        .fetch_one(&pool)
        .await
        .context("the location of the fixture")?;
    let ids = ProfileIds::new(&run_id);
    let post = Target::new("ours", StatusCode::CREATED, {
        let (url, token, ids) = (
            format!("{base_url}/v1/employees"),
            admin.clone(),
            ids.clone(),
        );
        move |c, _| {
            c.post(&url)
                .bearer_auth(&token)
                .header(CONTENT_TYPE, "application/json")
                .body(load::body(location_id, &ids, true))
        }
    });
    let first = first_request(&post).await?;
    wait_i9s(&pool, &[first]).await?;
    let ours_fixture = ours::Ours {
        base_url: base_url.clone(),
        tokens: ours::Tokens {
            admin: admin.clone(),
            hr: hr.clone(),
            auditor: hr.clone(),
            partner: admin.clone(),
        },
        location_id,
        poll_pool: pool.clone(),
        database_url: db_url.clone(),
        // What the seed does not read: the processes have their own.
        config: config.clone(),
        pool: pool.clone(),
        topology: i9_common::amqp::Topology::new(prefix.clone()),
        callback_url: String::new(),
    };
    let get_one = get_target(
        "ours",
        format!("{base_url}/v1/employees"),
        Some(hr.clone()),
        Arc::new(vec![first]),
    );
    first_request(&get_one).await?;
    let rest = Mem::read(api.pid)?;
    let worker_rest = Mem::read(worker.pid)?;
    eprintln!(
        "at rest: api {} KiB, worker {} KiB",
        rest.rss, worker_rest.rss
    );

    eprintln!(
        "seeding {} employees with their I-9s through our API...",
        args.employees
    );
    let seeded = seed::seed(&ours_fixture, args.employees).await?;
    let visible = Arc::new(seeded.visible.clone());
    let get = get_target(
        "ours",
        format!("{base_url}/v1/employees"),
        Some(hr.clone()),
        visible.clone(),
    );

    eprintln!("ours: the standard load...");
    let (o_get, o_post, peaks) = standard_load(args, &get, &post, &[api.pid, worker.pid]).await?;
    let load_end = Mem::read(api.pid)?;
    let worker_end = Mem::read(worker.pid)?;
    let (drained_after, _) = wait_backlog(&pool, &format!("b{}-%", &run_id[..8])).await?;
    let worker_drained = Mem::read(worker.pid)?;

    eprintln!("ours: {} idle connections...", args.open_connections);
    let request = format!(
        "GET /v1/employees/{} HTTP/1.1\r\nHost: 127.0.0.1:{api_port}\r\nAuthorization: Bearer {hr}\r\n\r\n",
        visible.first().copied().unwrap_or(first)
    );
    let api_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, api_port));
    let (conns, addresses) = open_idle(api_addr, &request, args.open_connections).await?;
    api.alive()?;
    let ours_conn = Mem::read(api.pid)?;
    let worker_conn = Mem::read(worker.pid)?;
    let ours_files = open_files(api.pid);
    let ours_nofile = nofile_limit(api.pid);
    let ours_opened = conns.len();
    drop(conns);
    let ours_measured = Measured {
        rest,
        load_peak: peaks[0],
        load_end,
        connections: ours_conn,
        opened: ours_opened,
        open_files: ours_files,
        nofile: ours_nofile,
        get: o_get,
        post: o_post,
    };
    let worker_measured = WorkerMeasured {
        rest: worker_rest,
        load_peak: peaks[1],
        load_end: worker_end,
        drained: worker_drained,
        drained_after,
        connections: worker_conn,
    };
    eprintln!("stopping i9-api and i9-worker...");
    api.stop().await;
    worker.stop().await;

    eprintln!("starting the bare program (i9-bench bare-serve)...");
    // Its database, dropped by this process too if the child cannot.
    cleanup.databases.push(format!("i9_bench_{run_id}_bare"));
    let mut cmd = tokio::process::Command::new(
        std::env::current_exe().context("finding the i9-bench binary")?,
    );
    cmd.args([
        "bare-serve",
        "--run-id",
        &run_id,
        "--ours-database-url",
        &db_url,
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    let (bare_child, stdout) = Child::spawn("i9-bench bare-serve", cmd, cleanup)?;
    let mut lines = tokio::io::BufReader::new(stdout.context("no stdout of bare-serve")?).lines();
    let line = tokio::time::timeout(START_DEADLINE, lines.next_line())
        .await
        .context("bare-serve did not start in time")??
        .context("bare-serve ended before listening")?;
    let bare_url = line
        .strip_prefix("listening ")
        .context("bare-serve's first line")?
        .to_owned();
    let bare_port: u16 = bare_url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .context("bare-serve's port")?;
    let bare_post = Target::new("bare", StatusCode::CREATED, {
        let (url, ids) = (format!("{bare_url}/employees"), ids.clone());
        move |c, _| {
            c.post(&url)
                .header(CONTENT_TYPE, "application/json")
                .body(load::body(1, &ids, true))
        }
    });
    let bare_get = get_target(
        "bare",
        format!("{bare_url}/employees"),
        None,
        visible.clone(),
    );
    first_request(&bare_post).await?;
    first_request(&bare_get).await?;
    let bare_rest = Mem::read(bare_child.pid)?;
    eprintln!("bare: the standard load...");
    let (b_get, b_post, bare_peaks) =
        standard_load(args, &bare_get, &bare_post, &[bare_child.pid]).await?;
    let bare_end = Mem::read(bare_child.pid)?;
    eprintln!("bare: {} idle connections...", args.open_connections);
    let request = format!(
        "GET /employees/{} HTTP/1.1\r\nHost: 127.0.0.1:{bare_port}\r\n\r\n",
        visible.first().copied().unwrap_or(first)
    );
    let (conns, _) = open_idle(
        SocketAddr::from((Ipv4Addr::LOCALHOST, bare_port)),
        &request,
        args.open_connections,
    )
    .await?;
    bare_child.alive()?;
    let bare_measured = Measured {
        rest: bare_rest,
        load_peak: bare_peaks[0],
        load_end: bare_end,
        connections: Mem::read(bare_child.pid)?,
        opened: conns.len(),
        open_files: open_files(bare_child.pid),
        nofile: nofile_limit(bare_child.pid),
        get: b_get,
        post: b_post,
    };
    drop(conns);
    bare_child.stop().await;

    let results = Results {
        command: crate::command_line(),
        date: chrono::Utc::now(),
        machine,
        postgres_version,
        args: args.clone(),
        seed_took: seeded.took,
        ours: ours_measured,
        worker: worker_measured,
        bare: bare_measured,
        addresses,
        load_before,
        load_after: sys::load_average(),
    };
    println!("{}", report::tables(&results));
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| workspace_root().join("BENCHMARKS.md"));
    crate::report::write_section(&path, "memory", &report::section(&results))?;
    eprintln!("wrote the memory section of {}", path.display());
    Ok(())
}

fn get_target(name: &str, url: String, token: Option<String>, ids: Arc<Vec<i64>>) -> Target {
    Target::new(name, StatusCode::OK, move |c, r| {
        let i = usize::try_from(r % ids.len().max(1) as u64).unwrap_or(0);
        let mut request = c.get(format!("{url}/{}", ids.get(i).copied().unwrap_or(1)));
        if let Some(token) = &token {
            request = request.bearer_auth(token);
        }
        request
    })
}

/// Send one request of `target`; the `id` of its JSON answer, if any.
async fn first_request(target: &Target) -> anyhow::Result<i64> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let response = (target.build)(&client, 0).send().await?;
    let status = response.status();
    let body = response.text().await?;
    if status != target.expect {
        let body: String = body.chars().take(300).collect();
        bail!("first request of {}: HTTP {status}: {body}", target.name);
    }
    Ok(serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["id"].as_i64())
        .unwrap_or(0))
}

/// Wait until the employees `ids` have their I-9s (at most 60 s).
async fn wait_i9s(pool: &PgPool, ids: &[i64]) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(DISTINCT employee_id) FROM i9s WHERE employee_id = ANY($1)",
        )
        .bind(ids)
        .fetch_one(pool)
        .await?;
        if n >= i64::try_from(ids.len())? {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the worker did not create the first I-9 within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Wait until every employee the load created (`profile_id LIKE pattern`)
/// has its I-9 (the worker's backlog), at most 120 s: how long it took, and
/// whether it drained.
async fn wait_backlog(pool: &PgPool, pattern: &str) -> anyhow::Result<(Duration, bool)> {
    let t0 = Instant::now();
    loop {
        let missing: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM employees e WHERE e.profile_id LIKE $1
             AND NOT EXISTS (SELECT 1 FROM i9s i WHERE i.employee_id = e.id)",
        )
        .bind(pattern)
        .fetch_one(pool)
        .await?;
        if missing == 0 {
            return Ok((t0.elapsed(), true));
        }
        if t0.elapsed() > Duration::from_secs(120) {
            eprintln!("{missing} I-9s still missing after 120 s");
            return Ok((t0.elapsed(), false));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// GETs and POSTs at once, `args.connections` connections each, while the
/// resident sizes of `pids` are sampled: the largest of each.
async fn standard_load(
    args: &MemoryArgs,
    get: &Target,
    post: &Target,
    pids: &[u32],
) -> anyhow::Result<(LoadResult, LoadResult, Vec<Mem>)> {
    let settings = load::Settings {
        connections: args.connections,
        warmup: Duration::from_secs(args.warmup),
        duration: Duration::from_secs(args.duration),
    };
    let (done_tx, mut done) = watch::channel(false);
    let sampler = {
        let pids = pids.to_vec();
        tokio::spawn(async move {
            let mut peaks = vec![Mem::default(); pids.len()];
            // Bounded: the load ends within warm-up + duration + its timeouts.
            for _ in 0..100_000 {
                for (peak, pid) in peaks.iter_mut().zip(&pids) {
                    if let Ok(m) = Mem::read(*pid) {
                        if m.rss > peak.rss {
                            *peak = m;
                        }
                    }
                }
                if tokio::time::timeout(SAMPLE_EVERY, done.wait_for(|d| *d))
                    .await
                    .is_ok()
                {
                    break;
                }
            }
            peaks
        })
    };
    let (g, p) = tokio::join!(
        load::throughput(get, &settings),
        load::throughput(post, &settings)
    );
    let _ = done_tx.send(true);
    let peaks = sampler.await.context("the memory sampler failed")?;
    Ok((g?, p?, peaks))
}

/// Open `count` keep-alive connections to `addr`, each from a loopback
/// source address holding at most [`PER_ADDRESS`] of them (127.0.0.2, ...),
/// each sending `request` and reading its answer; they stay open, idle,
/// until dropped. Also: how many source addresses were used.
async fn open_idle(
    addr: SocketAddr,
    request: &str,
    count: usize,
) -> anyhow::Result<(Vec<TcpStream>, usize)> {
    let addresses = count.div_ceil(PER_ADDRESS);
    if addresses > 250 {
        bail!("too many connections for the loopback source addresses");
    }
    let request = Arc::new(request.as_bytes().to_vec());
    let gate = Arc::new(tokio::sync::Semaphore::new(OPENING_AT_ONCE));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..count {
        let (request, gate) = (request.clone(), gate.clone());
        // 127.0.0.2 up: a /8 of the loopback interface.
        let source = Ipv4Addr::new(127, 0, 0, u8::try_from(2 + i / PER_ADDRESS)?);
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            tokio::time::timeout(Duration::from_secs(30), open_one(source, addr, &request))
                .await
                .context("opening a connection took longer than 30 s")?
        });
    }
    let mut conns = Vec::with_capacity(count);
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined.context("an opening task failed")? {
            Ok(c) => conns.push(c),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        bail!(
            "{} of {count} connections failed; the first: {e:#}",
            count - conns.len()
        );
    }
    Ok((conns, addresses))
}

async fn open_one(source: Ipv4Addr, addr: SocketAddr, request: &[u8]) -> anyhow::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket
        .bind(SocketAddr::from((source, 0)))
        .with_context(|| format!("binding {source}"))?;
    let mut stream = socket.connect(addr).await.context("connecting")?;
    stream.set_nodelay(true)?;
    stream.write_all(request).await?;
    // The head, then as many body bytes as Content-Length says.
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            bail!("the connection closed before the answer ended");
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            if buf.len() > 65_536 {
                bail!("an answer head over 64 KiB");
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        if !head.starts_with("http/1.1 200") {
            let line = head.lines().next().unwrap_or_default().to_owned();
            bail!("answer {line:?}");
        }
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .context("an answer without Content-Length")?;
        if buf.len() >= end + 4 + length {
            return Ok(stream);
        }
    }
}
