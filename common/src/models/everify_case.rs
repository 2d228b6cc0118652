//! E-Verify cases (docs/everify.md): opening a case for an I-9, the
//! employer's steps, and the program's answers, each in the caller's
//! transaction with the case row locked. The workflow itself is
//! `domain::everify::apply`; here it is read from and written to
//! `everify_cases`, with its history row, audit entry, partner event and the
//! job that tells the program (`submit_everify_case`).

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::json;
use sqlx::PgConnection;

use super::{
    audit::{self, Entry},
    Actor, FieldError, WriteError,
};
use crate::{
    domain::{
        calendar::Calendar,
        everify::{
            apply, looks_sensitive, Agency, Basis, CaseResult, CaseState, CaseStatus, Change,
            ClosureReason, DuplicateReason, LateReason, ProgramName, Refused, Step,
            REASON_TEXT_MAX,
        },
        remote_examination::{self, Refusal},
        I9Status,
    },
    events::everify::{self as event, CaseFacts},
    everify::ProgramUpdate,
    jobs::{EverifyCall, Job},
    outbox,
};

/// One row of `everify_cases`, with the case that replaced it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Case {
    pub id: i64,
    pub i9_id: i64,
    pub employee_id: i64,
    pub legal_entity_id: i64,
    pub program: ProgramName,
    pub case_number: Option<String>,
    pub status: CaseStatus,
    pub result: Option<CaseResult>,
    pub agency: Option<Agency>,
    pub basis: Option<Basis>,
    pub program_message: Option<String>,
    pub from_receipt: bool,
    pub created_on: NaiveDate,
    pub due_on: Option<NaiveDate>,
    pub late: bool,
    pub late_reason: Option<LateReason>,
    pub late_reason_other: Option<String>,
    pub created_by_user_id: i64,
    pub creator_name: String,
    pub creator_email: Option<String>,
    pub creator_phone: Option<String>,
    pub result_issued_on: Option<NaiveDate>,
    pub employee_notified_on: Option<NaiveDate>,
    pub notice_language: Option<String>,
    pub referred_on: Option<NaiveDate>,
    pub continuance_on: Option<NaiveDate>,
    pub duplicate_reason: Option<DuplicateReason>,
    pub duplicate_reason_other: Option<String>,
    pub next_step: Option<String>,
    pub next_step_due_on: Option<NaiveDate>,
    pub closure_reason: Option<ClosureReason>,
    pub closure_statement: Option<String>,
    pub employed_at_closure: Option<bool>,
    pub closure_note: Option<String>,
    pub closed_on: Option<NaiveDate>,
    pub closed_by_user_id: Option<i64>,
    pub resubmit_of: Option<i64>,
    pub resubmitted_as: Option<i64>,
    pub unavailable_attempts: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The columns of [`Case`] from `everify_cases c`.
pub const COLUMNS: &str = "c.id, c.i9_id, c.employee_id, c.legal_entity_id, c.program, c.case_number, \
     c.status, c.result, c.agency, c.basis, c.program_message, c.from_receipt, c.created_on, \
     c.due_on, c.late, c.late_reason, c.late_reason_other, c.created_by_user_id, c.creator_name, \
     c.creator_email, c.creator_phone, c.result_issued_on, c.employee_notified_on, \
     c.notice_language, c.referred_on, c.continuance_on, c.duplicate_reason, \
     c.duplicate_reason_other, c.next_step, c.next_step_due_on, c.closure_reason, \
     c.closure_statement, c.employed_at_closure, c.closure_note, c.closed_on, \
     c.closed_by_user_id, c.resubmit_of, \
     (SELECT n.id FROM everify_cases n WHERE n.resubmit_of = c.id ORDER BY n.id LIMIT 1) AS resubmitted_as, \
     c.unavailable_attempts, c.created_at, c.updated_at";

impl Case {
    /// The case as the workflow reads it.
    pub fn state(&self) -> CaseState {
        CaseState {
            status: self.status,
            result: self.result,
            agency: self.agency,
            basis: self.basis,
            result_issued_on: self.result_issued_on,
            employee_notified_on: self.employee_notified_on,
            referred_on: self.referred_on,
            continuance_on: self.continuance_on,
            closure_reason: self.closure_reason,
            closed_on: self.closed_on,
        }
    }

    fn facts(&self) -> CaseFacts {
        CaseFacts {
            case_id: self.id,
            i9_id: self.i9_id,
            employee_id: self.employee_id,
            case_number: self.case_number.clone(),
            program: self.program,
            status: self.status,
            agency: self.agency,
            result: self.result,
            closure_reason: self.closure_reason,
            next_step: self.next_step.clone(),
            next_step_due_on: self.next_step_due_on,
            resubmit_of: self.resubmit_of,
            resubmitted_as: self.resubmitted_as,
        }
    }
}

/// Case `id`, if it exists.
pub async fn get(conn: &mut PgConnection, id: i64) -> Result<Option<Case>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM everify_cases c WHERE c.id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Case `id`, locked for the transaction.
async fn lock(conn: &mut PgConnection, id: i64) -> Result<Case, WriteError> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM everify_cases c WHERE c.id = $1 FOR UPDATE OF c"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await?
    .ok_or(WriteError::NotFound)
}

/// The cases of I-9 `i9`, newest first.
pub async fn of_i9(conn: &mut PgConnection, i9: i64) -> Result<Vec<Case>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM everify_cases c WHERE c.i9_id = $1 ORDER BY c.id DESC"
    ))
    .bind(i9)
    .fetch_all(conn)
    .await
}

/// The body of `POST /v1/i9s/{id}/everify`, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenCase {
    pub late_reason: Option<LateReason>,
    pub late_reason_other: Option<String>,
}

#[derive(sqlx::FromRow)]
struct I9Row {
    status: I9Status,
    employee_id: i64,
    start_date: Option<NaiveDate>,
    legal_entity_id: Option<i64>,
    entity_name: Option<String>,
    everify_id: Option<String>,
    everify_effective_date: Option<NaiveDate>,
    everify_status: Option<String>,
    active: Option<bool>,
    receipt: bool,
}

/// Who opens a case: the signed-in user (docs/everify.md, decision 9).
#[derive(sqlx::FromRow)]
struct Creator {
    name: String,
    email: Option<String>,
    phone: Option<String>,
}

/// Why a legal entity cannot open cases, in this feature's words.
fn entity_refusal(refusal: &Refusal) -> FieldError {
    const RULE: &str = "E-Verify cases are opened only for an employer enrolled in E-Verify in \
                        good standing (its legal entity's everifyId, everifyStatus Active).";
    let message = match refusal {
        Refusal::NoLegalEntity => format!("The employee has no legal entity. {RULE}"),
        Refusal::Inactive { entity } => format!("The legal entity {entity:?} is inactive. {RULE}"),
        Refusal::NotEnrolled { entity } => {
            format!("The legal entity {entity:?} is not enrolled in E-Verify. {RULE}")
        }
        Refusal::NotYetEnrolled { entity, effective } => format!(
            "The E-Verify enrollment of the legal entity {entity:?} takes effect on {effective}. {RULE}"
        ),
        Refusal::NotInGoodStanding { entity, status } => format!(
            "The legal entity {entity:?} is not in good standing with E-Verify: its status is {status:?}. {RULE}"
        ),
    };
    FieldError::new("legalEntity", refusal.code(), message)
}

/// The two days of a case's opening (docs/everify.md, "Which day (7)").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpeningDays {
    /// The service's day (`Config::today`): the start date of an I-9 without
    /// one, and the legal entity's good standing (as for the alternative
    /// procedure).
    pub service: NaiveDate,
    /// E-Verify's day, the U.S. Eastern date (`Config::everify_today`): the
    /// case's `createdOn`, its history, and `late` (`createdOn` after
    /// Section 2's `dateDue`).
    pub everify: NaiveDate,
}

/// Open a case for I-9 `i9_id` on `days` (docs/everify.md, "Proposed REST
/// resource": who may open one), queue its submission and record its
/// opening. Returns the case id.
pub async fn open(
    conn: &mut PgConnection,
    actor: &Actor,
    i9_id: i64,
    input: &OpenCase,
    days: OpeningDays,
    program: ProgramName,
    public_base_url: &str,
) -> Result<i64, WriteError> {
    let creator: Option<Creator> = sqlx::query_as(
        "SELECT first_name || ' ' || last_name AS name, email_address AS email,
                NULLIF(concat_ws(' x', work_number, work_extension), '') AS phone
         FROM users WHERE id = $1",
    )
    .bind(actor.user_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(creator) = creator else {
        return Err(WriteError::Forbidden(
            "An E-Verify case names its creator: a user must open it, not an API client \
             acting without a user."
                .into(),
        ));
    };
    // One open case per person (below) holds for two openings at once on two
    // I-9s of the same employee only if they queue: the employee's row is
    // their lock, taken before the I-9's as the employee writes take it
    // (`employee::lock`), so no two transactions wait on each other.
    sqlx::query(
        "SELECT 1 FROM employees WHERE id = (SELECT employee_id FROM i9s WHERE id = $1) FOR UPDATE",
    )
    .bind(i9_id)
    .execute(&mut *conn)
    .await?;
    let i9: I9Row = sqlx::query_as(
        "SELECT i.status, i.employee_id, i.start_date, le.id AS legal_entity_id, le.entity_name,
                le.everify_id, le.everify_effective_date, le.everify_status, le.active,
                COALESCE(i.list_a1_doc_receipt OR i.list_b_doc_receipt OR i.list_c_doc_receipt, FALSE) AS receipt
         FROM i9s i JOIN employees e ON e.id = i.employee_id
         LEFT JOIN legal_entities le ON le.id = e.legal_entity_id
         WHERE i.id = $1 FOR UPDATE OF i",
    )
    .bind(i9_id)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(WriteError::NotFound)?;
    if !matches!(
        i9.status,
        I9Status::SignedSec2 | I9Status::Completed | I9Status::Approved
    ) {
        return Err(WriteError::Conflict(format!(
            "An E-Verify case is opened once Sections 1 and 2 are done: the I-9 is {:?}, not \
             Signed Sec 2, Completed or Approved.",
            i9.status.as_str()
        )));
    }
    // One open case per person: an SSN belongs to one employee record (and
    // that to one legal entity), so the employee's open case, on this I-9 or
    // another, is the program's open case of the same SSN (docs/everify.md,
    // "Duplicate cases"). A case's employee is its I-9's.
    let open: Option<(i64, i64)> = sqlx::query_as(
        "SELECT id, i9_id FROM everify_cases
         WHERE employee_id = $1 AND status <> 'Closed' ORDER BY id LIMIT 1",
    )
    .bind(i9.employee_id)
    .fetch_optional(&mut *conn)
    .await?;
    match open {
        Some((open, of)) if of == i9_id => {
            return Err(WriteError::Conflict(format!(
                "The I-9 has an open E-Verify case already: /v1/everify-cases/{open}."
            )))
        }
        Some((open, of)) => {
            return Err(WriteError::Conflict(format!(
                "The employee has an open E-Verify case already, on I-9 {of}: \
                 /v1/everify-cases/{open}. E-Verify takes one open case per person: close it \
                 (or take it to its end) first."
            )))
        }
        None => {}
    }
    let verified: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM everify_cases WHERE i9_id = $1 AND result = 'Employment Authorized' LIMIT 1",
    )
    .bind(i9_id)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(case) = verified {
        return Err(WriteError::Conflict(format!(
            "The I-9 is verified already (case /v1/everify-cases/{case}, Employment Authorized): \
             a reverification is recorded on Supplement B alone, without a new case."
        )));
    }
    let mut errors = Vec::new();
    let enrollment = i9.legal_entity_id.map(|_| remote_examination::Enrollment {
        entity_name: i9.entity_name.clone().unwrap_or_default(),
        everify_id: i9.everify_id.clone(),
        everify_effective_date: i9.everify_effective_date,
        everify_status: i9.everify_status.clone().unwrap_or_default(),
        active: i9.active.unwrap_or(false),
    });
    if let Err(refusal) = remote_examination::legal_entity_allows_alternative_procedure(
        enrollment.as_ref(),
        days.service,
    ) {
        errors.push(entity_refusal(&refusal));
    }
    let start = i9.start_date.unwrap_or(days.service);
    if let Some(effective) = i9.everify_effective_date.filter(|e| start < *e) {
        errors.push(FieldError::new(
            "startDate",
            "hired_before_mou",
            format!(
                "The employee started on {start}, before the employer's E-Verify enrollment \
                 took effect ({effective}): the MOU forbids verifying employees hired before it."
            ),
        ));
    }
    let calendar = Calendar::load(&mut *conn, start).await?;
    let due_on = calendar.section2_due(start);
    // Late: the case's `createdOn` (E-Verify's day) after the creation
    // deadline (Section 2's `dateDue`), so `late` and `createdOn` never
    // disagree (docs/everify.md, "Windows").
    let late = days.everify > due_on;
    errors.extend(late_reason_errors(input, late, due_on));
    if !errors.is_empty() {
        return Err(WriteError::Invalid(errors));
    }
    let legal_entity_id = i9.legal_entity_id.ok_or(WriteError::NotFound)?;
    let state = CaseState::pending();
    let (next_step, next_due) = state.next_step();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO everify_cases (i9_id, employee_id, legal_entity_id, program, status,
             from_receipt, created_on, due_on, late, late_reason, late_reason_other,
             created_by_user_id, creator_name, creator_email, creator_phone, next_step, next_step_due_on)
         VALUES ($1, $2, $3, $4, 'Pending', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
         RETURNING id",
    )
    .bind(i9_id)
    .bind(i9.employee_id)
    .bind(legal_entity_id)
    .bind(program)
    .bind(i9.receipt)
    .bind(days.everify)
    .bind(due_on)
    .bind(late)
    .bind(input.late_reason)
    .bind(input.late_reason_other.as_deref())
    .bind(actor.user_id)
    .bind(&creator.name)
    .bind(creator.email.as_deref())
    .bind(creator.phone.as_deref())
    .bind(next_step.as_deref())
    .bind(next_due)
    .fetch_one(&mut *conn)
    .await?;
    opened(conn, actor, id, Step::Open, days.everify, public_base_url).await?;
    Ok(id)
}

/// The rules of `lateReason` and `lateReasonOther` (docs/everify.md, "Late
/// case creation").
fn late_reason_errors(input: &OpenCase, late: bool, due_on: NaiveDate) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match (late, input.late_reason) {
        (true, None) => errors.push(FieldError::new(
            "lateReason",
            "required",
            format!(
                "The case is late (it was due by {due_on}, the third business day after the \
                 start date): E-Verify asks why. One of: {}.",
                LateReason::NAMES.join(", ")
            ),
        )),
        (false, Some(_)) => errors.push(FieldError::new(
            "lateReason",
            "not_late",
            format!("The case is not late (due by {due_on}): E-Verify does not ask why."),
        )),
        _ => {}
    }
    match (&input.late_reason_other, input.late_reason) {
        (None, Some(LateReason::Other)) => errors.push(FieldError::new(
            "lateReasonOther",
            "required",
            "With lateReason OTHER, type the reason (1 to 200 characters).",
        )),
        (Some(_), reason) if late && reason.is_some_and(|r| r != LateReason::Other) => {
            errors.push(FieldError::new(
                "lateReasonOther",
                "not_other",
                "A typed reason goes only with lateReason OTHER.",
            ))
        }
        (Some(_), _) if !late => errors.push(FieldError::new(
            "lateReasonOther",
            "not_late",
            format!("The case is not late (due by {due_on}): E-Verify does not ask why."),
        )),
        (Some(text), _) => errors.extend(reason_text_error("lateReasonOther", text)),
        _ => {}
    }
    errors
}

/// A typed reason: 1 to 200 characters, nothing shaped like an SSN or an A-Number.
pub fn reason_text_error(field: &str, text: &str) -> Option<FieldError> {
    let n = text.trim().chars().count();
    if n == 0 {
        return Some(FieldError::new(field, "required", "Type the reason."));
    }
    if n > REASON_TEXT_MAX {
        return Some(FieldError::new(
            field,
            "too_long",
            format!("At most {REASON_TEXT_MAX} characters."),
        ));
    }
    looks_sensitive(text).then(|| {
        FieldError::new(
            field,
            "sensitive",
            "It must not hold personal data: nothing shaped like a Social Security number or an \
             A-Number (E-Verify's rule).",
        )
    })
}

/// The rules of a closure beyond its code's fit to the status
/// (docs/everify.md, "Closure reasons"): a typed `closureNote` where the code
/// needs one, and `employedAtClosure` where the closure decides the
/// employment and the code does not say it (a Final Nonconfirmation closed
/// with `OTHER`: `ClosureReason::needs_employment`).
fn closure_errors(
    status: CaseStatus,
    reason: ClosureReason,
    employed: Option<bool>,
    note: Option<&str>,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if employed.is_none() && reason.needs_employment(status) {
        errors.push(FieldError::new(
            "employedAtClosure",
            "required",
            format!(
                "Closing a {} with {} does not say whether the employee still works for the \
                 employer: send employedAtClosure true or false.",
                status.as_str(),
                reason.as_str()
            ),
        ));
    }
    match note {
        None if reason.needs_note() => errors.push(FieldError::new(
            "closureNote",
            "required",
            format!("Closing with {} needs a typed reason.", reason.as_str()),
        )),
        Some(text) => errors.extend(reason_text_error("closureNote", text)),
        None => {}
    }
    errors
}

/// Record a case just written as `Pending`: its history, audit, partner
/// event and the job that submits it.
async fn opened(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    step: Step,
    today: NaiveDate,
    public_base_url: &str,
) -> Result<(), WriteError> {
    history(
        conn,
        id,
        CaseStatus::Pending,
        None,
        step,
        today,
        actor.user_id,
    )
    .await?;
    let case = lock(conn, id).await?;
    audit::record(
        &mut *conn,
        actor,
        Entry::new("everify.case_opened", "everify_case", id).detail(json!({
            "i9Id": case.i9_id, "program": case.program.as_str(), "late": case.late,
            "lateReason": case.late_reason.map(LateReason::as_str),
            "resubmitOf": case.resubmit_of,
        })),
    )
    .await?;
    event::record(conn, &case.facts(), None, public_base_url).await?;
    outbox::enqueue(
        conn,
        Job::SubmitEverifyCase {
            case_id: id,
            call: EverifyCall::Submit,
        },
    )
    .await?;
    Ok(())
}

async fn history(
    conn: &mut PgConnection,
    id: i64,
    status: CaseStatus,
    result: Option<CaseResult>,
    step: Step,
    today: NaiveDate,
    by: Option<i64>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO everify_case_history (case_id, status, result, step, on_day, by_user_id)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(id)
    .bind(status)
    .bind(result)
    .bind(step.as_str())
    .bind(today)
    .bind(by)
    .execute(conn)
    .await?;
    Ok(())
}

/// An employer's step on a case, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepInput {
    ConfirmDetails,
    ContinueDuplicate {
        reason: DuplicateReason,
        other: Option<String>,
    },
    Notify {
        language: Option<String>,
    },
    Refer,
    NoAction,
    Resubmit,
    Close {
        reason: ClosureReason,
        employed: Option<bool>,
        note: Option<String>,
    },
}

impl StepInput {
    fn change(&self) -> Change {
        match self {
            StepInput::ConfirmDetails => Change::ConfirmDetails,
            StepInput::ContinueDuplicate { .. } => Change::ContinueDuplicate,
            StepInput::Notify { .. } => Change::Notify,
            StepInput::Refer => Change::Refer,
            StepInput::NoAction => Change::NoAction,
            StepInput::Resubmit => Change::Resubmit,
            StepInput::Close { reason, .. } => Change::Close(*reason),
        }
    }

    /// The program's call this step makes, if any (notify is the employer's alone).
    fn call(&self) -> Option<EverifyCall> {
        match self {
            StepInput::ConfirmDetails => Some(EverifyCall::ConfirmDetails),
            StepInput::ContinueDuplicate { reason, .. } => {
                Some(EverifyCall::ContinueDuplicate { reason: *reason })
            }
            StepInput::Notify { .. } => None,
            StepInput::Refer => Some(EverifyCall::Refer),
            StepInput::NoAction => Some(EverifyCall::NoAction),
            StepInput::Resubmit => Some(EverifyCall::Close {
                reason: ClosureReason::IncorrectData,
            }),
            StepInput::Close { reason, .. } => Some(EverifyCall::Close { reason: *reason }),
        }
    }
}

/// The employer's `step` on case `id` on `today`, E-Verify's day
/// (`Config::everify_today`, docs/everify.md "Which day (7)"): the step, a
/// resubmission's new case and the history are dated on it. Returns the case
/// to show: this one, or the new case a resubmission opened.
pub async fn step(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    input: &StepInput,
    today: NaiveDate,
    public_base_url: &str,
) -> Result<i64, WriteError> {
    let case = lock(conn, id).await?;
    let before = case.state();
    let after = match apply(&before, input.change(), today) {
        Ok(s) => s,
        Err(Refused::Conflict(m)) => return Err(WriteError::Conflict(m)),
        Err(Refused::ClosureReason(m)) => {
            return Err(WriteError::invalid("closureReason", "invalid_value", m))
        }
    };
    if let StepInput::Close {
        reason,
        employed,
        note,
    } = input
    {
        let errors = closure_errors(before.status, *reason, *employed, note.as_deref());
        if !errors.is_empty() {
            return Err(WriteError::Invalid(errors));
        }
    }
    if let StepInput::ContinueDuplicate {
        reason,
        other: text,
    } = input
    {
        match (reason, text) {
            (DuplicateReason::Other, None) => {
                return Err(WriteError::invalid(
                    "reasonOther",
                    "required",
                    "With reason OTHER, type the reason (1 to 200 characters).",
                ))
            }
            (_, Some(text)) => {
                if let Some(e) = reason_text_error("reasonOther", text) {
                    return Err(WriteError::Invalid(vec![e]));
                }
            }
            _ => {}
        }
    }
    write(conn, id, &after).await?;
    match input {
        StepInput::Notify { language } => {
            sqlx::query("UPDATE everify_cases SET notice_language = $2 WHERE id = $1")
                .bind(id)
                .bind(language.as_deref())
                .execute(&mut *conn)
                .await?;
        }
        StepInput::ContinueDuplicate { reason, other } => {
            sqlx::query(
                "UPDATE everify_cases SET duplicate_reason = $2, duplicate_reason_other = $3 WHERE id = $1",
            )
            .bind(id)
            .bind(reason)
            .bind(other.as_deref())
            .execute(&mut *conn)
            .await?;
        }
        StepInput::Close {
            reason,
            employed,
            note,
        } => {
            sqlx::query(
                "UPDATE everify_cases SET employed_at_closure = $2, closure_note = $3,
                        closed_by_user_id = $4 WHERE id = $1",
            )
            .bind(id)
            .bind(reason.employed().or(*employed))
            .bind(note.as_deref())
            .bind(actor.user_id)
            .execute(&mut *conn)
            .await?;
        }
        StepInput::Resubmit => {
            sqlx::query("UPDATE everify_cases SET closed_by_user_id = $2 WHERE id = $1")
                .bind(id)
                .bind(actor.user_id)
                .execute(&mut *conn)
                .await?;
        }
        _ => {}
    }
    let step = input.change().step();
    audit::record(
        &mut *conn,
        actor,
        Entry::new("everify.step", "everify_case", id).detail(json!({ "step": step.as_str() })),
    )
    .await?;
    // E-Verify's "Close and Create a New Case": the same I-9's data again.
    // The new case is written before this one's `Closed` event, which names
    // it (`resubmittedAs`); its own events follow, naming this one
    // (`resubmitOf`; docs/everify.md, "Partner events").
    let new = match input {
        StepInput::Resubmit => Some(resubmission(conn, actor, id, today).await?),
        _ => None,
    };
    changed(conn, actor, id, before.status, step, today, public_base_url).await?;
    if let Some(call) = input.call() {
        outbox::enqueue(&mut *conn, Job::SubmitEverifyCase { case_id: id, call }).await?;
    }
    if let Some(new) = new {
        opened(conn, actor, new, Step::Resubmit, today, public_base_url).await?;
        return Ok(new);
    }
    Ok(id)
}

/// The case that replaces case `id` (Close Case and Resubmit), written
/// `Pending` from its data; its opening is recorded by [`opened`].
async fn resubmission(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    today: NaiveDate,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO everify_cases (i9_id, employee_id, legal_entity_id, program, status,
             from_receipt, created_on, due_on, late, late_reason, late_reason_other,
             created_by_user_id, creator_name, creator_email, creator_phone, resubmit_of,
             next_step)
         SELECT i9_id, employee_id, legal_entity_id, program, 'Pending', from_receipt, $2,
                due_on, late, late_reason, late_reason_other, $3, creator_name, creator_email,
                creator_phone, id, 'E-Verify answers'
         FROM everify_cases WHERE id = $1
         RETURNING id",
    )
    .bind(id)
    .bind(today)
    .bind(actor.user_id)
    .fetch_one(conn)
    .await
}

/// Write the workflow's state of case `id`, its next step and due date.
async fn write(conn: &mut PgConnection, id: i64, s: &CaseState) -> Result<(), sqlx::Error> {
    let (next_step, next_due) = s.next_step();
    sqlx::query(
        "UPDATE everify_cases SET status = $2, result = $3, agency = $4, basis = $5,
                result_issued_on = $6, employee_notified_on = $7, referred_on = $8,
                continuance_on = $9, closure_reason = $10, closure_statement = $11,
                closed_on = $12, next_step = $13, next_step_due_on = $14, updated_at = now()
         WHERE id = $1",
    )
    .bind(id)
    .bind(s.status)
    .bind(s.result)
    .bind(s.agency)
    .bind(s.basis)
    .bind(s.result_issued_on)
    .bind(s.employee_notified_on)
    .bind(s.referred_on)
    .bind(s.continuance_on)
    .bind(s.closure_reason)
    .bind(s.closure_reason.map(ClosureReason::statement))
    .bind(s.closed_on)
    .bind(next_step.as_deref())
    .bind(next_due)
    .execute(conn)
    .await?;
    Ok(())
}

/// After a write of case `id` that was in `previous`: the history row, and
/// when the status changed, the partner event (and the closure's audit).
async fn changed(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    previous: CaseStatus,
    step: Step,
    today: NaiveDate,
    public_base_url: &str,
) -> Result<(), WriteError> {
    let case = lock(conn, id).await?;
    history(
        conn,
        id,
        case.status,
        case.result,
        step,
        today,
        actor.user_id,
    )
    .await?;
    if case.status == previous {
        return Ok(());
    }
    if case.status == CaseStatus::Closed {
        audit::record(
            &mut *conn,
            actor,
            Entry::new("everify.closed", "everify_case", id).detail(json!({
                "closureReason": case.closure_reason.map(ClosureReason::as_str),
                "result": case.result.map(CaseResult::as_str),
            })),
        )
        .await?;
    }
    event::record(conn, &case.facts(), Some(previous), public_base_url).await?;
    Ok(())
}

/// Apply the program's `update` on `today`, E-Verify's day
/// (`Config::everify_today`, docs/everify.md "Which day (7)"), if the case is
/// still where the update found it. Returns whether it changed the case.
pub async fn apply_update(
    conn: &mut PgConnection,
    update: &ProgramUpdate,
    today: NaiveDate,
    public_base_url: &str,
) -> Result<bool, WriteError> {
    let case = lock(conn, update.case_id).await?;
    if case.status != update.from {
        return Ok(false);
    }
    let before = case.state();
    let change = Change::Answer {
        result: update.result,
        agency: update.agency,
        basis: update.basis,
    };
    let after = match apply(&before, change, today) {
        Ok(s) => s,
        Err(_) => return Ok(false),
    };
    write(conn, case.id, &after).await?;
    sqlx::query(
        "UPDATE everify_cases SET case_number = COALESCE(case_number, $2),
                employed_at_closure = CASE WHEN $3 THEN TRUE ELSE employed_at_closure END
         WHERE id = $1",
    )
    .bind(case.id)
    .bind(&update.case_number)
    .bind(update.result == CaseResult::EmploymentAuthorized)
    .execute(&mut *conn)
    .await?;
    let program = Actor::default();
    audit::record(
        &mut *conn,
        &program,
        Entry::new("everify.status_changed", "everify_case", case.id).detail(json!({
            "from": before.status.as_str(), "to": after.status.as_str(),
            "result": update.result.as_str(),
        })),
    )
    .await?;
    changed(
        conn,
        &program,
        case.id,
        before.status,
        Step::Program,
        today,
        public_base_url,
    )
    .await?;
    Ok(true)
}

/// A call to case `id` failed, the program being unavailable: counted (the
/// simulator's `UNAVAILABLE` scenario reads it; the MOU extends the three
/// days by the outage).
pub async fn record_unavailable(conn: &mut PgConnection, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE everify_cases SET unavailable_attempts = unavailable_attempts + 1 WHERE id = $1",
    )
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// The latest case of an I-9 or employee, as their records show it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Latest {
    pub id: i64,
    pub case_number: Option<String>,
    pub status: CaseStatus,
    /// The program's latest result, kept when closed.
    pub result: Option<CaseResult>,
    pub next_step: Option<String>,
    pub next_step_due_on: Option<NaiveDate>,
}

/// The latest case of I-9 `i9`.
pub async fn latest_of_i9(conn: &mut PgConnection, i9: i64) -> Result<Option<Latest>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, case_number, status, result, next_step, next_step_due_on FROM everify_cases
         WHERE i9_id = $1 ORDER BY id DESC LIMIT 1",
    )
    .bind(i9)
    .fetch_optional(conn)
    .await
}

/// The latest case of an employee, with whether any of its cases is unresolved.
#[derive(sqlx::FromRow)]
struct LatestOfEmployee {
    id: Option<i64>,
    case_number: Option<String>,
    status: Option<CaseStatus>,
    result: Option<CaseResult>,
    next_step: Option<String>,
    next_step_due_on: Option<NaiveDate>,
    unresolved: bool,
}

/// The latest case of employee `employee`, and whether any of its cases is
/// unresolved: one round trip (the employee read is the hottest path).
pub async fn latest_of_employee(
    conn: &mut PgConnection,
    employee: i64,
) -> Result<(Option<Latest>, bool), sqlx::Error> {
    let row: LatestOfEmployee = sqlx::query_as(
        "SELECT l.id, l.case_number, l.status, l.result, l.next_step, l.next_step_due_on,
                EXISTS (SELECT 1 FROM everify_cases WHERE employee_id = $1 AND status <> 'Closed')
                  AS unresolved
         FROM (SELECT 1) one
         LEFT JOIN LATERAL (
           SELECT id, case_number, status, result, next_step, next_step_due_on FROM everify_cases
           WHERE employee_id = $1 ORDER BY id DESC LIMIT 1
         ) l ON TRUE",
    )
    .bind(employee)
    .fetch_one(conn)
    .await?;
    let latest = row.id.zip(row.status).map(|(id, status)| Latest {
        id,
        case_number: row.case_number,
        status,
        result: row.result,
        next_step: row.next_step,
        next_step_due_on: row.next_step_due_on,
    });
    Ok((latest, row.unresolved))
}

/// The legal entities with cases the program may still change: the poll's accounts.
pub async fn accounts_to_poll(
    conn: &mut PgConnection,
    program: ProgramName,
) -> Result<Vec<(i64, Option<String>)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT DISTINCT le.id, le.everify_id FROM everify_cases c
         JOIN legal_entities le ON le.id = c.legal_entity_id
         WHERE c.program = $1 AND c.status <> 'Closed' ORDER BY le.id",
    )
    .bind(program)
    .fetch_all(conn)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn codes(input: OpenCase, late: bool) -> Vec<(String, &'static str)> {
        late_reason_errors(&input, late, d("2026-11-05"))
            .into_iter()
            .map(|e| (e.field, e.code))
            .collect()
    }

    #[test]
    fn a_late_reason_is_required_when_late_and_refused_when_not() {
        let none = OpenCase::default();
        assert_eq!(
            codes(none.clone(), true),
            [("lateReason".into(), "required")]
        );
        assert!(codes(none, false).is_empty());
        let awaiting = OpenCase {
            late_reason: Some(LateReason::AwaitingSsn),
            late_reason_other: None,
        };
        assert!(codes(awaiting.clone(), true).is_empty());
        assert_eq!(codes(awaiting, false), [("lateReason".into(), "not_late")]);
        let other = |t: &str| OpenCase {
            late_reason: Some(LateReason::Other),
            late_reason_other: Some(t.into()),
        };
        assert!(codes(other("The hiring manager was away"), true).is_empty());
        assert_eq!(
            codes(other("card 123-45-6789"), true),
            [("lateReasonOther".into(), "sensitive")]
        );
        assert_eq!(
            codes(other(&"x".repeat(201)), true),
            [("lateReasonOther".into(), "too_long")]
        );
        assert_eq!(
            codes(
                OpenCase {
                    late_reason: Some(LateReason::Other),
                    late_reason_other: None
                },
                true
            ),
            [("lateReasonOther".into(), "required")]
        );
    }
}
