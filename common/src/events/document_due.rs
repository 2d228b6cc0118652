//! `i9.document_due`: an expiring-document reminder of an I-9 of a partner's
//! employee (docs/reminders.md), sequenced, stored and posted as the other
//! partner events are (docs/partners.md, "Status callbacks").

use chrono::{NaiveDate, Utc};
use serde::Serialize;
use sqlx::PgConnection;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::{format_timestamp, DueKind, I9Status, Stage};

/// The type of a reminder event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum DocumentDueEventType {
    /// A reverification or receipt due date reached a reminder threshold, or passed; or a
    /// reverification was requested because E-Verify's Status Change Report named the I-9's
    /// EAD as revoked (`dueKind` `revocation`).
    #[serde(rename = "i9.document_due")]
    DocumentDue,
}

impl DocumentDueEventType {
    pub const ALL: [Self; 1] = [Self::DocumentDue];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::DocumentDue => "i9.document_due",
        }
    }
}

/// A reminder that a document is due on an I-9 of a partner's employee: the
/// body of the `i9.document_due` callback. Sent once per I-9, kind, due date
/// and threshold, at the same time as the employer's reminder emails; and
/// once per reverification request a Status Change Report opens
/// (`dueKind` `revocation`, docs/everify.md), with the employer's email.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentDueEvent {
    /// `i9.document_due`.
    #[serde(rename = "type")]
    pub event_type: DocumentDueEventType,
    /// The event's id, also its `webhook-id` header: the same on every retry.
    #[schema(value_type = String, format = "uuid")]
    pub event_id: Uuid,
    /// Counts the events of one employee (I-9 and employment events alike) from 1: order by it.
    pub sequence: i64,
    /// When the reminder was recorded, in UTC (no offset), to the microsecond.
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
    /// The I-9's status.
    pub i9_status: I9Status,
    /// What is due: `reverification` (Supplement B, by `i9Expiration`), `receipt` (the
    /// document a receipt stood for, by `receiptDueDate`) or `revocation` (Supplement B with
    /// another document than the revoked EAD, by `reverificationRequired.dueDate`).
    pub due_kind: DueKind,
    /// The day it is due.
    pub due_date: NaiveDate,
    /// The threshold reached: days before `dueDate` (`90`, `30`, `7` by default), or `overdue`
    /// once `dueDate` has passed; `null` for a `revocation` (a request, not a reminder).
    #[schema(pattern = r"^([0-9]{1,4}|overdue)$", example = "30")]
    pub threshold: Option<String>,
    /// The I-9's record (absolute URL).
    pub i9_url: String,
}

/// The I-9 of a partner's employee, as a reminder event reads it.
struct Row {
    employee_id: i64,
    status: I9Status,
    integration_candidate_id: Option<String>,
    integration_transaction_id: Option<String>,
}

/// Record the reminder (`kind` due on `due`, `stage` reached; no stage for a
/// revocation's request) of I-9 `i9_id`, if its employee belongs to a
/// partner, and queue its callback. Returns the event id.
pub async fn record(
    tx: &mut PgConnection,
    i9_id: i64,
    kind: DueKind,
    due: NaiveDate,
    stage: Option<Stage>,
    public_base_url: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    let Some(row) = sqlx::query_as!(
        Row,
        r#"SELECT e.id AS employee_id, i.status AS "status: I9Status",
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
    let sequence = super::next_sequence(tx, row.employee_id).await?;
    let event = DocumentDueEvent {
        event_type: DocumentDueEventType::DocumentDue,
        event_id: Uuid::new_v4(),
        sequence,
        occurred_at: format_timestamp(Utc::now()),
        employee_id: row.employee_id,
        i9_id,
        integration_candidate_id: row.integration_candidate_id,
        integration_transaction_id: row.integration_transaction_id,
        i9_status: row.status,
        due_kind: kind,
        due_date: due,
        threshold: stage.map(Stage::as_text),
        i9_url: super::i9_url(public_base_url, i9_id),
    };
    super::store(
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
