//! The transactional outbox: a job is recorded in the same transaction as
//! the write that causes it, and a relay ([`crate::relay`]) publishes it to
//! RabbitMQ after commit. `NOTIFY` wakes the relays at commit.
//!
//! Every job is recorded here, by [`enqueue_envelope`] or [`push_ctes`],
//! with the trace context and request id of the span recording it
//! (`job_outbox.trace`), which the relay publishes as the message's headers.

use sqlx::{types::Json, PgConnection};
use uuid::Uuid;

use crate::{
    jobs::{Envelope, Job, ENVELOPE_VERSION},
    trace,
};

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
    enqueue_envelope(tx, &envelope).await?;
    Ok(envelope.job_id)
}

/// The trace context and request id a job recorded now carries on (its
/// `job_outbox.trace`): those of the current span, the request's or the
/// job's that records it (`crate::trace`).
fn trace() -> Option<Json<trace::Fields>> {
    trace::current_fields().map(Json)
}

/// Record `envelope` in the caller's transaction.
pub async fn enqueue_envelope(
    tx: &mut PgConnection,
    envelope: &Envelope,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO job_outbox (job_id, kind, payload, trace) VALUES ($1, $2, $3, $4)",
        envelope.job_id,
        envelope.job.kind().name(),
        Json(envelope) as _,
        trace() as _,
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("SELECT pg_notify($1, '')", NOTIFY_CHANNEL)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// [`enqueue_envelope`] as parts of a larger statement: `, o AS (INSERT
/// ... SELECT ... FROM from)` records the job once per row of the CTE
/// `from`, and `n` wakes the relays (the statement must read `n`, e.g.
/// `(SELECT count(*) FROM n)`, for Postgres to run it).
pub fn push_ctes(q: &mut sqlx::QueryBuilder<'_, sqlx::Postgres>, envelope: &Envelope, from: &str) {
    q.push(", o AS (INSERT INTO job_outbox (job_id, kind, payload, trace) SELECT ");
    q.push_bind(envelope.job_id).push(", ");
    q.push_bind(envelope.job.kind().name()).push(", ");
    q.push_bind(Json(envelope.clone())).push(", ");
    q.push_bind(trace());
    q.push(" FROM ").push(from).push(")");
    q.push(", n AS (SELECT pg_notify(")
        .push_bind(NOTIFY_CHANNEL)
        .push(", ''))");
}

/// What waits in the outbox: how many jobs, how long the oldest has waited
/// (seconds), and the relay's last error about one of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Backlog {
    pub jobs: i64,
    pub oldest_secs: f64,
    pub last_error: Option<String>,
}

pub async fn backlog(pool: &sqlx::PgPool) -> Result<Backlog, sqlx::Error> {
    sqlx::query_as!(
        Backlog,
        r#"SELECT count(*) AS "jobs!",
                COALESCE(extract(epoch FROM now() - min(created_at)), 0)::float8 AS "oldest_secs!",
                (SELECT last_error FROM job_outbox
                 WHERE published_at IS NULL AND last_error IS NOT NULL
                 ORDER BY id DESC LIMIT 1) AS last_error
         FROM job_outbox WHERE published_at IS NULL"#,
    )
    .fetch_one(pool)
    .await
}
