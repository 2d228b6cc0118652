//! `everify.case_opened` and `everify.status_changed`: the E-Verify cases of
//! a partner's employee (docs/everify.md, "Partner events"), sequenced,
//! stored and posted as the other partner events are (docs/partners.md,
//! "Status callbacks"). Never the SSN, names or document numbers.

use chrono::{NaiveDate, Utc};
use serde::Serialize;
use sqlx::PgConnection;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::{
    everify::{Agency, CaseResult, CaseStatus, ClosureReason, ProgramName},
    format_timestamp,
};

/// The type of an E-Verify case event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum EverifyEventType {
    /// A case was opened (`Pending`), by `POST /v1/i9s/{id}/everify` or a resubmission.
    #[serde(rename = "everify.case_opened")]
    CaseOpened,
    /// The case's status changed, `Closed` included.
    #[serde(rename = "everify.status_changed")]
    StatusChanged,
}

impl EverifyEventType {
    pub const ALL: [Self; 2] = [Self::CaseOpened, Self::StatusChanged];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::CaseOpened => "everify.case_opened",
            Self::StatusChanged => "everify.status_changed",
        }
    }
}

/// A change of an E-Verify case of a partner's employee: the body of the
/// `everify.case_opened` and `everify.status_changed` callbacks.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EverifyEvent {
    #[serde(rename = "type")]
    pub event_type: EverifyEventType,
    /// The event's id, also its `webhook-id` header: the same on every retry.
    #[schema(value_type = String, format = "uuid")]
    pub event_id: Uuid,
    /// Counts the events of one employee (I-9, employment and E-Verify events alike) from 1: order by it.
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
    /// The id of the partner push that started the I-9; `null` for an I-9 not started by a push.
    #[serde(rename = "IntegrationTransactionId")]
    pub integration_transaction_id: Option<String>,
    /// The case's id (`GET /v1/everify-cases/{caseId}`).
    pub case_id: i64,
    /// The program's case number; `null` while `Pending`.
    pub case_number: Option<String>,
    /// `simulator` when the built-in simulator answered, never E-Verify.
    pub program: ProgramName,
    /// The case's status after the change.
    pub case_status: CaseStatus,
    /// Before the change; `null` for `everify.case_opened`.
    pub previous_case_status: Option<CaseStatus>,
    /// The agency of a mismatch.
    pub agency: Option<Agency>,
    /// The program's latest result.
    pub result: Option<CaseResult>,
    /// How the case was closed; `null` while open.
    pub closure_reason: Option<ClosureReason>,
    /// What is to be done next; `null` once closed.
    pub everify_next_step: Option<String>,
    /// By when, in federal working days (docs/everify.md, "Windows").
    pub everify_next_step_due_date: Option<NaiveDate>,
    /// The case this one replaced (Close Case and Resubmit: E-Verify's "Close and Create a New
    /// Case"), on every event of the new case; `null` otherwise.
    pub resubmit_of: Option<i64>,
    /// The case that replaced this one, on its `Closed` event (`closureReason`
    /// `INCORRECT_DATA`, `result` `Close Case and Resubmit`); `null` otherwise.
    pub resubmitted_as: Option<i64>,
    /// The case's record (absolute URL).
    pub case_url: String,
}

/// What an event says of the case.
#[derive(Debug, Clone)]
pub struct CaseFacts {
    pub case_id: i64,
    pub i9_id: i64,
    pub employee_id: i64,
    pub case_number: Option<String>,
    pub program: ProgramName,
    pub status: CaseStatus,
    pub agency: Option<Agency>,
    pub result: Option<CaseResult>,
    pub closure_reason: Option<ClosureReason>,
    pub next_step: Option<String>,
    pub next_step_due_on: Option<NaiveDate>,
    pub resubmit_of: Option<i64>,
    pub resubmitted_as: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct Row {
    integration_candidate_id: Option<String>,
    integration_transaction_id: Option<String>,
}

/// Record the opening (`previous` `None`) or change of a case, if its
/// employee belongs to a partner, and queue its callback. Returns the event id.
pub async fn record(
    tx: &mut PgConnection,
    case: &CaseFacts,
    previous: Option<CaseStatus>,
    public_base_url: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    let row: Option<Row> = sqlx::query_as(
        "SELECT e.integration_candidate_id, i.integration_transaction_id
         FROM i9s i JOIN employees e ON e.id = i.employee_id
         WHERE i.id = $1 AND e.integration_client_id IS NOT NULL",
    )
    .bind(case.i9_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let sequence = super::next_sequence(tx, case.employee_id).await?;
    let event = EverifyEvent {
        event_type: match previous {
            None => EverifyEventType::CaseOpened,
            Some(_) => EverifyEventType::StatusChanged,
        },
        event_id: Uuid::new_v4(),
        sequence,
        occurred_at: format_timestamp(Utc::now()),
        employee_id: case.employee_id,
        i9_id: case.i9_id,
        integration_candidate_id: row.integration_candidate_id,
        integration_transaction_id: row.integration_transaction_id,
        case_id: case.case_id,
        case_number: case.case_number.clone(),
        program: case.program,
        case_status: case.status,
        previous_case_status: previous,
        agency: case.agency,
        result: case.result,
        closure_reason: case.closure_reason,
        everify_next_step: case.next_step.clone(),
        everify_next_step_due_date: case.next_step_due_on,
        resubmit_of: case.resubmit_of,
        resubmitted_as: case.resubmitted_as,
        case_url: format!("{public_base_url}/v1/everify-cases/{}", case.case_id),
    };
    super::store(
        tx,
        event.event_id,
        case.employee_id,
        Some(case.i9_id),
        sequence,
        event.event_type.as_str(),
        &event,
    )
    .await?;
    Ok(Some(event.event_id))
}
