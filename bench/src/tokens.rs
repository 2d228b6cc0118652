//! `i9-bench tokens`: the token endpoint under a flood of sign-ins, beside a
//! bare axum endpoint doing the same argon2id verification under the same
//! bound, and what the flood does to the latency of `GET
//! /v1/employees/{id}` sent at a fixed rate (open loop).
//!
//! Ours runs in this process as in the other modes (`ours::start`: the API,
//! its outbox relay and a worker). The flood is `POST /oauth2/access_token`
//! (password grant, `acme-hr-portal` and `admin` with the right password:
//! failed sign-ins are throttled, successful ones are not; each writes a
//! token row). The bare endpoint checks the same password against the very
//! hash in ours' `users` row, with a semaphore of `PASSWORD_HASH_CONCURRENCY`
//! turns (what ours' configuration reads here), a wait of at most
//! `PASSWORD_HASH_WAIT_SECS` for a turn (503 beyond) and `spawn_blocking`,
//! and answers 200.

use std::{
    collections::{BTreeMap, HashMap},
    fmt::Write as _,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _};
use axum::{extract::State, http::StatusCode, routing::post, Form, Router};
use hdrhistogram::Histogram;
use reqwest::header::CONTENT_TYPE;
use tokio::sync::Semaphore;

use crate::{
    load::{self, quantile_ms, LoadResult, Target},
    ours, seed, sys, workspace_root, Cleanup,
};

const PORTAL: (&str, &str) = ("acme-hr-portal", "portal-secret-change-me");
const ADMIN: (&str, &str) = ("admin", "admin-Passw0rd!");
/// Requests of the open-loop reads in flight at once; a tick beyond is
/// counted as an error ("not sent: ... in flight"), not queued.
const MAX_IN_FLIGHT: usize = 2_000;
/// Seconds the flood runs before the reads' measured window starts (the
/// reads run unmeasured meanwhile).
const FLOOD_LEAD_SECS: u64 = 2;

#[derive(clap::Args, Debug, Clone)]
pub struct TokenArgs {
    /// Seconds of measured load per program (and per read window).
    #[arg(long, default_value_t = 15)]
    pub duration: u64,
    /// Seconds of warm-up load per program (not measured).
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
    /// Concurrent keep-alive connections (one task each) of the sign-in flood.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// `GET /v1/employees/{id}` per second of the reads (open loop).
    #[arg(long, default_value_t = 200)]
    pub rate: u32,
    /// Employees (with I-9s) created in ours through its API before measuring.
    #[arg(long, default_value_t = 1_000)]
    pub employees: usize,
    /// Where to write the report (default: BENCHMARKS.md at the workspace root).
    #[arg(long)]
    pub output: Option<PathBuf>,
}

impl TokenArgs {
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
        if !(1..=5_000).contains(&self.rate) {
            bail!("--rate must be 1..=5000 per second");
        }
        if !(10..=200_000).contains(&self.employees) {
            bail!("--employees must be 10..=200000");
        }
        Ok(())
    }
}

pub async fn main(args: TokenArgs) -> anyhow::Result<()> {
    args.check()?;
    let mut cleanup = Cleanup::new();
    let result = tokio::select! {
        r = run(&args, &mut cleanup) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    cleanup.run().await;
    result
}

/// The bare token endpoint's state.
#[derive(Clone)]
struct BareState {
    phc: Arc<String>,
    turns: Arc<Semaphore>,
    wait: Duration,
}

/// Verify `password` against the hash under the bound; 200, 401 or 503.
async fn bare_token(
    State(s): State<BareState>,
    Form(form): Form<HashMap<String, String>>,
) -> (StatusCode, &'static str) {
    let Some(password) = form.get("password").cloned() else {
        return (StatusCode::BAD_REQUEST, "password is required");
    };
    let permit = match tokio::time::timeout(s.wait, s.turns.clone().acquire_owned()).await {
        Ok(Ok(permit)) => permit,
        _ => return (StatusCode::SERVICE_UNAVAILABLE, "busy"),
    };
    let phc = s.phc.clone();
    let verified = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        i9_common::crypto::verify_password(&password, &phc)
    })
    .await;
    match verified {
        Ok(true) => (StatusCode::OK, "{\"ok\":true}"),
        Ok(false) => (StatusCode::UNAUTHORIZED, "wrong password"),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "verification failed"),
    }
}

async fn start_bare(
    phc: String,
    concurrency: usize,
    wait: Duration,
    cleanup: &mut Cleanup,
) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the bare token endpoint")?;
    let addr = listener.local_addr()?;
    let router = Router::new()
        .route("/token", post(bare_token))
        .with_state(BareState {
            phc: Arc::new(phc),
            turns: Arc::new(Semaphore::new(concurrency.max(1))),
            wait,
        });
    let stopped = cleanup.stopped();
    cleanup.task(
        "bare token endpoint",
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router)
                .with_graceful_shutdown(stopped)
                .await
            {
                eprintln!("bare token endpoint stopped: {e}");
            }
        }),
    );
    Ok(format!("http://{addr}/token"))
}

/// `POST`s of the password grant of `admin` through `acme-hr-portal`.
fn sign_ins(name: &str, url: String) -> Target {
    let body = format!(
        "grant_type=password&client_id={}&client_secret={}&username={}&password={}",
        PORTAL.0,
        PORTAL.1,
        ADMIN.0,
        ADMIN.1.replace('!', "%21")
    );
    Target::new(name, StatusCode::OK, move |c, _| {
        c.post(&url)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body.clone())
    })
}

/// What the run measured.
struct Results {
    command: String,
    date: chrono::DateTime<chrono::Utc>,
    machine: sys::Machine,
    postgres_version: String,
    args: TokenArgs,
    concurrency: usize,
    wait: Duration,
    load_before: [f64; 3],
    load_after: [f64; 3],
    seed_took: Duration,
    ours: LoadResult,
    bare: LoadResult,
    reads_alone: LoadResult,
    reads_flooded: LoadResult,
    /// The flood that ran beside the reads (its first `FLOOD_LEAD_SECS` included).
    flood: LoadResult,
}

async fn run(args: &TokenArgs, cleanup: &mut Cleanup) -> anyhow::Result<()> {
    let load_before = sys::load_average();
    let machine = sys::machine_facts().await;
    let run_id = uuid::Uuid::new_v4().simple().to_string();

    eprintln!("starting our API, relay and worker...");
    let ours = ours::start(&run_id, 4, cleanup).await?;
    let postgres_version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(&ours.poll_pool)
        .await
        .context("reading the Postgres version")?;
    // The bound as ours reads it from its configuration (ours::start's).
    let config = i9_common::Config::for_tests(&ours.database_url);
    let (concurrency, wait) = (config.password_hash_concurrency, config.password_hash_wait);
    let phc: String = sqlx::query_scalar("SELECT password_hash FROM users WHERE login = $1")
        .bind(ADMIN.0)
        .fetch_one(&ours.poll_pool)
        .await
        .context("reading admin's password hash")?;
    let bare_url = start_bare(phc, concurrency, wait, cleanup).await?;

    eprintln!(
        "seeding {} employees with their I-9s through our API...",
        args.employees
    );
    let seeded = seed::seed(&ours, args.employees).await?;

    let settings = load::Settings {
        connections: args.connections,
        warmup: Duration::from_secs(args.warmup),
        duration: Duration::from_secs(args.duration),
    };
    let ours_flood = sign_ins("ours", format!("{}/oauth2/access_token", ours.base_url));
    eprintln!("sign-in flood: ours...");
    let ours_result = load::throughput(&ours_flood, &settings).await?;
    eprintln!("sign-in flood: bare...");
    let bare_result = load::throughput(&sign_ins("bare", bare_url), &settings).await?;

    let visible = Arc::new(seeded.visible.clone());
    let reads = {
        let (base, token) = (ours.base_url.clone(), ours.tokens.hr.clone());
        Target::new("ours", StatusCode::OK, move |c, r| {
            let i = usize::try_from(r % visible.len() as u64).unwrap_or(0);
            c.get(format!("{base}/v1/employees/{}", visible[i]))
                .bearer_auth(&token)
        })
    };
    let window = Duration::from_secs(args.duration);
    let lead = Duration::from_secs(FLOOD_LEAD_SECS);
    eprintln!("reads at {}/s: alone...", args.rate);
    let reads_alone = open_loop(&reads, args.rate, lead, window).await?;
    eprintln!("reads at {}/s: during the sign-in flood...", args.rate);
    let flood_settings = load::Settings {
        connections: args.connections,
        warmup: Duration::ZERO,
        // Past the reads' last tick, so the flood covers their whole window.
        duration: lead + window + Duration::from_secs(1),
    };
    let flood = tokio::spawn(async move { load::throughput(&ours_flood, &flood_settings).await });
    let reads_flooded = open_loop(&reads, args.rate, lead, window).await;
    let flood = flood.await.context("the flood task failed")??;
    let reads_flooded = reads_flooded?;

    let results = Results {
        command: crate::command_line(),
        date: chrono::Utc::now(),
        machine,
        postgres_version,
        args: args.clone(),
        concurrency,
        wait,
        load_before,
        load_after: sys::load_average(),
        seed_took: seeded.took,
        ours: ours_result,
        bare: bare_result,
        reads_alone,
        reads_flooded,
        flood,
    };
    println!("{}", tables(&results));
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| workspace_root().join("BENCHMARKS.md"));
    crate::report::write_section(&path, "tokens", &section(&results))?;
    eprintln!("wrote the tokens section of {}", path.display());
    Ok(())
}

/// One request's outcome: its latency from its scheduled time, or an error key and detail.
type Outcome = Result<Duration, (String, String)>;

/// `rate` requests per second of `target` on a fixed schedule, whatever the
/// answers take (open loop): `warmup` unmeasured, then `duration` measured.
/// A latency runs from the request's scheduled time, so a generator that
/// falls behind shows in it.
pub async fn open_loop(
    target: &Target,
    rate: u32,
    warmup: Duration,
    duration: Duration,
) -> anyhow::Result<LoadResult> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .build()
        .context("building the HTTP client")?;
    let period = Duration::from_secs_f64(1.0 / f64::from(rate));
    let warm_ticks = (warmup.as_secs_f64() * f64::from(rate)).round() as u64;
    let ticks = warm_ticks + (duration.as_secs_f64() * f64::from(rate)).round() as u64;
    let target = Arc::new(target.clone());
    let mut latency =
        Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).context("creating a histogram")?;
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut first_error = None;
    let mut ok = 0;
    let mut tasks: tokio::task::JoinSet<(bool, Outcome)> = tokio::task::JoinSet::new();
    let start = tokio::time::Instant::now();
    let mut cpu = None;
    let mut measured_from = Instant::now();
    let mut tally = |measured: bool, outcome: Outcome| {
        if !measured {
            return;
        }
        match outcome {
            Ok(took) => {
                ok += 1;
                latency.saturating_record(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
            }
            Err((key, detail)) => {
                *errors.entry(key).or_default() += 1;
                first_error.get_or_insert(detail);
            }
        }
    };
    for i in 0..ticks {
        let at = start + period.mul_f64(i as f64);
        let measured = i >= warm_ticks;
        if i == warm_ticks {
            cpu = Some(sys::CpuSnapshot::take());
            measured_from = Instant::now();
        }
        // Collect what finished while waiting for the tick.
        loop {
            tokio::select! {
                biased;
                Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                    let (m, outcome) = done.context("a read task failed")?;
                    tally(m, outcome);
                }
                _ = tokio::time::sleep_until(at) => break,
            }
        }
        if tasks.len() >= MAX_IN_FLIGHT {
            tally(
                measured,
                Err((
                    format!("not sent: {MAX_IN_FLIGHT} in flight"),
                    format!("{MAX_IN_FLIGHT} requests were in flight at a tick"),
                )),
            );
            continue;
        }
        let (client, target) = (client.clone(), target.clone());
        let scheduled = at.into_std();
        tasks.spawn(async move {
            let request = (target.build)(&client, rand::random());
            let outcome = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    match response.bytes().await {
                        Ok(_) if status == target.expect => Ok(scheduled.elapsed()),
                        Ok(body) => {
                            let text: String =
                                String::from_utf8_lossy(&body).chars().take(300).collect();
                            Err((
                                format!("HTTP {}", status.as_u16()),
                                format!("HTTP {}: {text}", status.as_u16()),
                            ))
                        }
                        Err(e) => Err((format!("transport: {e}"), e.to_string())),
                    }
                }
                Err(e) if e.is_timeout() => Err(("transport: timeout".to_owned(), e.to_string())),
                Err(e) => Err((format!("transport: {e}"), e.to_string())),
            };
            (measured, outcome)
        });
    }
    while let Some(done) = tasks.join_next().await {
        let (m, outcome) = done.context("a read task failed")?;
        tally(m, outcome);
    }
    let elapsed = measured_from.elapsed();
    let cpu = cpu.map(|c| c.usage_since()).unwrap_or_default();
    Ok(LoadResult {
        ok,
        errors,
        first_error,
        elapsed,
        latency,
        cpu,
    })
}

fn count(r: &LoadResult, key: &str) -> u64 {
    r.errors.get(key).copied().unwrap_or(0)
}

fn errors_cell(r: &LoadResult) -> String {
    let n = r.error_count();
    if n == 0 {
        return "0".to_owned();
    }
    let parts: Vec<String> = r.errors.iter().map(|(k, v)| format!("{v} × {k}")).collect();
    format!("{n} ({})", parts.join(", "))
}

fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        "n/a".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// Sign-ins per second per core of the bench process's CPU.
fn per_core(r: &LoadResult) -> f64 {
    r.requests_per_second() / (r.cpu.own / 100.0).max(1e-9)
}

fn tables(r: &Results) -> String {
    let a = &r.args;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "#### Sign-ins ({} connections, {} s measured after {} s warm-up, ours then bare; \
         {} verification turns, {} s wait)\n",
        a.connections,
        a.duration,
        a.warmup,
        r.concurrency,
        r.wait.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "| program | sign-ins/s (200) | bench process CPU | **sign-ins/s per core** | 200 / 503 | p50 / p99 ms (200s) | errors |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---|---:|---|");
    for (name, l) in [
        ("ours: `POST /oauth2/access_token`, password grant", &r.ours),
        (
            "bare: `POST /token`, argon2id verification under the same bound",
            &r.bare,
        ),
    ] {
        let total = l.ok + l.error_count();
        let _ = writeln!(
            s,
            "| {name} | {:.1} | {:.0}% | **{:.1}** | {} / {} | {:.2} / {:.2} | {} |",
            l.requests_per_second(),
            l.cpu.own,
            per_core(l),
            share(l.ok, total),
            share(count(l, "HTTP 503"), total),
            quantile_ms(&l.latency, 0.50),
            quantile_ms(&l.latency, 0.99),
            errors_cell(l),
        );
    }
    let _ = writeln!(
        s,
        "| **ours / bare** | {:.2} | | **{:.2}** | | | |",
        r.ours.requests_per_second() / r.bare.requests_per_second().max(1e-9),
        per_core(&r.ours) / per_core(&r.bare).max(1e-9),
    );
    let _ = writeln!(
        s,
        "\n#### `GET /v1/employees/{{id}}` as `west.hr` at {} per second (open loop), {} s measured each, alone and during a sign-in flood of ours ({} connections)\n",
        a.rate, a.duration, a.connections
    );
    let _ = writeln!(
        s,
        "| reads | answered 200 | p50 ms | p99 ms | max ms | errors | sign-ins/s meanwhile |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---|---:|");
    for (name, l, flood) in [
        ("alone", &r.reads_alone, None),
        ("during the flood", &r.reads_flooded, Some(&r.flood)),
    ] {
        let _ = writeln!(
            s,
            "| {name} | {} | {:.2} | {:.2} | {:.2} | {} | {} |",
            l.ok,
            quantile_ms(&l.latency, 0.50),
            quantile_ms(&l.latency, 0.99),
            l.latency.max() as f64 / 1000.0,
            errors_cell(l),
            flood.map_or("—".to_owned(), |f| format!(
                "{:.1} (503: {})",
                f.requests_per_second(),
                count(f, "HTTP 503")
            )),
        );
    }
    let _ = writeln!(
        s,
        "| **flooded / alone** | | **{}** | **{}** | | | |",
        ratio(
            quantile_ms(&r.reads_flooded.latency, 0.5),
            quantile_ms(&r.reads_alone.latency, 0.5)
        ),
        ratio(
            quantile_ms(&r.reads_flooded.latency, 0.99),
            quantile_ms(&r.reads_alone.latency, 0.99)
        ),
    );
    let _ = writeln!(
        s,
        "\nCPU during each measured window, in % of one core (the machine has {}, so {}% is all of it); \
         the bench process holds the program under test, for ours its outbox relay and worker, and the load generator:\n",
        r.machine.nproc,
        r.machine.nproc * 100
    );
    let _ = writeln!(
        s,
        "| window | bench process | Postgres | RabbitMQ | whole machine |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|");
    for (name, l) in [
        ("sign-in flood, ours", &r.ours),
        ("sign-in flood, bare", &r.bare),
        ("reads alone", &r.reads_alone),
        ("reads during the flood", &r.reads_flooded),
    ] {
        let c = l.cpu;
        let _ = writeln!(
            s,
            "| {name} | {:.0}% | {:.0}% | {:.0}% | {:.0}% |",
            c.own, c.postgres, c.rabbitmq, c.machine
        );
    }
    s
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "n/a".to_owned()
    }
}

const SIDES: &str = "\
- **Ours, `POST /oauth2/access_token`** (password grant, `acme-hr-portal`, `admin` with the \
right password): the form parsed; the throttles asked whether the address or the username is \
delayed (no, as no sign-in fails); admitted among at most `PASSWORD_HASH_CONCURRENCY` × 32 \
token requests in progress (beyond: 503 at once); the client's secret, verified with argon2id \
once and then remembered for a few seconds (`AUTH_CACHE_TTL_SECS`); the user read; a \
verification turn awaited for at most `PASSWORD_HASH_WAIT_SECS` (beyond: 503 with \
`Retry-After`); the password verified with argon2id (19 MiB, 2 passes, one lane) on the \
blocking pool in a memory block kept per turn; the username's failures forgotten; the grant and \
the access and refresh tokens written (their SHA-256 hashes) in one transaction; the answer.
- **Bare, `POST /token`**: the form parsed by axum; a turn of a semaphore of as many permits \
awaited for at most as long (beyond: 503); the password verified against the same argon2id hash \
(`admin`'s row of ours' database) with the crate's `verify_password` (a fresh 19 MiB block each \
time) in `spawn_blocking`; 200. No database, no token, no throttles.
- **Reads**: `GET /v1/employees/{id}` as `west.hr` (group visibility, masked SSN; see the reads \
section) of a random seeded employee, sent on a fixed schedule whatever the answers take, \
first alone and then while 64 connections flood ours' token endpoint.";

fn section(r: &Results) -> String {
    let m = &r.machine;
    let a = &r.args;
    let mut s = String::new();
    let _ = writeln!(s, "<!-- bench:tokens -->");
    let _ = writeln!(
        s,
        "## Sign-ins: the token endpoint, and reads during a sign-in flood\n"
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
        "- Setup: {}; ours (API, outbox relay and worker), the bare token endpoint and the load \
         generator run in the one `i9-bench` process (a multi-threaded Tokio runtime), as in the \
         other modes. Both bounds as ours' configuration reads them here: \
         `PASSWORD_HASH_CONCURRENCY` = {} (the number of cores), `PASSWORD_HASH_WAIT_SECS` = {}. \
         The flood is {} keep-alive connections (reqwest), one task each, sending the next \
         request as soon as the previous one is answered. Data: {} employees created in ours \
         through its API first ({:.0} s), for the reads.",
        if cfg!(debug_assertions) {
            "a debug build (not representative: use the release build of scripts/bench.sh)"
        } else {
            "release build"
        },
        r.concurrency,
        r.wait.as_secs_f64(),
        a.connections,
        a.employees,
        r.seed_took.as_secs_f64()
    );
    let _ = writeln!(s, "\n### Results\n");
    s.push_str(&tables(r));
    for (side, l) in [
        ("ours' flood", &r.ours),
        ("the bare flood", &r.bare),
        ("the reads alone", &r.reads_alone),
        ("the reads during the flood", &r.reads_flooded),
    ] {
        if let Some(e) = &l.first_error {
            let _ = writeln!(s, "\nFirst error of {side}: `{}`", e.replace('`', "'"));
        }
    }
    let _ = writeln!(s, "\n### What each side does per request\n");
    s.push_str(SIDES);
    let _ = writeln!(s);
    let _ = writeln!(s, "\n### Method notes\n");
    let _ = writeln!(
        s,
        "- Sign-ins/s = 200 answers / measured wall time; the share of 200 and 503 is of all \
         answers in the window; latencies are of the 200s. Per core = sign-ins/s ÷ the \
         `i9-bench` process's CPU (in cores) over the window: that process also holds the load \
         generator (and for ours the idle relay and worker), the same for both, small beside \
         argon2id. Ours' token rows land in Postgres, whose CPU is in the table apart."
    );
    let _ = writeln!(
        s,
        "- Reads: {} requests per second scheduled on a fixed clock ({} s unmeasured first, \
         during which the flood starts), each sent whatever the previous ones take, at most \
         {MAX_IN_FLIGHT} in flight; a latency runs from the request's scheduled time to the end \
         of its body, so queueing in the generator counts. The flood beside them starts {} s \
         before their measured window and ends 1 s after it; its sign-ins/s column counts its \
         whole run.",
        a.rate, FLOOD_LEAD_SECS, FLOOD_LEAD_SECS
    );
    let _ = writeln!(
        s,
        "- Only right passwords: wrong ones are throttled per username and address (429), \
         right ones are not. Each of ours' sign-ins adds a grant and two token rows."
    );
    let _ = writeln!(s, "<!-- /bench:tokens -->");
    s
}
