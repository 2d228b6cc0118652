//! Partner status events: every change of the I-9 status of an employee that
//! a partner created (its creation included) becomes a `partner_events` row
//! and a `post_status_callback` job, in the transaction of the change.

use chrono::{NaiveDate, Utc};
use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::{
    domain::{format_timestamp, I9Status},
    jobs::Job,
    outbox,
};

/// What must happen next, and by when, for an I-9 in `status`: signing
/// Section 1 by the start date, Section 2 by the due date.
fn next_step(
    status: I9Status,
    start: Option<NaiveDate>,
    due: Option<NaiveDate>,
) -> (Option<&'static str>, Option<NaiveDate>) {
    let by = match status {
        I9Status::Section1Incomplete => start,
        I9Status::SignedSec1 => due,
        _ => None,
    };
    (status.next_step(), by)
}

/// The I-9 of a partner's employee, as a status event reads it.
struct PartnerI9Row {
    employee_id: i64,
    status: I9Status,
    start_date: Option<NaiveDate>,
    date_due: Option<NaiveDate>,
    integration_candidate_id: Option<String>,
    integration_transaction_id: Option<String>,
}

/// Record the change of I-9 `i9_id` from `previous` to its current status, if
/// its employee belongs to a partner. Returns the event id.
pub async fn record_status_change(
    tx: &mut PgConnection,
    i9_id: i64,
    previous: Option<I9Status>,
    public_base_url: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    let Some(row) = sqlx::query_as!(
        PartnerI9Row,
        r#"SELECT e.id AS employee_id, i.status AS "status: I9Status", i.start_date, i.date_due,
                e.integration_candidate_id, e.integration_transaction_id
         FROM i9s i JOIN employees e ON e.id = i.employee_id
         WHERE i.id = $1 AND e.integration_client_id IS NOT NULL"#,
        i9_id,
    )
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(None);
    };
    let PartnerI9Row {
        employee_id: employee,
        status,
        start_date: start,
        date_due: due,
        integration_candidate_id: candidate,
        integration_transaction_id: transaction,
    } = row;
    let sequence = sqlx::query_scalar!(
        "UPDATE employees SET event_sequence = event_sequence + 1 WHERE id = $1 RETURNING event_sequence",
        employee,
    )
    .fetch_one(&mut *tx)
    .await?;
    let id = Uuid::new_v4();
    let (step, step_due) = next_step(status, start, due);
    let payload = json!({
        "type": if previous.is_none() { "i9.created" } else { "i9.status_changed" },
        "eventId": id,
        "sequence": sequence,
        "occurredAt": format_timestamp(Utc::now()),
        "employeeId": employee,
        "i9Id": i9_id,
        "integrationCandidateId": candidate,
        "IntegrationTransactionId": transaction,
        "i9Status": status,
        "previousI9Status": previous,
        "i9NextStep": step,
        "i9NextStepDueDate": step_due.map(|d| d.to_string()),
        "i9Url": format!("{public_base_url}/v1/i9s/{i9_id}"),
    });
    sqlx::query!(
        "INSERT INTO partner_events (id, employee_id, i9_id, sequence, event_type, payload) VALUES ($1, $2, $3, $4, $5, $6)",
        id,
        employee,
        i9_id,
        sequence,
        payload["type"].as_str().unwrap_or("i9.status_changed"),
        &payload,
    )
    .execute(&mut *tx)
    .await?;
    outbox::enqueue(tx, Job::PostStatusCallback { event_id: id }).await?;
    Ok(Some(id))
}

/// A callback that was given up on (dead-lettered) and not delivered.
#[derive(Debug, Clone)]
pub struct FailedCallback {
    pub id: Uuid,
    pub employee_id: i64,
    pub sequence: i64,
    pub event_type: String,
    pub dead_at: chrono::DateTime<Utc>,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub last_status: Option<i32>,
}

/// Every dead-lettered, undelivered callback, oldest first.
pub async fn failed(pool: &sqlx::PgPool) -> Result<Vec<FailedCallback>, sqlx::Error> {
    sqlx::query_as!(
        FailedCallback,
        r#"SELECT ev.id, ev.employee_id, ev.sequence, ev.event_type, ev.dead_at AS "dead_at!",
                (SELECT count(*) FROM callback_attempts a WHERE a.event_id = ev.id) AS "attempts!",
                la.error AS last_error, la.http_status AS last_status
         FROM partner_events ev
         LEFT JOIN LATERAL (SELECT error, http_status FROM callback_attempts a
                            WHERE a.event_id = ev.id ORDER BY a.id DESC LIMIT 1) la ON TRUE
         WHERE ev.dead_at IS NOT NULL AND ev.delivered_at IS NULL
         ORDER BY ev.dead_at, ev.id"#,
    )
    .fetch_all(pool)
    .await
}

/// Send dead-lettered callbacks again (`only` one, or all of them): each gets
/// a fresh job and a fresh retry budget. Returns the ids redelivered.
pub async fn redeliver(pool: &sqlx::PgPool, only: Option<Uuid>) -> Result<Vec<Uuid>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let ids = sqlx::query_scalar!(
        "UPDATE partner_events SET dead_at = NULL
         WHERE dead_at IS NOT NULL AND delivered_at IS NULL AND ($1::UUID IS NULL OR id = $1)
         RETURNING id",
        only,
    )
    .fetch_all(&mut *tx)
    .await?;
    for id in &ids {
        outbox::enqueue(&mut tx, Job::PostStatusCallback { event_id: *id }).await?;
    }
    tx.commit().await?;
    Ok(ids)
}
