//! `create_i9`: create the I-9 an API write requested.
//!
//! Reads and writes `i9_requests`, `i9s` (through `i9_common::models::i9`,
//! which also records the partner event), `employees` (read), the outbox (the
//! remote-hire email) and `processed_jobs`, all in one transaction.

use chrono::NaiveDate;
use i9_common::{
    crypto::Purpose,
    jobs::Job,
    models::{
        i9::{self, NewI9},
        WriteError,
    },
    outbox,
};
use uuid::Uuid;

use super::{already_done, claim::done as mark_done, skipped, JobError, JobResult};
use crate::Context;

pub const KIND: &str = "create_i9";

/// The I-9 request, locked.
struct Request {
    employee_id: i64,
    remote: bool,
    onboarding_type: Option<String>,
    i9_id: Option<i64>,
}

/// What the I-9 copies from its employee: the employee's data and current
/// period of employment.
struct EmployeeRow {
    first_name: String,
    last_name: String,
    middle_name: Option<String>,
    other_name: Option<String>,
    date_of_birth: Option<NaiveDate>,
    ssn_ciphertext: Option<Vec<u8>>,
    ssn_last4: Option<String>,
    email_address: Option<String>,
    phone_number: Option<String>,
    address_street: Option<String>,
    address_apartment: Option<String>,
    address_city: Option<String>,
    address_state: Option<String>,
    address_zip: Option<String>,
    start_date: Option<NaiveDate>,
    period_id: Option<i64>,
}

pub async fn run(ctx: &Context, job_id: Uuid, request_id: Uuid) -> JobResult {
    let mut tx = ctx.pool.begin().await?;
    if already_done(&mut tx, job_id).await? {
        skipped(KIND, job_id);
        return Ok(());
    }
    let request = sqlx::query_as!(
        Request,
        "SELECT employee_id, remote, onboarding_type, i9_id FROM i9_requests WHERE id = $1 FOR UPDATE",
        request_id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(Request {
        employee_id,
        remote,
        onboarding_type: onboarding,
        i9_id: existing,
    }) = request
    else {
        return Err(JobError::Fatal(anyhow::anyhow!(
            "I-9 request {request_id} does not exist"
        )));
    };
    if existing.is_some() {
        skipped(KIND, job_id); // another job of this request created it
        mark_done(&mut tx, job_id, KIND).await?;
        tx.commit().await?;
        return Ok(());
    }
    let e = sqlx::query_as!(
        EmployeeRow,
        r#"SELECT e.first_name, e.last_name, e.middle_name, e.other_name, e.date_of_birth, e.ssn_ciphertext,
                  e.ssn_last4, e.email_address,
                  COALESCE(e.cell_number, e.home_number, e.work_number) AS phone_number,
                  e.address_street, e.address_apartment, e.address_city, e.address_state, e.address_zip,
                  p.start_date AS "start_date?", p.id AS "period_id?"
           FROM employees e
           LEFT JOIN LATERAL (SELECT id, start_date FROM employment_periods WHERE employee_id = e.id
                              ORDER BY id DESC LIMIT 1) p ON TRUE
           WHERE e.id = $1"#,
        employee_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    // The I-9 keeps its own copy of the number, under its own key purpose.
    let ssn = match e.ssn_ciphertext {
        Some(ct) => {
            let ssn = ctx
                .cipher
                .decrypt_ssn(Purpose::EmployeeSsn, &ct)
                .map_err(|e| {
                    JobError::from(e)
                        .context(format!("the SSN of the employee of request {request_id}"))
                })?;
            Some(ctx.cipher.encrypt_ssn(Purpose::I9Ssn, &ssn))
        }
        None => None,
    };
    let new = NewI9 {
        employee_id,
        employment_period_id: e.period_id,
        remote,
        onboarding_type: onboarding,
        start_date: e.start_date,
        first_name: e.first_name,
        last_name: e.last_name,
        middle_name: e.middle_name,
        other_name: e.other_name,
        date_of_birth: e.date_of_birth,
        ssn_ciphertext: ssn,
        ssn_last4: e.ssn_last4,
        email_address: e.email_address,
        phone_number: e.phone_number,
        address_street: e.address_street,
        address_apartment: e.address_apartment,
        address_city: e.address_city,
        address_state: e.address_state,
        address_zip: e.address_zip,
    };
    let i9_id = match i9::create(&mut tx, &new, &ctx.config.public_base_url).await {
        Ok(id) => id,
        Err(WriteError::Conflict(_)) => {
            // Another way opened an I-9 meanwhile: the request is answered by it.
            drop(tx);
            let mut tx = ctx.pool.begin().await?;
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
            return Ok(());
        }
        Err(WriteError::Database(e)) => return Err(e.into()),
        Err(e) => return Err(JobError::Fatal(e.into())),
    };
    sqlx::query!(
        "UPDATE i9_requests SET i9_id = $2 WHERE id = $1",
        request_id,
        i9_id,
    )
    .execute(&mut *tx)
    .await?;
    if remote {
        outbox::enqueue(&mut tx, Job::SendRemoteHireEmail { request_id }).await?;
    }
    mark_done(&mut tx, job_id, KIND).await?;
    tx.commit().await?;
    tracing::info!(i9_id, employee_id, remote, "I-9 created");
    Ok(())
}
