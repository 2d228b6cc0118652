//! Effects outside the database (an email handed to the SMTP server, a
//! callback a partner answered 2xx) happen once, whatever copies of their job
//! arrive: before the effect a handler claims its key in `processed_jobs`
//! for a while (a lease), and after it records it done, in a transaction of
//! its own, retried while the database is unavailable.
//!
//! A second copy that arrives while the first holds the claim is told
//! [`Claim::Busy`] and waits for the claim to lapse (without using one of
//! its attempts); one that arrives after is told [`Claim::Done`] and skipped
//! with a log line. The one window left is a crash
//! after the effect and before its record: the claim then lapses and the
//! next copy repeats the effect (docs/operations.md, "At least once").

use std::{future::Future, time::Duration};

use backon::{ExponentialBuilder, Retryable as _};
use i9_common::db::is_unavailable;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{JobError, JobResult};

/// How long an email's claim holds: beyond the mailer's own 60 s limit.
pub const EMAIL_HOLD: Duration = Duration::from_secs(120);
/// How long a callback's claim holds: beyond its 15 s request limit.
pub const CALLBACK_HOLD: Duration = Duration::from_secs(60);
/// How long a handler keeps trying to record an effect that happened.
pub const RECORD_PATIENCE: Duration = Duration::from_secs(300);

/// Claim `key` before an effect: `Ok(true)` to go ahead; `Ok(false)` when it
/// is done already (logged: the copy is skipped); [`JobError::Busy`] while
/// another copy holds it.
pub async fn begin(pool: &PgPool, key: Uuid, kind: &str, hold: Duration) -> Result<bool, JobError> {
    match claim(pool, key, kind, hold).await? {
        Claim::Mine => Ok(true),
        Claim::Done => {
            super::skipped(kind, key);
            Ok(false)
        }
        Claim::Busy { lapses_in } => Err(JobError::Busy { lapses_in }),
    }
}

/// After an effect claimed with [`begin`]: record it done, or release the
/// claim when it failed. A success whose record cannot be written even after
/// [`RECORD_PATIENCE`] is still a success (logged): retrying would repeat it.
pub async fn finish(pool: &PgPool, key: Uuid, kind: &str, outcome: JobResult) -> JobResult {
    match outcome {
        Ok(()) => {
            let recorded = until_recorded(RECORD_PATIENCE, || async {
                let mut tx = pool.begin().await?;
                done(&mut tx, key, kind).await?;
                tx.commit().await
            })
            .await;
            if let Err(e) = recorded {
                tracing::error!(kind, %key, error = %e, "the effect happened but could not be recorded; a later copy of this job would repeat it");
            }
            Ok(())
        }
        Err(e) => {
            release(pool, key).await;
            Err(e)
        }
    }
}

/// The outcome of a claim on an effect's key.
#[derive(Debug)]
pub enum Claim {
    /// This copy carries the effect out; record it with [`done`].
    Mine,
    /// The effect took place already.
    Done,
    /// Another copy is carrying it out now (or its worker died doing so),
    /// and its claim lapses in `lapses_in` at the latest.
    Busy { lapses_in: Duration },
}

/// A claim held by someone else: whether its effect is done, and when it
/// lapses.
struct Held {
    done: bool,
    lapses_in_secs: f64,
}

/// Claim `key` (the job id, or for a callback the event id) for `hold`,
/// which must outlast the effect's own time limit.
pub async fn claim(
    pool: &PgPool,
    key: Uuid,
    kind: &str,
    hold: Duration,
) -> Result<Claim, sqlx::Error> {
    let claimed = sqlx::query_scalar!(
        r#"INSERT INTO processed_jobs AS p (job_id, kind, processed_at, claimed_until)
         VALUES ($1, $2, NULL, now() + make_interval(secs => $3))
         ON CONFLICT (job_id) DO UPDATE SET claimed_until = EXCLUDED.claimed_until
           WHERE p.processed_at IS NULL AND p.claimed_until <= now()
         RETURNING true AS "claimed!""#,
        key,
        kind,
        hold.as_secs_f64(),
    )
    .fetch_optional(pool)
    .await?;
    if claimed.is_some() {
        return Ok(Claim::Mine);
    }
    let held = sqlx::query_as!(
        Held,
        r#"SELECT processed_at IS NOT NULL AS "done!",
                GREATEST(extract(epoch FROM claimed_until - now()), 0)::float8 AS "lapses_in_secs!"
         FROM processed_jobs WHERE job_id = $1"#,
        key,
    )
    .fetch_optional(pool)
    .await?;
    Ok(match held {
        Some(Held { done: true, .. }) => Claim::Done,
        Some(Held {
            done: false,
            lapses_in_secs: secs,
        }) => Claim::Busy {
            lapses_in: Duration::from_secs_f64(secs.clamp(0.0, hold.as_secs_f64())),
        },
        // Purged between the two statements: as good as lapsed.
        None => Claim::Busy {
            lapses_in: Duration::ZERO,
        },
    })
}

/// Give up a claim after a failed attempt, so the retry need not wait for it
/// to lapse. Best effort: a claim not released lapses by itself.
pub async fn release(pool: &PgPool, key: Uuid) {
    let _ = sqlx::query!(
        "UPDATE processed_jobs SET claimed_until = now() WHERE job_id = $1 AND processed_at IS NULL",
        key,
    )
    .execute(pool)
    .await;
}

/// Mark `key` done, in the caller's transaction (with the effect's other records).
pub async fn done(conn: &mut PgConnection, key: Uuid, kind: &str) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO processed_jobs (job_id, kind, processed_at) VALUES ($1, $2, now())
         ON CONFLICT (job_id) DO UPDATE SET processed_at = now(), claimed_until = NULL
           WHERE processed_jobs.processed_at IS NULL",
        key,
        kind,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Run `record` (a write after an effect that has happened) until it
/// succeeds: retried while the database is unavailable, for up to `patience`,
/// so that a database restart does not turn into a repeated effect.
pub async fn until_recorded<F, Fut>(patience: Duration, record: F) -> Result<(), sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), sqlx::Error>>,
{
    record
        .retry(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(100))
                .with_max_delay(Duration::from_secs(2))
                .with_total_delay(Some(patience))
                .without_max_times(),
        )
        .when(is_unavailable)
        .notify(|e, wait| {
            tracing::warn!(error = %e, ?wait, "the effect happened but cannot be recorded yet; retrying")
        })
        .await
}
