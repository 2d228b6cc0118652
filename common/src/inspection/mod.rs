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
    /// The open case's next step and its due date (docs/everify.md,
    /// "Windows"); `None` once closed.
    pub next_step: Option<String>,
    pub next_step_due_on: Option<NaiveDate>,
    pub employee_notified_on: Option<NaiveDate>,
    pub referred_on: Option<NaiveDate>,
    /// Who closed it (the API's `closedBy`), with the user's login.
    pub closed_by: Option<UserRef>,
    pub history: Vec<EverifyStep>,
}

impl EverifyCase {
    /// A case the built-in simulator answered: never a real verification.
    pub fn simulated(&self) -> bool {
        self.program == "simulator"
    }
}

/// A user, as the PDF names users: id and login.
#[derive(Debug, Clone)]
pub struct UserRef {
    pub id: i64,
    pub login: Option<String>,
}

#[derive(Debug, Clone)]
pub struct EverifyStep {
    pub on_day: NaiveDate,
    pub status: String,
    pub result: Option<String>,
    pub step: String,
    /// Who took the step (the API's `byUserId`); `None` for the program's
    /// own update (step `program`).
    pub by: Option<UserRef>,
}

/// An audit entry of the I-9 or of one of its E-Verify cases, as `GET
/// /v1/i9s/{id}/history` shows it (api/src/routes/history.rs): who, what,
/// when, the fields' names, never a value.
#[derive(Debug, Clone)]
pub struct AuditEntry {
    pub occurred_at: DateTime<Utc>,
    pub action: String,
    pub user_id: Option<i64>,
    pub login: Option<String>,
    pub client: Option<String>,
    pub request_id: Option<String>,
    pub fields: Vec<String>,
    /// The case of an `everify.*` entry; `None` for the I-9's own.
    pub everify_case_id: Option<i64>,
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
    next_step: Option<String>,
    next_step_due_on: Option<NaiveDate>,
    employee_notified_on: Option<NaiveDate>,
    referred_on: Option<NaiveDate>,
    closed_by_user_id: Option<i64>,
    closed_by_login: Option<String>,
}

struct StepRow {
    case_id: i64,
    on_day: NaiveDate,
    status: String,
    result: Option<String>,
    step: String,
    by_user_id: Option<i64>,
    by_login: Option<String>,
}

/// The E-Verify cases of I-9 `id`, oldest first, each with its steps.
async fn everify_cases(conn: &mut PgConnection, id: i64) -> Result<Vec<EverifyCase>, sqlx::Error> {
    let cases = sqlx::query_as!(
        CaseRow,
        r#"SELECT c.id, c.program, c.case_number, c.status, c.result, c.agency, c.created_on,
                  c.closed_on, c.closure_reason, c.closure_statement, c.basis,
                  c.employed_at_closure, c.closure_note, c.due_on, c.late_reason,
                  c.late_reason_other, c.next_step, c.next_step_due_on, c.employee_notified_on,
                  c.referred_on, c.closed_by_user_id, u.login AS "closed_by_login?"
           FROM everify_cases c LEFT JOIN users u ON u.id = c.closed_by_user_id
           WHERE c.i9_id = $1 ORDER BY c.id"#,
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
        r#"SELECT h.case_id, h.on_day, h.status, h.result, h.step, h.by_user_id,
                  u.login AS "by_login?"
           FROM everify_case_history h LEFT JOIN users u ON u.id = h.by_user_id
           WHERE h.case_id = ANY($1) ORDER BY h.case_id, h.id"#,
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
                    by: s.by_user_id.map(|id| UserRef {
                        id,
                        login: s.by_login.clone(),
                    }),
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
            next_step: c.next_step,
            next_step_due_on: c.next_step_due_on,
            employee_notified_on: c.employee_notified_on,
            referred_on: c.referred_on,
            closed_by: c.closed_by_user_id.map(|id| UserRef {
                id,
                login: c.closed_by_login,
            }),
        })
        .collect())
}

/// The audit log entries of I-9 `id` and of its E-Verify cases, oldest
/// first, as the history reads them (api/src/routes/history.rs): the fields'
/// names, never a value (`detail`'s other members are not read).
async fn audit_trail(conn: &mut PgConnection, id: i64) -> Result<Vec<AuditEntry>, sqlx::Error> {
    sqlx::query_as!(
        AuditEntry,
        r#"WITH keys (t, r) AS (
               SELECT 'i9', $1::TEXT
               UNION ALL
               SELECT 'everify_case', ec.id::TEXT FROM everify_cases ec WHERE ec.i9_id = $2)
           SELECT a.occurred_at, a.action, a.user_id, u.login AS "login?", c.client_id AS "client?",
                  a.request_id,
                  ARRAY(SELECT jsonb_array_elements_text(
                            CASE WHEN jsonb_typeof(a.detail -> 'fields') = 'array'
                                 THEN a.detail -> 'fields' ELSE '[]'::JSONB END)) AS "fields!",
                  CASE WHEN a.resource_type = 'everify_case'
                       THEN a.resource_id::BIGINT END AS everify_case_id
           FROM audit_log a
           JOIN keys k ON a.resource_type = k.t AND a.resource_id = k.r
           LEFT JOIN users u ON u.id = a.user_id
           LEFT JOIN oauth_clients c ON c.id = a.client_id
           ORDER BY a.occurred_at, a.id"#,
        id.to_string(),
        id,
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
