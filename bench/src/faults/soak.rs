//! The soak: the suite's load with no fault for a long while, sampling the
//! row counts of the tables that only matter for a while. With the worker's
//! purge (short retentions, passed by environment) they must level off.

use std::time::{Duration, Instant};

use super::{
    check::{self, Row},
    infra::Infra,
    phase::{Env, Stack},
    procs::Binaries,
    sinks::Sinks,
    traffic::Traffic,
    Phase, Settings,
};

/// The sampled tables, in the order of [`COUNTS`].
pub const TABLES: [&str; 9] = [
    "idempotency_keys",
    "access_tokens",
    "refresh_tokens",
    "oauth_grants",
    "throttle",
    "processed_jobs",
    "job_outbox",
    "password_set_tokens",
    "callback_attempts",
];

/// Sampled tables that are records, never purged: they grow with the
/// events they record (a callback attempt per delivery), not with time alone.
pub const RECORDS: [&str; 1] = ["callback_attempts"];

const COUNTS: &str =
    "SELECT (SELECT count(*) FROM idempotency_keys), (SELECT count(*) FROM access_tokens),
       (SELECT count(*) FROM refresh_tokens), (SELECT count(*) FROM oauth_grants),
       (SELECT count(*) FROM throttle), (SELECT count(*) FROM processed_jobs),
       (SELECT count(*) FROM job_outbox), (SELECT count(*) FROM password_set_tokens),
       (SELECT count(*) FROM callback_attempts)";

/// The service's settings for the soak: the purge's, and lifetimes short
/// enough that expiry happens within the soak.
pub fn env() -> Env {
    [
        ("PURGE_INTERVAL_SECS", "30"),
        ("RETENTION_IDEMPOTENCY_SECS", "120"),
        ("RETENTION_PROCESSED_JOBS_SECS", "120"),
        ("RETENTION_OUTBOX_SECS", "120"),
        ("ACCESS_TOKEN_TTL_SECS", "60"),
        ("REFRESH_TOKEN_TTL_SECS", "120"),
        ("PASSWORD_LINK_TTL_SECS", "120"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

pub struct Sample {
    pub secs: u64,
    pub counts: Option<[i64; 9]>,
}

/// Whether a table's count levelled off.
pub enum Verdict {
    Levelled,
    Growing { last_third: i64 },
    TooShort,
}

pub struct SoakResult {
    pub row: Row,
    pub samples: Vec<Sample>,
    pub verdicts: Vec<Verdict>,
}

pub async fn run(
    settings: &Settings,
    infra: &mut Infra,
    bins: &Binaries,
    sinks: &Sinks,
) -> anyhow::Result<SoakResult> {
    sinks.reset();
    let stack = Stack::start(
        Phase::Soak,
        infra,
        bins,
        sinks,
        env(),
        settings.runaway_limit,
    )
    .await?;
    let clock = check::Clock::now();
    let traffic = Traffic::start(
        &stack.target(&check::tag_of(Phase::Soak)),
        settings.clients,
        settings.rate,
    )?;
    let start = Instant::now();
    let mut samples = Vec::new();
    loop {
        let counts = sqlx::query_as::<_, (i64, i64, i64, i64, i64, i64, i64, i64, i64)>(COUNTS)
            .fetch_one(&stack.pool)
            .await
            .ok()
            .map(|c| [c.0, c.1, c.2, c.3, c.4, c.5, c.6, c.7, c.8]);
        let secs = start.elapsed().as_secs();
        eprintln!("faults: soak {secs:>4} s: {counts:?}");
        samples.push(Sample { secs, counts });
        if start.elapsed() + Duration::from_millis(500) >= settings.soak
            || stack.runaway.load(std::sync::atomic::Ordering::SeqCst)
        {
            break;
        }
        let next = settings
            .soak_sample
            .min(settings.soak.saturating_sub(start.elapsed()));
        tokio::time::sleep(next).await;
    }
    let end = Instant::now();
    let log = traffic.stop().await;
    let drain = check::drain(&stack, infra, sinks, settings.drain_timeout).await;
    let row = check::tally(
        Phase::Soak,
        settings.soak.as_secs(),
        &stack,
        &log,
        sinks,
        check::Window {
            clock,
            fault_start: end,
            fault_end: end,
        },
        drain,
        None,
    )
    .await;
    stack.stop(infra).await;
    let verdicts = (0..TABLES.len()).map(|i| verdict(&samples, i)).collect();
    Ok(SoakResult {
        row: row?,
        samples,
        verdicts,
    })
}

/// Levelled: the highest count of the last third is at most 20 % (and 5 rows)
/// above the highest of the middle third. A purge every 30 s makes the count
/// saw-tooth; a table with no purge grows about 50 % from one to the other.
fn verdict(samples: &[Sample], table: usize) -> Verdict {
    let values: Vec<i64> = samples
        .iter()
        .filter_map(|s| s.counts.map(|c| c[table]))
        .collect();
    if values.len() < 6 {
        return Verdict::TooShort;
    }
    let third = values.len() / 3;
    let middle = values[third..2 * third].iter().copied().max().unwrap_or(0);
    let last = values[2 * third..].iter().copied().max().unwrap_or(0);
    if last as f64 <= middle as f64 * 1.2 + 5.0 {
        Verdict::Levelled
    } else {
        Verdict::Growing {
            last_third: last - middle,
        }
    }
}
