//! The transactional outbox: a job is recorded in the same transaction as
//! the write that causes it, and a relay ([`crate::relay`]) publishes it to
//! RabbitMQ after commit. `NOTIFY` wakes the relays at commit.

use sqlx::PgConnection;
use uuid::Uuid;

use crate::jobs::{Envelope, Job, ENVELOPE_VERSION};

pub const NOTIFY_CHANNEL: &str = "i9_outbox";

/// A new job's envelope, with a fresh job id.
pub fn envelope(job: Job) -> Envelope {
    Envelope {
        version: ENVELOPE_VERSION,
        job_id: Uuid::new_v4(),
        job,
    }
}

/// Record `job` in the caller's transaction; returns its job id.
pub async fn enqueue(tx: &mut PgConnection, job: Job) -> Result<Uuid, sqlx::Error> {
    let envelope = envelope(job);
    sqlx::query("INSERT INTO job_outbox (job_id, kind, payload) VALUES ($1, $2, $3)")
        .bind(envelope.job_id)
        .bind(envelope.job.kind().name())
        .bind(sqlx::types::Json(&envelope))
        .execute(&mut *tx)
        .await?;
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(NOTIFY_CHANNEL)
        .execute(&mut *tx)
        .await?;
    Ok(envelope.job_id)
}

/// What waits in the outbox: how many jobs, how long the oldest has waited
/// (seconds), and the relay's last error about one of them.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Backlog {
    pub jobs: i64,
    pub oldest_secs: f64,
    pub last_error: Option<String>,
}

pub async fn backlog(pool: &sqlx::PgPool) -> Result<Backlog, sqlx::Error> {
    sqlx::query_as(
        "SELECT count(*) AS jobs,
                COALESCE(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest_secs,
                (SELECT last_error FROM job_outbox
                 WHERE published_at IS NULL AND last_error IS NOT NULL
                 ORDER BY id DESC LIMIT 1) AS last_error
         FROM job_outbox WHERE published_at IS NULL",
    )
    .fetch_one(pool)
    .await
}
