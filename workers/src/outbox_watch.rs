//! Warns the operator when jobs wait in the outbox longer than they should:
//! no process runs a relay (`WORKER_NO_RELAY` and `API_NO_RELAY` everywhere),
//! or RabbitMQ refuses them (the relay's last error says why). Every worker
//! runs it; a write's jobs are normally published within a second.

use std::time::Duration;

use i9_common::outbox;
use sqlx::PgPool;
use tokio::sync::watch;

/// How long a job may wait in the outbox before the watch warns.
pub const STUCK_AFTER: Duration = Duration::from_secs(60);

pub async fn run(pool: PgPool, every: Duration, mut shutdown: watch::Receiver<bool>) {
    let mut warned = false;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
        let Ok(b) = outbox::backlog(&pool).await else {
            continue; // the database is away; others report that
        };
        if b.jobs > 0 && b.oldest_secs >= STUCK_AFTER.as_secs_f64() {
            tracing::warn!(
                jobs = b.jobs,
                oldest_secs = b.oldest_secs.round() as u64,
                last_error = b.last_error.as_deref().unwrap_or("none"),
                "jobs wait in the outbox: is an outbox relay running (WORKER_NO_RELAY, API_NO_RELAY), and does RabbitMQ take them?"
            );
            warned = true;
        } else if warned {
            tracing::info!(jobs = b.jobs, "the outbox is flowing again");
            warned = false;
        }
    }
}
