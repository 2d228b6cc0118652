//! Job handlers: one per file, each a kind with its `run`, registered in
//! [`handle`]. Handlers are idempotent: a job id recorded in `processed_jobs`
//! takes effect once however often RabbitMQ delivers it.

pub mod create_i9;
pub mod post_status_callback;
pub mod send_login_email;
pub mod send_remote_hire_email;

use i9_common::jobs::{Envelope, Job};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::Context;

/// How a job failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Worth another attempt later (a server down, a timeout).
    #[error("retryable: {0:#}")]
    Retryable(anyhow::Error),
    /// Will never succeed (a missing record, a bad address): dead-letter it.
    #[error("fatal: {0:#}")]
    Fatal(anyhow::Error),
}

impl From<sqlx::Error> for JobError {
    fn from(e: sqlx::Error) -> Self {
        JobError::Retryable(e.into())
    }
}

pub type JobResult = Result<(), JobError>;

pub async fn handle(ctx: &Context, env: &Envelope) -> JobResult {
    match &env.job {
        Job::CreateI9 { request_id } => create_i9::run(ctx, env.job_id, *request_id).await,
        Job::SendLoginEmail { user_id } => send_login_email::run(ctx, env.job_id, *user_id).await,
        Job::SendRemoteHireEmail { request_id } => {
            send_remote_hire_email::run(ctx, env.job_id, *request_id).await
        }
        Job::PostStatusCallback { event_id } => post_status_callback::run(ctx, *event_id).await,
    }
}

/// A job is being dead-lettered (fatal, or out of attempts): record it where
/// an operator looks.
pub async fn on_dead_letter(ctx: &Context, env: &Envelope) {
    if let Job::PostStatusCallback { event_id } = &env.job {
        let r = sqlx::query(
            "UPDATE partner_events SET dead_at = now() WHERE id = $1 AND delivered_at IS NULL",
        )
        .bind(event_id)
        .execute(&ctx.pool)
        .await;
        if let Err(e) = r {
            tracing::error!(error = %e, %event_id, "could not mark the callback dead");
        }
    }
}

/// Whether `job_id` has already taken effect.
pub async fn already_done(conn: &mut PgConnection, job_id: Uuid) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM processed_jobs WHERE job_id = $1)")
        .bind(job_id)
        .fetch_one(conn)
        .await
}

/// Record that `job_id` took effect (in the transaction of its effect).
pub async fn mark_done(
    conn: &mut PgConnection,
    job_id: Uuid,
    kind: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO processed_jobs (job_id, kind) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .bind(job_id)
        .bind(kind)
        .execute(conn)
        .await?;
    Ok(())
}
