//! Job handlers: one per file, each a kind with its `run`, registered in
//! [`handle`]. Handlers are idempotent: a job takes effect once however
//! often RabbitMQ delivers it (`processed_jobs`; [`claim`] for effects
//! outside the database), and a copy that finds its job done is skipped with
//! a log line.

pub mod claim;
pub mod create_i9;
pub mod post_status_callback;
pub mod send_login_email;
pub mod send_reminder_email;
pub mod send_remote_hire_email;
pub mod send_revocation_email;
pub mod submit_everify_case;

use i9_common::{
    crypto::DecryptError,
    jobs::{Envelope, Job},
};
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
    /// Another copy of the job holds its claim ([`claim`]): not an attempt;
    /// try again once the claim lapses, in `lapses_in` at the latest.
    #[error("another copy of this job holds its claim for {lapses_in:?} more")]
    Busy { lapses_in: std::time::Duration },
}

impl From<sqlx::Error> for JobError {
    /// Database errors are worth another attempt: most are the database
    /// being unavailable for a while (i9_common::db::is_unavailable).
    fn from(e: sqlx::Error) -> Self {
        JobError::Retryable(e.into())
    }
}

impl From<DecryptError> for JobError {
    /// A value under a key this worker's ring lacks is worth another attempt:
    /// the worker is restarted with the ring the data was written with
    /// (docs/operations.md, "Keys and rotation"). A value no key of the ring
    /// opens will never decrypt.
    fn from(e: DecryptError) -> Self {
        match e {
            DecryptError::UnknownKey(_) => JobError::Retryable(anyhow::anyhow!(
                "{e}: restart this worker with the ring the data was written with"
            )),
            DecryptError::Invalid => JobError::Fatal(e.into()),
        }
    }
}

impl JobError {
    /// Say what the error was about, keeping whether it is worth retrying.
    pub fn context(self, what: String) -> Self {
        match self {
            JobError::Retryable(e) => JobError::Retryable(e.context(what)),
            JobError::Fatal(e) => JobError::Fatal(e.context(what)),
            busy @ JobError::Busy { .. } => busy,
        }
    }
}

pub type JobResult = Result<(), JobError>;

/// An email part from its template (`workers/templates/`). The templates are
/// checked when built; one that fails to render would fail every attempt.
fn render(part: &impl askama::Template) -> Result<String, JobError> {
    part.render()
        .map_err(|e| JobError::Fatal(anyhow::Error::new(e).context("rendering an email")))
}

pub async fn handle(ctx: &Context, env: &Envelope) -> JobResult {
    match &env.job {
        Job::CreateI9 { request_id } => create_i9::run(ctx, env.job_id, *request_id).await,
        Job::SendLoginEmail { user_id } => send_login_email::run(ctx, env.job_id, *user_id).await,
        Job::SendRemoteHireEmail { request_id } => {
            send_remote_hire_email::run(ctx, env.job_id, *request_id).await
        }
        Job::PostStatusCallback { event_id } => post_status_callback::run(ctx, *event_id).await,
        Job::SendReminderEmail {
            reminder_id,
            recipient,
        } => send_reminder_email::run(ctx, env.job_id, *reminder_id, *recipient).await,
        Job::SubmitEverifyCase { case_id, call } => {
            submit_everify_case::run(ctx, env.job_id, *case_id, *call).await
        }
        Job::SendRevocationEmail {
            request_id,
            recipient,
        } => send_revocation_email::run(ctx, env.job_id, *request_id, *recipient).await,
    }
}

/// A job is being dead-lettered (fatal, or out of attempts): record it where
/// an operator looks.
pub async fn on_dead_letter(ctx: &Context, env: &Envelope) {
    if let Job::PostStatusCallback { event_id } = &env.job {
        let r = sqlx::query!(
            "UPDATE partner_events SET dead_at = now() WHERE id = $1 AND delivered_at IS NULL",
            event_id,
        )
        .execute(&ctx.pool)
        .await;
        if let Err(e) = r {
            tracing::error!(error = %e, %event_id, "could not mark the callback dead");
        }
    }
}

/// Whether `job_id` has already taken effect.
pub async fn already_done(conn: &mut PgConnection, job_id: Uuid) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM processed_jobs WHERE job_id = $1 AND processed_at IS NOT NULL) AS "done!""#,
        job_id,
    )
    .fetch_one(conn)
    .await
}

/// Log a copy of a job that finds its work done (a redelivery, an operator's
/// replay, a relay that published twice): skipped, and said so.
pub fn skipped(kind: &str, job_id: Uuid) {
    tracing::info!(kind, %job_id, "job already done; this copy is skipped");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value under a key the worker lacks waits for the worker's restart
    /// with the right ring (retried, saying which key); one no key opens is
    /// dead-lettered at once.
    #[test]
    fn a_value_under_a_missing_key_is_retried_and_a_corrupt_one_is_not() {
        let missing = JobError::from(DecryptError::UnknownKey(2))
            .context("the Section 1 token of request 7".to_owned());
        match missing {
            JobError::Retryable(e) => {
                let text = format!("{e:#}");
                assert!(
                    text.starts_with("the Section 1 token of request 7: ")
                        && text.contains("data key 2, which DATA_ENCRYPTION_KEYS lacks")
                        && text.contains("restart this worker"),
                    "{text}"
                );
            }
            other => panic!("retryable, not {other:?}"),
        }
        assert!(matches!(
            JobError::from(DecryptError::Invalid),
            JobError::Fatal(_)
        ));
    }
}
