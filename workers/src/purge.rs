//! Purging rows that only matter for a while, so that no table grows with
//! traffic alone (docs/operations.md, "Purging"). Every worker process runs
//! [`run`]; a Postgres advisory lock lets one purge at a time. Each table is
//! purged in batches, so no statement holds many row locks for long.
//!
//! What goes, and when:
//! - `idempotency_keys` older than the idempotency retention (24 h: the
//!   replay window of the API, never longer: an older record is never
//!   replayed, so it is not kept);
//! - `access_tokens`, `refresh_tokens`, `password_set_tokens` and the
//!   employees' page sessions (`account_sessions`) past their expiry, and sign-ins (`oauth_grants`) with no token left, once their
//!   refresh lifetime is over;
//! - `throttle` rows whose failures are all forgotten (`forgotten_at`)
//!   and whose delay is over;
//! - `processed_jobs` done (or claimed and abandoned) longer ago than their
//!   retention (30 days: a copy of a job older than that would act again);
//! - `job_outbox` rows published longer ago than their retention (7 days);
//! - `previous_signing_secrets` whose overlap has ended (they sign nothing);
//! - `processes` without a heartbeat for 90 s (gone without deleting their
//!   row: `common/src/processes.rs`).
//!
//! Records (employees, I-9s, partner events and their attempts, the audit
//! log) are never purged here.

use std::{collections::BTreeMap, time::Duration};

use i9_common::{processes, retry::RetryPolicy, Config};
use sqlx::PgPool;
use tokio::sync::watch;

/// Rows deleted per statement.
const BATCH: i64 = 5000;
/// Statements per table per round at most (a backlog finishes next round).
const MAX_BATCHES: usize = 200;
pub use i9_common::config::IDEMPOTENCY_WINDOW;
/// The advisory lock that lets one worker purge at a time.
pub const LOCK_KEY: i64 = 0x0069_3970_7572_6765; // "i9purge"

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub interval: Duration,
    pub idempotency: Duration,
    pub processed_jobs: Duration,
    pub outbox: Duration,
    pub refresh_tokens: Duration,
}

impl Retention {
    pub fn from_config(config: &Config) -> Self {
        Self {
            interval: config.purge_interval,
            idempotency: config.retention_idempotency.min(IDEMPOTENCY_WINDOW),
            processed_jobs: config.retention_processed_jobs,
            outbox: config.retention_outbox,
            refresh_tokens: config.refresh_token_ttl,
        }
    }
}

/// What a done-record must outlive beyond the longest retry schedule: copies
/// of a job replayed from the dead-letter queue, or redelivered late.
pub const PROCESSED_JOBS_MARGIN: Duration = Duration::from_secs(24 * 3600);

impl Retention {
    /// Refuse a `processed_jobs` retention shorter than the longest retry
    /// schedule of `policies` (its jittered upper bound) plus
    /// [`PROCESSED_JOBS_MARGIN`]: a copy of a job whose record was purged
    /// takes effect again (docs/operations.md, "Purging").
    pub fn check(&self, policies: &[RetryPolicy]) -> anyhow::Result<()> {
        let longest = policies
            .iter()
            .map(|p| {
                let secs = p.total_wait().as_secs_f64() * (1.0 + p.jitter_fraction());
                Duration::from_secs(secs.round() as u64)
            })
            .max()
            .unwrap_or_default();
        let least = longest + PROCESSED_JOBS_MARGIN;
        if self.processed_jobs < least {
            let secs = least.as_secs();
            anyhow::bail!(
                "RETENTION_PROCESSED_JOBS_SECS ({}) is too short: a copy of a job older than its \
                 done-record would take effect again (a second email or callback). Keep it at \
                 least {secs} s: the longest retry schedule ({} h) plus a day; the default is \
                 2592000 (30 days)",
                self.processed_jobs.as_secs(),
                (longest.as_secs_f64() / 3600.0).ceil(),
            );
        }
        Ok(())
    }
}

/// The tables one round purges, in this order.
#[derive(Debug, Clone, Copy)]
enum Table {
    IdempotencyKeys,
    AccessTokens,
    RefreshTokens,
    OauthGrants,
    PasswordSetTokens,
    AccountSessions,
    PreviousSigningSecrets,
    Throttle,
    ProcessedJobs,
    Processes,
    JobOutbox,
}

const TABLES: [Table; 11] = [
    Table::IdempotencyKeys,
    Table::AccessTokens,
    Table::RefreshTokens,
    Table::OauthGrants,
    Table::PasswordSetTokens,
    Table::AccountSessions,
    Table::PreviousSigningSecrets,
    Table::Throttle,
    Table::ProcessedJobs,
    Table::Processes,
    Table::JobOutbox,
];

impl Table {
    fn name(self) -> &'static str {
        match self {
            Self::IdempotencyKeys => "idempotency_keys",
            Self::AccessTokens => "access_tokens",
            Self::RefreshTokens => "refresh_tokens",
            Self::OauthGrants => "oauth_grants",
            Self::PasswordSetTokens => "password_set_tokens",
            Self::AccountSessions => "account_sessions",
            Self::PreviousSigningSecrets => "previous_signing_secrets",
            Self::Throttle => "throttle",
            Self::ProcessedJobs => "processed_jobs",
            Self::Processes => "processes",
            Self::JobOutbox => "job_outbox",
        }
    }

    /// How long an expired row is kept.
    fn retention(self, r: &Retention) -> Duration {
        match self {
            Self::IdempotencyKeys => r.idempotency,
            Self::AccessTokens => Duration::ZERO,
            Self::RefreshTokens => Duration::ZERO,
            Self::OauthGrants => r.refresh_tokens,
            Self::PasswordSetTokens => Duration::ZERO,
            Self::AccountSessions => Duration::ZERO,
            Self::PreviousSigningSecrets => Duration::ZERO,
            Self::Throttle => Duration::ZERO,
            Self::ProcessedJobs => r.processed_jobs,
            Self::Processes => processes::STALE_AFTER,
            Self::JobOutbox => r.outbox,
        }
    }

    /// Delete one batch of expired rows (`$1` the retention in seconds, `$2`
    /// the batch size); returns how many.
    async fn delete_batch(self, pool: &PgPool, retention: Duration) -> Result<u64, sqlx::Error> {
        let secs = retention.as_secs_f64();
        let done = match self {
            Self::IdempotencyKeys => {
                sqlx::query!(
                    "DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM idempotency_keys
                     WHERE created_at < now() - make_interval(secs => $1) LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
            Self::AccessTokens => {
                sqlx::query!(
                    "DELETE FROM access_tokens WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM access_tokens
                     WHERE expires_at < now() - make_interval(secs => $1) LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
            Self::RefreshTokens => {
                sqlx::query!(
                    "DELETE FROM refresh_tokens WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM refresh_tokens
                     WHERE expires_at < now() - make_interval(secs => $1) LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
            // A sign-in with no token left, older than a refresh token lives, can
            // issue nothing more.
            Self::OauthGrants => {
                sqlx::query!(
                    "DELETE FROM oauth_grants WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM oauth_grants o
                     WHERE o.created_at < now() - make_interval(secs => $1)
                       AND NOT EXISTS (SELECT 1 FROM access_tokens a WHERE a.grant_id = o.id)
                       AND NOT EXISTS (SELECT 1 FROM refresh_tokens t WHERE t.grant_id = o.id)
                     LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
            Self::PasswordSetTokens => {
                sqlx::query!(
                    "DELETE FROM password_set_tokens WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM password_set_tokens
                     WHERE expires_at < now() - make_interval(secs => $1) LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
            // Past its longest life a session is over, however it was used.
            Self::AccountSessions => {
                sqlx::query!(
                    "DELETE FROM account_sessions WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM account_sessions
                     WHERE expires_at < now() - make_interval(secs => $1) LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
            Self::PreviousSigningSecrets => {
                sqlx::query!(
                    "DELETE FROM previous_signing_secrets WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM previous_signing_secrets
                     WHERE valid_until < now() - make_interval(secs => $1) LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
            Self::Throttle => {
                sqlx::query!(
                    "DELETE FROM throttle WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM throttle
                     WHERE forgotten_at < now() - make_interval(secs => $1)
                       AND (blocked_until IS NULL OR blocked_until < now())
                     LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
            Self::ProcessedJobs => {
                sqlx::query!(
                    "DELETE FROM processed_jobs WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM processed_jobs
                     WHERE COALESCE(processed_at, claimed_until) < now() - make_interval(secs => $1)
                     LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
            Self::Processes => {
                sqlx::query!(
                    "DELETE FROM processes WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM processes
                     WHERE heartbeat_at < now() - make_interval(secs => $1) LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
            // Never a job not yet published.
            Self::JobOutbox => {
                sqlx::query!(
                    "DELETE FROM job_outbox WHERE ctid = ANY (ARRAY(
                     SELECT ctid FROM job_outbox
                     WHERE published_at < now() - make_interval(secs => $1) LIMIT $2))",
                    secs,
                    BATCH,
                )
                .execute(pool)
                .await?
            }
        };
        Ok(done.rows_affected())
    }
}

/// Rows deleted by one round, by table.
pub type Purged = BTreeMap<&'static str, u64>;

/// Purge every `retention.interval` until `shutdown`, the first round soon
/// after start.
pub async fn run(pool: PgPool, retention: Retention, mut shutdown: watch::Receiver<bool>) {
    let mut wait = Duration::from_secs(10).min(retention.interval);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => return,
        }
        wait = retention.interval;
        match purge_if_first(&pool, &retention).await {
            Ok(Some(p)) if p.values().any(|n| *n > 0) => {
                tracing::info!(?p, "purged expired rows")
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "purging expired rows failed; trying again next round")
            }
        }
    }
}

/// One round, unless another worker is purging now (`None`).
pub async fn purge_if_first(
    pool: &PgPool,
    retention: &Retention,
) -> Result<Option<Purged>, sqlx::Error> {
    let mut lock = pool.acquire().await?;
    let got = sqlx::query_scalar!(r#"SELECT pg_try_advisory_lock($1) AS "got!""#, LOCK_KEY)
        .fetch_one(&mut *lock)
        .await?;
    if !got {
        return Ok(None);
    }
    let purged = purge(pool, retention).await;
    let _ = sqlx::query_scalar!("SELECT pg_advisory_unlock($1)", LOCK_KEY)
        .fetch_one(&mut *lock)
        .await;
    purged.map(Some)
}

/// Delete, `BATCH` rows at a time, the expired rows of `table`.
async fn batches(pool: &PgPool, table: Table, retention: Duration) -> Result<u64, sqlx::Error> {
    let mut deleted = 0;
    for _ in 0..MAX_BATCHES {
        let n = table.delete_batch(pool, retention).await?;
        deleted += n;
        if n < BATCH as u64 {
            break;
        }
    }
    Ok(deleted)
}

/// One round over every table.
pub async fn purge(pool: &PgPool, retention: &Retention) -> Result<Purged, sqlx::Error> {
    let mut purged = Purged::new();
    for table in TABLES {
        purged.insert(
            table.name(),
            batches(pool, table, table.retention(retention)).await?,
        );
    }
    Ok(purged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_records_are_kept_at_most_the_replay_window() {
        let mut config = Config::for_tests("postgres://127.0.0.1/unused");
        config.retention_idempotency = Duration::from_secs(48 * 3600);
        assert_eq!(
            Retention::from_config(&config).idempotency,
            IDEMPOTENCY_WINDOW
        );
        config.retention_idempotency = Duration::from_secs(3600);
        assert_eq!(
            Retention::from_config(&config).idempotency,
            Duration::from_secs(3600)
        );
    }

    #[test]
    fn a_processed_jobs_retention_shorter_than_the_retry_schedules_is_refused() {
        let policies = [RetryPolicy::JOBS, RetryPolicy::CALLBACKS];
        let mut config = Config::for_tests("postgres://127.0.0.1/unused");
        assert!(Retention::from_config(&config).check(&policies).is_ok());
        // The callbacks' 20.4 h, plus 20 % jitter, plus a day.
        let least = 73_515 * 12 / 10 + 24 * 3600;
        for (secs, ok) in [(60, false), (least - 1, false), (least, true)] {
            config.retention_processed_jobs = Duration::from_secs(secs);
            let checked = Retention::from_config(&config).check(&policies);
            assert_eq!(checked.is_ok(), ok, "{secs}: {checked:?}");
            if let Err(e) = checked {
                let e = e.to_string();
                assert!(
                    e.starts_with(&format!(
                        "RETENTION_PROCESSED_JOBS_SECS ({secs}) is too short"
                    )) && e.contains(&format!("at least {least} s")),
                    "{e}"
                );
            }
        }
        // Shorter schedules need less.
        config.retention_processed_jobs = Duration::from_secs(2 * 24 * 3600 - 1);
        let short = RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::JOBS
        };
        assert!(Retention::from_config(&config).check(&[short]).is_ok());
    }
}
