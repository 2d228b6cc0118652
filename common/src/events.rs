//! Partner status events: every change of the I-9 status of an employee that
//! a partner created (its creation included) becomes a `partner_events` row
//! and a `post_status_callback` job, in the transaction of the change.

use chrono::{NaiveDate, Utc};
use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::{domain::format_timestamp, jobs::Job, outbox};

/// What must happen next, and by when, for an I-9 in `status`.
fn next_step(
    status: &str,
    start: Option<NaiveDate>,
    due: Option<NaiveDate>,
) -> (Option<&'static str>, Option<NaiveDate>) {
    match status {
        "Section 1 Incomplete" => (Some("The employee completes and signs Section 1"), start),
        "Signed Sec 1" => (
            Some("The employer examines the documents and completes Section 2"),
            due,
        ),
        "Signed Sec 2" => (Some("The employer marks the I-9 complete"), None),
        "Completed" => (Some("An approver approves the I-9"), None),
        "Parked" => (Some("The employer resolves what parked the I-9"), None),
        _ => (None, None),
    }
}

/// Record the change of I-9 `i9_id` from `previous` to its current status, if
/// its employee belongs to a partner. Returns the event id.
pub async fn record_status_change(
    tx: &mut PgConnection,
    i9_id: i64,
    previous: Option<&str>,
    public_base_url: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    let row: Option<(i64, String, Option<NaiveDate>, Option<NaiveDate>, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT e.id, i.status, i.start_date, i.date_due, e.integration_candidate_id, e.integration_transaction_id
         FROM i9s i JOIN employees e ON e.id = i.employee_id
         WHERE i.id = $1 AND e.integration_client_id IS NOT NULL",
    )
    .bind(i9_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((employee, status, start, due, candidate, transaction)) = row else {
        return Ok(None);
    };
    let sequence: i64 = sqlx::query_scalar(
        "UPDATE employees SET event_sequence = event_sequence + 1 WHERE id = $1 RETURNING event_sequence",
    )
    .bind(employee)
    .fetch_one(&mut *tx)
    .await?;
    let id = Uuid::new_v4();
    let (step, step_due) = next_step(&status, start, due);
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
    sqlx::query(
        "INSERT INTO partner_events (id, employee_id, i9_id, sequence, event_type, payload) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(id)
    .bind(employee)
    .bind(i9_id)
    .bind(sequence)
    .bind(payload["type"].as_str().unwrap_or("i9.status_changed"))
    .bind(&payload)
    .execute(&mut *tx)
    .await?;
    outbox::enqueue(tx, Job::PostStatusCallback { event_id: id }).await?;
    Ok(Some(id))
}

/// A callback that was given up on (dead-lettered) and not delivered.
#[derive(Debug, Clone, sqlx::FromRow)]
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
    sqlx::query_as(
        "SELECT ev.id, ev.employee_id, ev.sequence, ev.event_type, ev.dead_at,
                (SELECT count(*) FROM callback_attempts a WHERE a.event_id = ev.id) AS attempts,
                la.error AS last_error, la.http_status AS last_status
         FROM partner_events ev
         LEFT JOIN LATERAL (SELECT error, http_status FROM callback_attempts a
                            WHERE a.event_id = ev.id ORDER BY a.id DESC LIMIT 1) la ON TRUE
         WHERE ev.dead_at IS NOT NULL AND ev.delivered_at IS NULL
         ORDER BY ev.dead_at, ev.id",
    )
    .fetch_all(pool)
    .await
}

/// Send dead-lettered callbacks again (`only` one, or all of them): each gets
/// a fresh job and a fresh retry budget. Returns the ids redelivered.
pub async fn redeliver(pool: &sqlx::PgPool, only: Option<Uuid>) -> Result<Vec<Uuid>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let ids: Vec<Uuid> = sqlx::query_scalar(
        "UPDATE partner_events SET dead_at = NULL
         WHERE dead_at IS NOT NULL AND delivered_at IS NULL AND ($1::UUID IS NULL OR id = $1)
         RETURNING id",
    )
    .bind(only)
    .fetch_all(&mut *tx)
    .await?;
    for id in &ids {
        outbox::enqueue(&mut tx, Job::PostStatusCallback { event_id: *id }).await?;
    }
    tx.commit().await?;
    Ok(ids)
}
