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

type EmployeeRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<NaiveDate>,
    Option<Vec<u8>>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<NaiveDate>,
    Option<i64>,
);

pub async fn run(ctx: &Context, job_id: Uuid, request_id: Uuid) -> JobResult {
    let mut tx = ctx.pool.begin().await?;
    if already_done(&mut tx, job_id).await? {
        skipped(KIND, job_id);
        return Ok(());
    }
    let request: Option<(i64, bool, Option<String>, Option<i64>)> = sqlx::query_as(
        "SELECT employee_id, remote, onboarding_type, i9_id FROM i9_requests WHERE id = $1 FOR UPDATE",
    )
    .bind(request_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((employee_id, remote, onboarding, existing)) = request else {
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
    let e: EmployeeRow = sqlx::query_as(
        "SELECT e.first_name, e.last_name, e.middle_name, e.other_name, e.date_of_birth, e.ssn_ciphertext,
                e.ssn_last4, e.email_address, COALESCE(e.cell_number, e.home_number, e.work_number),
                e.address_street, e.address_apartment, e.address_city, e.address_state, e.address_zip,
                p.start_date, p.id
         FROM employees e
         LEFT JOIN LATERAL (SELECT id, start_date FROM employment_periods WHERE employee_id = e.id
                            ORDER BY id DESC LIMIT 1) p ON TRUE
         WHERE e.id = $1",
    )
    .bind(employee_id)
    .fetch_one(&mut *tx)
    .await?;
    let (
        first,
        last,
        middle,
        other,
        dob,
        ssn_ct,
        ssn_last4,
        email,
        phone,
        street,
        apt,
        city,
        state,
        zip,
        start,
        period,
    ) = e;
    // The I-9 keeps its own copy of the number, under its own key purpose.
    let ssn = match ssn_ct {
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
        employment_period_id: period,
        remote,
        onboarding_type: onboarding,
        start_date: start,
        first_name: first,
        last_name: last,
        middle_name: middle,
        other_name: other,
        date_of_birth: dob,
        ssn_ciphertext: ssn,
        ssn_last4,
        email_address: email,
        phone_number: phone,
        address_street: street,
        address_apartment: apt,
        address_city: city,
        address_state: state,
        address_zip: zip,
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
            sqlx::query("UPDATE i9_requests SET i9_id = $2 WHERE id = $1 AND i9_id IS NULL")
                .bind(request_id)
                .bind(open)
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
    sqlx::query("UPDATE i9_requests SET i9_id = $2 WHERE id = $1")
        .bind(request_id)
        .bind(i9_id)
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
