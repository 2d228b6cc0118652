//! Partner events: every change of the I-9 status of an employee that a
//! partner created (its creation included), and every change of its
//! employment (termination, its cancellation, re-hire), becomes a
//! `partner_events` row and a `post_status_callback` job, in the transaction
//! of the change. The payloads are the typed [`I9Event`] and
//! [`EmploymentEvent`]: the stored payload is the struct serialized, the
//! callback posts it as stored, and the OpenAPI document's `webhooks` describe
//! it from the same types (docs/partners.md, "Status callbacks").

use chrono::{NaiveDate, Utc};
use serde::Serialize;
use sqlx::PgConnection;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    domain::{format_timestamp, I9Status},
    jobs::Job,
    outbox,
};

// Expiring-document reminders (docs/reminders.md): `i9.document_due`.
pub mod document_due;
pub use document_due::{DocumentDueEvent, DocumentDueEventType};
// E-Verify cases (docs/everify.md, "Partner events").
pub mod everify;
pub use everify::{EverifyEvent, EverifyEventType};

/// The type of an I-9 event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum I9EventType {
    /// The I-9 was created (its first event).
    #[serde(rename = "i9.created")]
    Created,
    /// The I-9's status changed.
    #[serde(rename = "i9.status_changed")]
    StatusChanged,
}

/// The type of an employment event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum EmploymentEventType {
    /// The current period of employment got a termination date, or another one.
    #[serde(rename = "employee.terminated")]
    Terminated,
    /// The termination date of the current period was removed: employed again, same period.
    #[serde(rename = "employee.termination_cancelled")]
    TerminationCancelled,
    /// A terminated employee was re-hired: a new period of employment began.
    #[serde(rename = "employee.rehired")]
    Rehired,
}

impl I9EventType {
    pub const ALL: [Self; 2] = [Self::Created, Self::StatusChanged];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Created => "i9.created",
            Self::StatusChanged => "i9.status_changed",
        }
    }
}

impl EmploymentEventType {
    pub const ALL: [Self; 3] = [Self::Terminated, Self::TerminationCancelled, Self::Rehired];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Terminated => "employee.terminated",
            Self::TerminationCancelled => "employee.termination_cancelled",
            Self::Rehired => "employee.rehired",
        }
    }
}

/// A change of an I-9 of a partner's employee, its creation included: the
/// body of the `i9.created` and `i9.status_changed` callbacks.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct I9Event {
    /// `i9.created` for the first event of an I-9, `i9.status_changed` after.
    #[serde(rename = "type")]
    pub event_type: I9EventType,
    /// The event's id, also its `webhook-id` header: the same on every retry.
    #[schema(value_type = String, format = "uuid")]
    pub event_id: Uuid,
    /// Counts the events of one employee (I-9 and employment events alike) from 1: order by it.
    pub sequence: i64,
    /// When the change happened, in UTC (no offset), to the microsecond.
    #[schema(
        pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}$",
        example = "2026-12-02T15:04:05.123456"
    )]
    pub occurred_at: String,
    /// The employee's id (`GET /v1/employees/{id}`).
    pub employee_id: i64,
    /// The I-9's id (`GET /v1/i9s/{id}`).
    pub i9_id: i64,
    /// Your key of the candidate, as pushed.
    pub integration_candidate_id: Option<String>,
    /// The id of the partner push that started this I-9; `null` for an I-9 not started by a push.
    #[serde(rename = "IntegrationTransactionId")]
    pub integration_transaction_id: Option<String>,
    /// The I-9's status after the change.
    pub i9_status: I9Status,
    /// The status before the change; `null` for `i9.created`.
    pub previous_i9_status: Option<I9Status>,
    /// What must happen next; `null` for `Approved` and `Parked`, which are final.
    pub i9_next_step: Option<String>,
    /// By when: the start date for Section 1, the I-9's `dateDue` for Section 2; `null` when no date applies.
    pub i9_next_step_due_date: Option<NaiveDate>,
    /// The I-9's record (absolute URL).
    pub i9_url: String,
}

/// A change of the employment of a partner's employee: the body of the
/// `employee.terminated`, `employee.termination_cancelled` and
/// `employee.rehired` callbacks. The I-9 fields are those of the employee's
/// latest I-9 at the time, all `null` when it has none.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmploymentEvent {
    /// What happened to the employment.
    #[serde(rename = "type")]
    pub event_type: EmploymentEventType,
    /// The event's id, also its `webhook-id` header: the same on every retry.
    #[schema(value_type = String, format = "uuid")]
    pub event_id: Uuid,
    /// Counts the events of one employee (I-9 and employment events alike) from 1: order by it.
    pub sequence: i64,
    /// When the change happened, in UTC (no offset), to the microsecond.
    #[schema(
        pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}$",
        example = "2026-12-02T15:04:05.123456"
    )]
    pub occurred_at: String,
    /// The employee's id (`GET /v1/employees/{id}`).
    pub employee_id: i64,
    /// Your key of the candidate, as pushed.
    pub integration_candidate_id: Option<String>,
    /// The id of the partner push that started the employee's latest I-9; `null` when it has none, or it was not started by a push.
    #[serde(rename = "IntegrationTransactionId")]
    pub integration_transaction_id: Option<String>,
    /// The start date of the current period of employment (the new one, for `employee.rehired`).
    pub start_date: Option<NaiveDate>,
    /// The termination date for `employee.terminated`; `null` for the other types.
    pub terminated_date: Option<NaiveDate>,
    /// The employee's latest I-9, if any.
    pub i9_id: Option<i64>,
    /// Its status.
    pub i9_status: Option<I9Status>,
    /// Its record (absolute URL).
    pub i9_url: Option<String>,
}

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

/// The record of I-9 `id` under `public_base_url`.
pub(crate) fn i9_url(public_base_url: &str, id: i64) -> String {
    format!("{public_base_url}/v1/i9s/{id}")
}

/// The next `sequence` of `employee`'s events.
pub(crate) async fn next_sequence(
    tx: &mut PgConnection,
    employee: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        "UPDATE employees SET event_sequence = event_sequence + 1 WHERE id = $1 RETURNING event_sequence",
        employee,
    )
    .fetch_one(&mut *tx)
    .await
}

/// Store event `id` (`payload`, serialized from its struct) and queue its callback.
pub(crate) async fn store<T: Serialize>(
    tx: &mut PgConnection,
    id: Uuid,
    employee: i64,
    i9: Option<i64>,
    sequence: i64,
    event_type: &str,
    event: &T,
) -> Result<(), sqlx::Error> {
    let payload = serde_json::to_value(event).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query!(
        "INSERT INTO partner_events (id, employee_id, i9_id, sequence, event_type, payload) VALUES ($1, $2, $3, $4, $5, $6)",
        id,
        employee,
        i9,
        sequence,
        event_type,
        &payload,
    )
    .execute(&mut *tx)
    .await?;
    outbox::enqueue(tx, Job::PostStatusCallback { event_id: id }).await?;
    Ok(())
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
                e.integration_candidate_id, i.integration_transaction_id
         FROM i9s i JOIN employees e ON e.id = i.employee_id
         WHERE i.id = $1 AND e.integration_client_id IS NOT NULL"#,
        i9_id,
    )
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(None);
    };
    let sequence = next_sequence(tx, row.employee_id).await?;
    let (step, step_due) = next_step(row.status, row.start_date, row.date_due);
    let event = I9Event {
        event_type: if previous.is_none() {
            I9EventType::Created
        } else {
            I9EventType::StatusChanged
        },
        event_id: Uuid::new_v4(),
        sequence,
        occurred_at: format_timestamp(Utc::now()),
        employee_id: row.employee_id,
        i9_id,
        integration_candidate_id: row.integration_candidate_id,
        integration_transaction_id: row.integration_transaction_id,
        i9_status: row.status,
        previous_i9_status: previous,
        i9_next_step: step.map(str::to_owned),
        i9_next_step_due_date: step_due,
        i9_url: i9_url(public_base_url, i9_id),
    };
    store(
        tx,
        event.event_id,
        row.employee_id,
        Some(i9_id),
        sequence,
        event.event_type.as_str(),
        &event,
    )
    .await?;
    Ok(Some(event.event_id))
}

/// A partner's employee and its latest I-9, as an employment event reads
/// them (the sequence already counted).
struct PartnerEmployeeRow {
    sequence: i64,
    integration_candidate_id: Option<String>,
    i9_id: Option<i64>,
    i9_status: Option<I9Status>,
    integration_transaction_id: Option<String>,
}

/// Record a change of the employment of `employee` (`kind`, the period as it
/// is now: `start`, `terminated`), if it belongs to a partner. Called by the
/// model where the period is written (`models::employee::set_period`,
/// `start_period`), whoever changes it. Returns the event id.
pub async fn record_employment_change(
    tx: &mut PgConnection,
    employee: i64,
    kind: EmploymentEventType,
    start: Option<NaiveDate>,
    terminated: Option<NaiveDate>,
    public_base_url: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    let Some(row) = sqlx::query_as!(
        PartnerEmployeeRow,
        r#"WITH e AS (UPDATE employees SET event_sequence = event_sequence + 1
                      WHERE id = $1 AND integration_client_id IS NOT NULL
                      RETURNING id, event_sequence, integration_candidate_id)
           SELECT e.event_sequence AS "sequence!", e.integration_candidate_id AS "integration_candidate_id?",
                  i.id AS "i9_id?", i.status AS "i9_status?: I9Status",
                  i.integration_transaction_id AS "integration_transaction_id?"
           FROM e LEFT JOIN LATERAL (SELECT id, status, integration_transaction_id FROM i9s
                                     WHERE employee_id = e.id ORDER BY id DESC LIMIT 1) i ON TRUE"#,
        employee,
    )
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(None);
    };
    let event = EmploymentEvent {
        event_type: kind,
        event_id: Uuid::new_v4(),
        sequence: row.sequence,
        occurred_at: format_timestamp(Utc::now()),
        employee_id: employee,
        integration_candidate_id: row.integration_candidate_id,
        integration_transaction_id: row.integration_transaction_id,
        start_date: start,
        terminated_date: match kind {
            EmploymentEventType::Terminated => terminated,
            _ => None,
        },
        i9_id: row.i9_id,
        i9_status: row.i9_status,
        i9_url: row.i9_id.map(|id| i9_url(public_base_url, id)),
    };
    store(
        tx,
        event.event_id,
        employee,
        row.i9_id,
        row.sequence,
        kind.as_str(),
        &event,
    )
    .await?;
    Ok(Some(event.event_id))
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
