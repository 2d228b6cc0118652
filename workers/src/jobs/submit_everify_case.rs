//! `submit_everify_case`: make one call of an E-Verify case to the program
//! (docs/everify.md, "The adapter"): submit a case just opened, or tell the
//! program of an employer's step (confirm-details, continue-duplicate,
//! refer, no-action, close), and apply its answer.
//!
//! The call is made outside a transaction (a real program is a remote
//! service); its answer is applied with the case row locked, only while the
//! case is still where the call found it, in the transaction that marks the
//! job done: a second copy of the job, or of the answer, changes nothing.
//! An unavailable program leaves the case as it is, counts the failed
//! attempt (`unavailable_attempts`) and retries with the jobs' backoff.

use i9_common::{
    domain::everify::CaseStatus,
    everify::{Account, CaseInput, Closure, ProgramError, ProgramUpdate},
    jobs::EverifyCall,
    models::{everify_case, WriteError},
};
use uuid::Uuid;

use super::{already_done, claim::done as mark_done, skipped, JobError, JobResult};
use crate::Context;

pub const KIND: &str = "submit_everify_case";

#[derive(sqlx::FromRow)]
struct Row {
    status: CaseStatus,
    case_number: Option<String>,
    legal_entity_id: i64,
    everify_id: Option<String>,
    last_name: String,
    resubmit_of: Option<i64>,
    unavailable_attempts: i32,
}

fn write_error(e: WriteError) -> JobError {
    match e {
        WriteError::Database(e) => e.into(),
        WriteError::NotFound => JobError::Fatal(anyhow::anyhow!("the case does not exist")),
        other => JobError::Fatal(other.into()),
    }
}

pub async fn run(ctx: &Context, job_id: Uuid, case_id: i64, call: EverifyCall) -> JobResult {
    {
        let mut conn = ctx.pool.acquire().await?;
        if already_done(&mut conn, job_id).await? {
            skipped(KIND, job_id);
            return Ok(());
        }
    }
    let row: Option<Row> = sqlx::query_as(
        "SELECT c.status, c.case_number, c.legal_entity_id, le.everify_id, i.last_name,
                c.resubmit_of, c.unavailable_attempts
         FROM everify_cases c JOIN i9s i ON i.id = c.i9_id
         JOIN legal_entities le ON le.id = c.legal_entity_id
         WHERE c.id = $1",
    )
    .bind(case_id)
    .fetch_optional(&ctx.pool)
    .await?;
    let Some(row) = row else {
        return Err(JobError::Fatal(anyhow::anyhow!(
            "E-Verify case {case_id} does not exist"
        )));
    };
    let acct = Account {
        legal_entity_id: row.legal_entity_id,
        everify_id: row.everify_id.clone(),
    };
    let input = CaseInput {
        case_id,
        last_name: row.last_name.clone(),
        resubmit_of: row.resubmit_of,
        unavailable_attempts: row.unavailable_attempts,
    };
    let number = row.case_number.clone().unwrap_or_default();
    let p = &ctx.program;
    let answered: Result<Option<ProgramUpdate>, ProgramError> = match call {
        // A case the program answered already (a copy of the job) is not sent again.
        EverifyCall::Submit if row.status != CaseStatus::Pending => Ok(None),
        EverifyCall::Submit => p.submit(&acct, &input).await.map(Some),
        EverifyCall::ConfirmDetails if row.status != CaseStatus::Pending => Ok(None),
        EverifyCall::ConfirmDetails => p.confirm_details(&acct, &input, &number).await,
        EverifyCall::ContinueDuplicate { .. } if row.status != CaseStatus::Pending => Ok(None),
        EverifyCall::ContinueDuplicate { reason } => {
            p.continue_duplicate(&acct, &input, &number, reason).await
        }
        EverifyCall::Refer => p.refer(&acct, &number).await,
        EverifyCall::NoAction => p.no_action(&acct, &number).await,
        EverifyCall::Close { reason } => {
            p.close(
                &acct,
                &number,
                &Closure {
                    reason,
                    employed: reason.employed(),
                },
            )
            .await
        }
    };
    let update = match answered {
        Ok(u) => u,
        Err(ProgramError::Unavailable(why)) => {
            let mut conn = ctx.pool.acquire().await?;
            everify_case::record_unavailable(&mut conn, case_id).await?;
            return Err(JobError::Retryable(anyhow::anyhow!(
                "E-Verify case {case_id}: {why}"
            )));
        }
        Err(ProgramError::Database(e)) => return Err(e.into()),
        Err(ProgramError::Refused(why)) => {
            // The program refused the data: the case waits for the employer
            // as Case Incomplete, with the program's message.
            sqlx::query("UPDATE everify_cases SET program_message = $2 WHERE id = $1")
                .bind(case_id)
                .bind(&why)
                .execute(&ctx.pool)
                .await?;
            Some(ProgramUpdate {
                case_id,
                case_number: row.case_number.clone().unwrap_or_default(),
                from: row.status,
                result: i9_common::domain::everify::CaseResult::CaseIncomplete,
                agency: None,
                basis: None,
            })
        }
    };
    let mut tx = ctx.pool.begin().await?;
    let applied = match &update {
        Some(u) => {
            // Dated on E-Verify's day (docs/everify.md, "Which day (7)").
            everify_case::apply_update(
                &mut tx,
                u,
                ctx.config.everify_today(),
                &ctx.config.public_base_url,
            )
            .await
            .map_err(write_error)?
        }
        None => false,
    };
    mark_done(&mut tx, job_id, KIND).await?;
    tx.commit().await?;
    tracing::info!(
        case_id,
        call = ?call,
        applied,
        result = update.as_ref().map(|u| u.result.as_str()),
        "E-Verify call made"
    );
    Ok(())
}
