//! `i9-bench growth`: the read and write rows of `reads` and `writes` on the
//! seeded (small) tables, then again after [`loader`] grew ours' database
//! (and the bare program's tables) by `--rows` employees with their I-9s;
//! and the plan of every list query the API runs, for every filter it
//! accepts, on the large tables ([`explain`]). Writes the `growth` section
//! of `BENCHMARKS.md`.

mod explain;
mod loader;
mod report;

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use crate::{
    bare::Bare,
    load::{self, ProfileIds, Target},
    modes,
    ours::Ours,
    report::{Row, RowKind},
    seed::Seeded,
    sys, Args, Cleanup,
};

#[derive(clap::Args, Debug, Clone)]
pub struct GrowthArgs {
    #[command(flatten)]
    pub bench: Args,
    /// Employees (each with an I-9) the loader adds to ours' database (and
    /// rows to the bare program's tables) before the second measurement.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// The server's log file, read back for the plans when Postgres's own
    /// log collector is off (default: /var/log/postgresql/postgresql-<major>-main.log).
    #[arg(long)]
    pub postgres_log: Option<String>,
    /// Leave out the plans of the lists.
    #[arg(long)]
    pub no_explain: bool,
}

pub async fn main(args: GrowthArgs) -> anyhow::Result<()> {
    args.bench.check()?;
    if !(1_000..=5_000_000).contains(&args.rows) {
        bail!("--rows must be 1000..=5000000");
    }
    let mut cleanup = Cleanup::new();
    let result = tokio::select! {
        r = run(&args, &mut cleanup) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    cleanup.run().await;
    result
}

/// One row measured at both sizes.
pub struct Grown {
    pub small: Row,
    pub large: Row,
}

/// The reads and then the writes, each row ours then bare (the partner
/// operation bare first, as `writes` does).
async fn measure_all(
    args: &Args,
    ours: &Ours,
    bare: &Bare,
    seeded: &Seeded,
    ids: &std::sync::Arc<ProfileIds>,
) -> anyhow::Result<Vec<Row>> {
    let settings = load::Settings {
        connections: args.connections,
        warmup: Duration::from_secs(args.warmup),
        duration: Duration::from_secs(args.duration),
    };
    let mut targets: Vec<(RowKind, Target, Target)> = modes::read_targets(ours, bare, seeded);
    targets.extend(modes::write_targets(ours, bare, seeded, ids));
    let mut rows = Vec::new();
    for (kind, o, b) in targets {
        if kind == RowKind::PartnerPush {
            eprintln!("{}: bare...", kind.title());
            let bare_result = load::throughput(&b, &settings).await?;
            eprintln!("{}: ours...", kind.title());
            let ours_result = load::throughput(&o, &settings).await?;
            rows.push(Row {
                kind,
                ours: ours_result,
                bare: bare_result,
            });
        } else {
            rows.push(modes::measure(&settings, kind, o, b).await?);
        }
    }
    Ok(rows)
}

/// Wait (bounded) until ours' outbox is relayed and the worker idle, so one
/// phase's leftover work does not run in the next one's window.
async fn settle(ours: &Ours) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let pending: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM job_outbox WHERE published_at IS NULL)
                  + (SELECT count(*) FROM i9_requests WHERE i9_id IS NULL)",
        )
        .fetch_one(&ours.poll_pool)
        .await
        .context("reading the outbox")?;
        if pending == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            eprintln!("settle: {pending} jobs still pending after 300 s; going on");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn table_sizes(ours: &Ours) -> anyhow::Result<Vec<(String, i64, i64)>> {
    Ok(sqlx::query_as(
        "SELECT c.relname::TEXT, c.reltuples::BIGINT, pg_total_relation_size(c.oid)
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind = 'r'
           AND c.relname IN ('employees', 'employment_periods', 'i9s', 'i9_requests', 'audit_log',
                             'everify_cases', 'legal_holds')
         ORDER BY pg_total_relation_size(c.oid) DESC",
    )
    .fetch_all(&ours.poll_pool)
    .await?)
}

/// The median time of `n` sequential unfiltered list requests.
async fn unfiltered(ours: &Ours, path: &str, token: &str, n: usize) -> anyhow::Result<f64> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()?;
    let mut times = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let r = client
            .get(format!("{}{path}", ours.base_url))
            .bearer_auth(token)
            .send()
            .await?;
        let status = r.status();
        r.bytes().await?;
        if !status.is_success() {
            bail!("GET {path}: HTTP {status}");
        }
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

pub struct Unfiltered {
    pub path: &'static str,
    pub caller: &'static str,
    pub small_ms: f64,
    pub large_ms: f64,
}

async fn unfiltered_all(ours: &Ours) -> anyhow::Result<Vec<(&'static str, &'static str, f64)>> {
    let mut out = Vec::new();
    for path in ["/v1/employees", "/v1/i9s", "/v1/everify-cases"] {
        for (caller, token) in [("west.hr", &ours.tokens.hr), ("admin", &ours.tokens.admin)] {
            let ms = match unfiltered(ours, path, token, 5).await {
                Ok(ms) => ms,
                Err(e) => {
                    eprintln!("unfiltered {path} as {caller}: {e:#}");
                    f64::NAN
                }
            };
            out.push((path, caller, ms));
        }
    }
    Ok(out)
}

async fn run(args: &GrowthArgs, cleanup: &mut Cleanup) -> anyhow::Result<()> {
    let a = &args.bench;
    let load_before = sys::load_average();
    let machine = sys::machine_facts().await;
    let run_id = uuid::Uuid::new_v4().simple().to_string();

    eprintln!("starting our API, relay and worker...");
    let ours = crate::ours::start(&run_id, a.i9_concurrency, cleanup).await?;
    let postgres_version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(&ours.poll_pool)
        .await?;
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
    .await?;
    eprintln!("starting the bare program...");
    let bare_db = format!("i9_bench_{run_id}_bare");
    let bare = crate::bare::start(
        &run_id,
        a.i9_concurrency,
        &ours.database_url,
        groups,
        cleanup,
    )
    .await?;
    eprintln!(
        "seeding {} employees with their I-9s through our API...",
        a.employees
    );
    let seeded = crate::seed::seed(&ours, a.employees).await?;
    let copied = bare.copy_employees(&ours.poll_pool).await?;
    eprintln!(
        "seeded in {:.1} s; {copied} rows in the bare program's wide table",
        seeded.took.as_secs_f64()
    );
    let seeded_at: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(&ours.poll_pool)
        .await?;
    let ids = ProfileIds::new(&run_id);

    eprintln!("small tables: measuring...");
    let small = measure_all(a, &ours, &bare, &seeded, &ids).await?;
    settle(&ours).await?;
    let unfiltered_small = unfiltered_all(&ours).await?;
    let small_sizes = table_sizes(&ours).await?;

    eprintln!(
        "loading {} employees with their I-9s into ours...",
        args.rows
    );
    let ours_load = loader::grow_ours(&ours.database_url, args.rows, seeded_at).await?;
    eprintln!("loaded ours in {:.1} s", ours_load.total.as_secs_f64());
    let bare_url = match ours.database_url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/{bare_db}"),
        None => bail!("ours' database URL without a path"),
    };
    eprintln!("growing the bare program's tables by {} rows...", args.rows);
    let bare_load = loader::grow_bare(&bare_url, args.rows).await?;
    eprintln!("loaded bare in {:.1} s", bare_load.total.as_secs_f64());
    let large_sizes = table_sizes(&ours).await?;

    eprintln!("large tables: measuring...");
    let large = measure_all(a, &ours, &bare, &seeded, &ids).await?;
    settle(&ours).await?;
    let unfiltered_large = unfiltered_all(&ours).await?;
    let unfiltered: Vec<Unfiltered> = unfiltered_small
        .iter()
        .zip(&unfiltered_large)
        .map(|(s, l)| Unfiltered {
            path: s.0,
            caller: s.1,
            small_ms: s.2,
            large_ms: l.2,
        })
        .collect();

    let explained = if args.no_explain {
        None
    } else {
        eprintln!("explaining every list and filter...");
        let probes = explain::probes(&ours.poll_pool).await?;
        Some(explain::explain(&ours, &probes, args.postgres_log.as_deref()).await?)
    };

    let rows: Vec<Grown> = small
        .into_iter()
        .zip(large)
        .map(|(small, large)| Grown { small, large })
        .collect();
    let results = report::Results {
        command: crate::command_line(),
        date: chrono::Utc::now(),
        machine,
        postgres_version,
        args: args.clone(),
        load_before,
        load_after: sys::load_average(),
        seed_took: seeded.took,
        ours_load,
        bare_load,
        small_sizes,
        large_sizes,
        rows,
        unfiltered,
        explained,
    };
    println!("{}", report::tables(&results));
    let path = a
        .output
        .clone()
        .unwrap_or_else(|| crate::workspace_root().join("BENCHMARKS.md"));
    crate::report::write_section(&path, "growth", &report::section(&results))?;
    eprintln!("wrote the growth section of {}", path.display());
    Ok(())
}
