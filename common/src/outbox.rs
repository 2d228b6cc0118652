//! The transactional outbox: a job is recorded in the same transaction as
//! the write that causes it, and a relay ([`crate::relay`]) publishes it to
//! RabbitMQ after commit.
//!
//! The relays are woken **after** the commit, never by a `NOTIFY` inside the
//! write: Postgres holds one server-wide lock from just before a notifying
//! transaction commits until it has committed, so notifying writes commit one
//! at a time, each waiting for the previous one's flush to disk (measured:
//! 264 commits/s with a `NOTIFY`, 1,565 without; BENCHMARKS.md, pipeline).
//! A request of the API or a worker's job runs inside [`waking_relays`]:
//! when it recorded a job, the relay of the same process is woken once the
//! work is done (its transaction committed), at no cost to the database; a
//! process without a relay sends a `NOTIFY` of its own after the commit, a
//! transaction of nothing else. A job recorded elsewhere (`i9-admin`) is
//! found by the relays' poll (`RelayConfig::poll`).
//!
//! Every job is recorded here, by [`enqueue_envelope`] or [`push_ctes`],
//! with the trace context and request id of the span recording it
//! (`job_outbox.trace`), which the relay publishes as the message's headers.

use std::{
    cell::Cell,
    future::Future,
    sync::{
        atomic::{AtomicUsize, Ordering},
        LazyLock,
    },
};

use sqlx::{types::Json, PgConnection, PgPool};
use tokio::sync::watch;
use uuid::Uuid;

use crate::{
    jobs::{Envelope, Job, ENVELOPE_VERSION},
    trace,
};

pub const NOTIFY_CHANNEL: &str = "i9_outbox";

tokio::task_local! {
    /// Set when the work in [`waking_relays`] records a job.
    static RECORDED: Cell<bool>;
}

/// Bumped to wake the relays of this process.
static WAKE: LazyLock<watch::Sender<u64>> = LazyLock::new(|| watch::channel(0).0);
/// How many relays run in this process.
static LOCAL_RELAYS: AtomicUsize = AtomicUsize::new(0);

fn recorded() {
    let _ = RECORDED.try_with(|r| r.set(true));
}

/// Run `work` (a request, a job) and, if it recorded a job, wake the relays
/// when it is done: the work commits its transaction before it ends.
pub async fn waking_relays<F: Future>(pool: &PgPool, work: F) -> F::Output {
    let (output, recorded) = RECORDED
        .scope(Cell::new(false), async {
            let output = work.await;
            (output, RECORDED.with(Cell::get))
        })
        .await;
    if recorded {
        wake(pool).await;
    }
    output
}

/// Wake the relays: this process's own, or, when it runs none, every
/// process's by a `NOTIFY` of its own (a lost one is covered by their poll).
pub async fn wake(pool: &PgPool) {
    if LOCAL_RELAYS.load(Ordering::Relaxed) > 0 {
        WAKE.send_modify(|n| *n = n.wrapping_add(1));
    } else if let Err(e) = sqlx::query!("SELECT pg_notify($1, '')", NOTIFY_CHANNEL)
        .execute(pool)
        .await
    {
        tracing::debug!(error = %e, "could not wake the outbox relays; their poll will");
    }
}

/// A relay of this process, counted while it lives; its wake-ups.
pub struct LocalRelay {
    pub wakes: watch::Receiver<u64>,
}

impl LocalRelay {
    pub fn register() -> Self {
        LOCAL_RELAYS.fetch_add(1, Ordering::Relaxed);
        Self {
            wakes: WAKE.subscribe(),
        }
    }
}

impl Drop for LocalRelay {
    fn drop(&mut self) {
        LOCAL_RELAYS.fetch_sub(1, Ordering::Relaxed);
    }
}

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
    recorded();
    Ok(())
}

/// [`enqueue_envelope`] as part of a larger statement: `, o AS (INSERT
/// ... SELECT ... FROM from)` records the job once per row of the CTE
/// `from`.
pub fn push_ctes(q: &mut sqlx::QueryBuilder<'_, sqlx::Postgres>, envelope: &Envelope, from: &str) {
    q.push(", o AS (INSERT INTO job_outbox (job_id, kind, payload, trace) SELECT ");
    q.push_bind(envelope.job_id).push(", ");
    q.push_bind(envelope.job.kind().name()).push(", ");
    q.push_bind(Json(envelope.clone())).push(", ");
    q.push_bind(trace());
    q.push(" FROM ").push(from).push(")");
    recorded();
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
