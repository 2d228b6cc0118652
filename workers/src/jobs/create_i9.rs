//! `create_i9`: create the I-9 an API write requested.
//!
//! Reads and writes `i9_requests`, `i9s` (through
//! `i9_common::models::i9::create_requested`, which copies the employee's data
//! and the request's `IntegrationTransactionId` and records the partner
//! event), `employees` (read), the outbox (the remote-hire email) and
//! `processed_jobs`, all in one transaction.

use i9_common::{
    jobs::Job,
    models::{
        i9::{self, Requested},
        WriteError,
    },
    outbox,
};
use uuid::Uuid;

use super::{already_done, claim::done as mark_done, skipped, JobError, JobResult};
use crate::Context;

pub const KIND: &str = "create_i9";

pub async fn run(ctx: &Context, job_id: Uuid, request_id: Uuid) -> JobResult {
    let mut tx = ctx.pool.begin().await?;
    if already_done(&mut tx, job_id).await? {
        skipped(KIND, job_id);
        return Ok(());
    }
    let created = i9::create_requested(
        &mut tx,
        &ctx.cipher,
        request_id,
        &ctx.config.public_base_url,
    )
    .await;
    let (i9_id, employee_id, remote) = match created {
        Ok(Requested::Created {
            id,
            employee_id,
            remote,
        }) => (id, employee_id, remote),
        Ok(Requested::Answered(_)) => {
            // Another job of this request created it, or a partner re-hire
            // created and parked it (docs/partners.md).
            skipped(KIND, job_id);
            mark_done(&mut tx, job_id, KIND).await?;
            tx.commit().await?;
            return Ok(());
        }
        Err(WriteError::Conflict(_)) => {
            // Another way opened an I-9 meanwhile: the request is answered by it.
            drop(tx);
            return answered_by_open(ctx, job_id, request_id).await;
        }
        Err(WriteError::NotFound) => {
            return Err(JobError::Fatal(anyhow::anyhow!(
                "I-9 request {request_id} does not exist"
            )))
        }
        Err(WriteError::Undecryptable(e)) => {
            return Err(JobError::from(e)
                .context(format!("the SSN of the employee of request {request_id}")))
        }
        Err(WriteError::Database(e)) => return Err(e.into()),
        Err(e) => return Err(JobError::Fatal(e.into())),
    };
    if remote {
        outbox::enqueue(&mut tx, Job::SendRemoteHireEmail { request_id }).await?;
    }
    mark_done(&mut tx, job_id, KIND).await?;
    tx.commit().await?;
    tracing::info!(i9_id, employee_id, remote, "I-9 created");
    Ok(())
}

/// The employee of request `request_id` had an open I-9 already: link the
/// request to it.
async fn answered_by_open(ctx: &Context, job_id: Uuid, request_id: Uuid) -> JobResult {
    let mut tx = ctx.pool.begin().await?;
    let employee_id = sqlx::query_scalar!(
        "SELECT employee_id FROM i9_requests WHERE id = $1",
        request_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    let Some(open) = i9::open_of(&mut tx, employee_id).await? else {
        // Closed again since: the job's next delivery creates one.
        return Err(JobError::Retryable(anyhow::anyhow!(
            "the open I-9 of employee {employee_id} closed meanwhile"
        )));
    };
    sqlx::query!(
        "UPDATE i9_requests SET i9_id = $2 WHERE id = $1 AND i9_id IS NULL",
        request_id,
        open,
    )
    .execute(&mut *tx)
    .await?;
    mark_done(&mut tx, job_id, KIND).await?;
    tx.commit().await?;
    tracing::warn!(
        employee_id,
        i9_id = open,
        "employee already had an open I-9; request linked to it"
    );
    Ok(())
}
