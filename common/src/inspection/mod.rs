//! The inspection package (docs/inspection.md): one I-9 as a PDF, with every
//! section, Supplements A and B, its E-Verify cases and the audit trail of
//! the record. [`gather`] reads what one PDF shows (a few queries, on the
//! connection the caller hands in); [`render`] is pure: the same record
//! gives the same PDF, without a database (the benchmark renders alone).
//!
//! The SSN is always masked to its last four digits in the PDF, whoever asks
//! (docs/inspection.md, "The SSN"): a PDF is a file that travels, and the
//! full number stays behind the audited `GET /v1/i9s/{id}`.

mod layout;
mod render;

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgConnection;

use crate::models::{
    i9::{self, RecordRow},
    supplement_b::{self, Recorded},
};

pub use render::{render, render_counted};

/// Everything one PDF shows.
#[derive(Debug, Clone)]
pub struct InspectionRecord {
    pub generated_at: DateTime<Utc>,
    /// The I-9's own columns and its employee's legal entity, read once for
    /// the API and the PDF ([`i9::record_row`]); the PDF shows the SSN's last
    /// four digits only.
    pub i9: RecordRow,
    pub preparers: Vec<Preparer>,
    pub supplement_b: Vec<Recorded>,
    pub everify: Vec<EverifyCase>,
    /// The audit trail, oldest first; `None` when the reader may not see it
    /// (the API, without permission 12: docs/inspection.md).
    pub audit: Option<Vec<AuditEntry>>,
}

/// A preparer or translator of Supplement A (docs/supplement-a.md).
#[derive(Debug, Clone)]
pub struct Preparer {
    pub position: i16,
    pub last_name: String,
    pub first_name: String,
    pub middle_initial: Option<String>,
    pub address: String,
    pub city: String,
    pub state: String,
    pub zip: String,
    pub signature: String,
    pub signed_date: NaiveDate,
}

/// An E-Verify case of the I-9 (docs/everify.md) with its history.
#[derive(Debug, Clone)]
pub struct EverifyCase {
    pub id: i64,
    pub program: String,
    pub case_number: Option<String>,
    pub status: String,
    pub result: Option<String>,
    pub agency: Option<String>,
    pub created_on: NaiveDate,
    pub closed_on: Option<NaiveDate>,
    pub closure_reason: Option<String>,
    pub closure_statement: Option<String>,
    /// Why a Final Nonconfirmation (`agency`, `no_show`, `no_action`).
    pub basis: Option<String>,
    pub employed_at_closure: Option<bool>,
    /// The employer's typed reason at closure (required to keep the
    /// employee after a nonconfirmation).
    pub closure_note: Option<String>,
    /// The creation deadline, and E-Verify's reason for a late case.
    pub due_on: Option<NaiveDate>,
    pub late_reason: Option<String>,
    pub late_reason_other: Option<String>,
    pub history: Vec<EverifyStep>,
}

impl EverifyCase {
    /// A case the built-in simulator answered: never a real verification.
    pub fn simulated(&self) -> bool {
        self.program == "simulator"
    }
}

#[derive(Debug, Clone)]
pub struct EverifyStep {
    pub on_day: NaiveDate,
    pub status: String,
    pub result: Option<String>,
    pub step: String,
}

/// An audit entry of the I-9, as `GET /v1/i9s/{id}/history` shows it
/// (api/src/routes/history.rs): who, what, when, the fields' names, never a
/// value.
#[derive(Debug, Clone)]
pub struct AuditEntry {
    pub occurred_at: DateTime<Utc>,
    pub action: String,
    pub user_id: Option<i64>,
    pub login: Option<String>,
    pub client: Option<String>,
    pub request_id: Option<String>,
    pub fields: Vec<String>,
}

/// What [`gather`] reads besides the I-9.
#[derive(Debug, Clone, Copy)]
pub struct Gather {
    pub generated_at: DateTime<Utc>,
    /// Read the audit trail (else [`InspectionRecord::audit`] is `None`).
    pub audit_trail: bool,
}

/// What one PDF of I-9 `id` shows, read on `conn`; `None` for no such I-9 or
/// a purged one (nothing is left to show: docs/retention.md).
pub async fn gather(
    conn: &mut PgConnection,
    id: i64,
    options: Gather,
) -> Result<Option<InspectionRecord>, sqlx::Error> {
    // A purged I-9 shows nothing (docs/retention.md).
    let Some(i9) = i9::record_row(&mut *conn, id)
        .await?
        .filter(|r| r.purged_at.is_none())
    else {
        return Ok(None);
    };
    let preparers = sqlx::query_as!(
        Preparer,
        "SELECT position, last_name, first_name, middle_initial, address, city, state, zip,
                signature, signed_date
         FROM i9_preparers WHERE i9_id = $1 ORDER BY position",
        id,
    )
    .fetch_all(&mut *conn)
    .await?;
    let supplement_b = supplement_b::of_i9(&mut *conn, id).await?;
    let everify = everify_cases(conn, id).await?;
    let audit = if options.audit_trail {
        Some(audit_trail(conn, id).await?)
    } else {
        None
    };
    Ok(Some(InspectionRecord {
        generated_at: options.generated_at,
        i9,
        preparers,
        supplement_b,
        everify,
        audit,
    }))
}

struct CaseRow {
    id: i64,
    program: String,
    case_number: Option<String>,
    status: String,
    result: Option<String>,
    agency: Option<String>,
    created_on: NaiveDate,
    closed_on: Option<NaiveDate>,
    closure_reason: Option<String>,
    closure_statement: Option<String>,
    basis: Option<String>,
    employed_at_closure: Option<bool>,
    closure_note: Option<String>,
    due_on: Option<NaiveDate>,
    late_reason: Option<String>,
    late_reason_other: Option<String>,
}

struct StepRow {
    case_id: i64,
    on_day: NaiveDate,
    status: String,
    result: Option<String>,
    step: String,
}

/// The E-Verify cases of I-9 `id`, oldest first, each with its steps.
async fn everify_cases(conn: &mut PgConnection, id: i64) -> Result<Vec<EverifyCase>, sqlx::Error> {
    let cases = sqlx::query_as!(
        CaseRow,
        "SELECT id, program, case_number, status, result, agency, created_on, closed_on,
                closure_reason, closure_statement, basis, employed_at_closure, closure_note,
                due_on, late_reason, late_reason_other
         FROM everify_cases WHERE i9_id = $1 ORDER BY id",
        id,
    )
    .fetch_all(&mut *conn)
    .await?;
    if cases.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = cases.iter().map(|c| c.id).collect();
    let steps = sqlx::query_as!(
        StepRow,
        "SELECT case_id, on_day, status, result, step
         FROM everify_case_history WHERE case_id = ANY($1) ORDER BY case_id, id",
        &ids[..],
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(cases
        .into_iter()
        .map(|c| EverifyCase {
            history: steps
                .iter()
                .filter(|s| s.case_id == c.id)
                .map(|s| EverifyStep {
                    on_day: s.on_day,
                    status: s.status.clone(),
                    result: s.result.clone(),
                    step: s.step.clone(),
                })
                .collect(),
            id: c.id,
            program: c.program,
            case_number: c.case_number,
            status: c.status,
            result: c.result,
            agency: c.agency,
            created_on: c.created_on,
            closed_on: c.closed_on,
            closure_reason: c.closure_reason,
            closure_statement: c.closure_statement,
            basis: c.basis,
            employed_at_closure: c.employed_at_closure,
            closure_note: c.closure_note,
            due_on: c.due_on,
            late_reason: c.late_reason,
            late_reason_other: c.late_reason_other,
        })
        .collect())
}

/// The audit log entries of I-9 `id`, oldest first, as the history reads
/// them: the fields' names, never a value (`detail`'s other members are not
/// read).
async fn audit_trail(conn: &mut PgConnection, id: i64) -> Result<Vec<AuditEntry>, sqlx::Error> {
    sqlx::query_as!(
        AuditEntry,
        r#"SELECT a.occurred_at, a.action, a.user_id, u.login AS "login?", c.client_id AS "client?",
                  a.request_id,
                  ARRAY(SELECT jsonb_array_elements_text(
                            CASE WHEN jsonb_typeof(a.detail -> 'fields') = 'array'
                                 THEN a.detail -> 'fields' ELSE '[]'::JSONB END)) AS "fields!"
           FROM audit_log a
           LEFT JOIN users u ON u.id = a.user_id
           LEFT JOIN oauth_clients c ON c.id = a.client_id
           WHERE a.resource_type = 'i9' AND a.resource_id = $1
           ORDER BY a.occurred_at, a.id"#,
        id.to_string(),
    )
    .fetch_all(conn)
    .await
}

/// The name of legal entity `id`, if there is one.
pub async fn legal_entity_name(
    conn: &mut PgConnection,
    id: i64,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar!("SELECT entity_name FROM legal_entities WHERE id = $1", id)
        .fetch_optional(conn)
        .await
}

/// Up to `limit` ids, in order after `after`, of the I-9s still under
/// retention (not purged: docs/retention.md) of the employees of legal
/// entity `legal_entity` (an I-9's legal entity is its employee's, as for a
/// legal hold), whatever their status.
pub async fn retained_i9s(
    conn: &mut PgConnection,
    legal_entity: i64,
    after: i64,
    limit: i64,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT i.id FROM i9s i JOIN employees e ON e.id = i.employee_id
         WHERE e.legal_entity_id = $1 AND i.purged_at IS NULL AND i.id > $2
         ORDER BY i.id LIMIT $3",
        legal_entity,
        after,
        limit,
    )
    .fetch_all(conn)
    .await
}
