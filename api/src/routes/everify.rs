//! E-Verify cases (docs/everify.md, "REST resource"): `POST
//! /v1/i9s/{id}/everify` opens a case, `GET /v1/everify-cases/{caseId}`,
//! `GET /v1/everify-cases`, `GET /v1/i9s/{id}/everify` read them, and the
//! employer's steps `POST /v1/everify-cases/{caseId}/{step}`. The rules are
//! in `i9_common::models::everify_case` and `domain::everify`; a handler
//! here extracts, authorizes, calls and answers. Every call to the program
//! runs in the worker (`submit_everify_case`): the answers are `202`.
//! Visibility is the I-9's (the caller's groups; a partner its own
//! employees, read-only: every step is out of its reach, `auth::partner_reaches`).

use std::{collections::BTreeSet, sync::OnceLock};

use axum::{
    extract::{RawQuery, State},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use chrono::{DateTime, NaiveDate, Utc};
use i9_common::{
    domain::{
        everify::{
            Agency, Basis, CaseResult, CaseStatus, ClosureReason, DuplicateReason, LateReason,
            ProgramName,
        },
        fields::Text,
        Field, FromJson, Invalid, Permission, Required, Scope,
    },
    models::everify_case::{self as model, Case, OpenCase, OpeningDays, StepInput},
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{Postgres, QueryBuilder};
use utoipa::{
    openapi::{ObjectBuilder, RefOr, Schema, Type},
    IntoParams, PartialSchema, ToSchema,
};

use super::{i9s, Id};
use crate::{
    auth::Caller,
    body::{properties, JsonBody, Problems, RequestBody},
    error::{ApiError, ApiResult, FieldError, Problem},
    format,
    list::{
        filter, FilterKind as K, FilterSpec, Format, Link, ListQuery, ListResponse, PageSql,
        Restrict,
    },
    state::AppState,
};

/// A code of one of the service's lists, exactly as spelled.
macro_rules! code {
    ($name:ident, $inner:ty, $what:literal) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name(pub $inner);

        impl FromJson for $name {
            fn from_json(value: &Value) -> Result<Self, Invalid> {
                let Some(s) = value.as_str() else {
                    return Err(Invalid::new("invalid_type", "Must be a string."));
                };
                <$inner>::parse(s.trim()).map($name).ok_or_else(|| {
                    Invalid::new(
                        "invalid_value",
                        format!(
                            concat!("Not ", $what, ". One of: {}."),
                            <$inner>::NAMES.join(", ")
                        ),
                    )
                })
            }
        }

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(<$inner>::NAMES.iter().copied()))
                    .into()
            }
        }

        impl ToSchema for $name {}
    };
}

code!(LateReasonCode, LateReason, "a late reason");
code!(ClosureReasonCode, ClosureReason, "a closure reason");
code!(DuplicateReasonCode, DuplicateReason, "a duplicate reason");

pub type ReasonText = Text<200>;

/// The body of `POST /v1/i9s/{id}/everify`: only why the case is late, when
/// it is. Everything else comes from the I-9; the case creator is the
/// signed-in user.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"lateReason": "AWAITING_SSN"}))]
pub struct NewEverifyCase {
    /// Why the case is created after the third business day after the start date: required
    /// then, refused otherwise (`not_late`).
    #[serde(default)]
    #[schema(inline)]
    pub late_reason: Field<LateReasonCode>,
    /// With `lateReason` `OTHER`: 1 to 200 characters, nothing shaped like a Social Security
    /// number or an A-Number (`sensitive`).
    #[serde(default)]
    #[schema(inline)]
    pub late_reason_other: Field<ReasonText>,
}

impl RequestBody for NewEverifyCase {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        FieldError::new(
            name,
            "unknown_field",
            "A case takes only lateReason and lateReasonOther: its data comes from the I-9.",
        )
    }
}

impl NewEverifyCase {
    fn check(self) -> Result<OpenCase, Vec<FieldError>> {
        let mut p = Problems::default();
        let late_reason = p.optional("lateReason", self.late_reason).map(|c| c.0);
        let late_reason_other = p
            .optional("lateReasonOther", self.late_reason_other)
            .map(Text::into_string);
        p.finish(OpenCase {
            late_reason,
            late_reason_other,
        })
    }
}

/// The body of `POST /v1/everify-cases/{caseId}/close`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"closureReason": "EMPLOYEE_TERMINATED_FOR_FNC"}))]
pub struct CaseClosure {
    /// How the case is closed; which codes fit depends on the status (`422` naming the allowed ones).
    #[schema(inline)]
    pub closure_reason: Required<ClosureReasonCode>,
    /// Whether the employee still works here, when the code does not say: required then on a
    /// Final Nonconfirmation (`OTHER`), optional on the other statuses; contradicting the code
    /// is a 422 (`contradicts_closure_reason`).
    #[serde(default)]
    #[schema(inline)]
    pub employed_at_closure: Field<bool>,
    /// Required with the `…CONTINUES_TO_WORK_AFTER_FNC|NO_SHOW|NO_ACTION` codes and `OTHER`; at most 200 characters.
    #[serde(default)]
    #[schema(inline)]
    pub closure_note: Field<ReasonText>,
}

impl RequestBody for CaseClosure {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        FieldError::new(name, "unknown_field", "Not a field of a case closure.")
    }
}

impl CaseClosure {
    fn check(self) -> Result<StepInput, Vec<FieldError>> {
        let mut p = Problems::default();
        let reason = p.required("closureReason", self.closure_reason);
        let employed = p.optional("employedAtClosure", self.employed_at_closure);
        let note = p
            .optional("closureNote", self.closure_note)
            .map(Text::into_string);
        let Some(reason) = reason else {
            return Err(p.into_errors());
        };
        // A code that says whether the employee still works here is not
        // contradicted by the flag (the HR trial's silently rewritten close).
        if let (Some(says), Some(given)) = (reason.0.employed(), employed) {
            if says != given {
                p.push(
                    "employedAtClosure",
                    Invalid::new(
                        "contradicts_closure_reason",
                        format!(
                            "{} says the employee {} for the employer: leave employedAtClosure \
                             out, or send {says}.",
                            reason.0.as_str(),
                            if says {
                                "continues to work"
                            } else {
                                "no longer works"
                            },
                        ),
                    ),
                );
            }
        }
        p.finish(StepInput::Close {
            reason: reason.0,
            employed,
            note,
        })
    }
}

/// The body of `POST /v1/everify-cases/{caseId}/continue-duplicate`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"reason": "REHIRE"}))]
pub struct DuplicateContinuation {
    /// Why the duplicate case goes on.
    #[schema(inline)]
    pub reason: Required<DuplicateReasonCode>,
    /// With `OTHER`: 1 to 200 characters.
    #[serde(default)]
    #[schema(inline)]
    pub reason_other: Field<ReasonText>,
}

impl RequestBody for DuplicateContinuation {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        FieldError::new(name, "unknown_field", "Only reason and reasonOther.")
    }
}

impl DuplicateContinuation {
    fn check(self) -> Result<StepInput, Vec<FieldError>> {
        let mut p = Problems::default();
        let reason = p.required("reason", self.reason);
        let other = p
            .optional("reasonOther", self.reason_other)
            .map(Text::into_string);
        let Some(reason) = reason else {
            return Err(p.into_errors());
        };
        p.finish(StepInput::ContinueDuplicate {
            reason: reason.0,
            other,
        })
    }
}

/// The body of the steps without fields (`confirm-details`, `notify`,
/// `refer`, `no-action`, `resubmit`): none at all, or `{}`. Read as every
/// body is (`crate::body`): not JSON is a 400, a member a 422 naming it
/// (docs/everify.md, "REST resource").
#[derive(Debug, Default, Deserialize, ToSchema)]
#[schema(example = json!({}))]
pub struct NoFields {}

impl RequestBody for NoFields {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        let message = if name == "noticeLanguage" {
            "The Further Action Notice's language is not recorded yet: notify takes no fields \
             (send no body, or {})."
        } else {
            "This step takes no fields: send no body, or {}."
        };
        FieldError::new(name, "unknown_field", message)
    }
}

/// One status a case took, with its day.
#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct CaseHistoryEntry {
    pub status: CaseStatus,
    pub result: Option<CaseResult>,
    /// What caused it: `open`, `program` (the program's answer), or the employer's step.
    pub step: String,
    /// The day: E-Verify's, the U.S. Eastern date (docs/everify.md, "Which day (7)").
    pub on_day: NaiveDate,
    /// The user who took the step; `null` for the program's answers, and to a partner client.
    pub by_user_id: Option<i64>,
}

/// An E-Verify case (docs/everify.md, "REST resource").
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EverifyCase {
    pub id: i64,
    /// The program's case number (the simulator's: `SIM` and 12 digits); `null` while `Pending`.
    pub case_number: Option<String>,
    /// `simulator` when the built-in simulator answers: never a real E-Verify result.
    pub program: ProgramName,
    pub i9_id: i64,
    pub employee_id: i64,
    /// The legal entity (the E-Verify account).
    pub legal_entity: i64,
    pub status: CaseStatus,
    /// The program's latest result, kept when closed.
    pub result: Option<CaseResult>,
    pub agency: Option<Agency>,
    /// Why a Final Nonconfirmation.
    pub basis: Option<Basis>,
    /// The program's message when it refused the data.
    pub program_message: Option<String>,
    /// Section 2 rested on a receipt when the case was opened.
    pub from_receipt: bool,
    /// The day the case was opened, and every `…On` day of a step below: E-Verify's, the
    /// U.S. Eastern date (docs/everify.md, "Which day (7)").
    pub created_on: NaiveDate,
    /// The creation deadline: three business days after the start date (Section 2's `dateDue`),
    /// on the employer's calendar.
    pub due_on: Option<NaiveDate>,
    /// `createdOn` is after `dueOn`: the case needed a `lateReason`.
    pub late: bool,
    pub late_reason: Option<LateReason>,
    /// The employer's typed late reason; `null` to a partner client (docs/partners.md).
    pub late_reason_other: Option<String>,
    /// The case creator: the user who opened it. `null` to a partner client, as
    /// `creatorName` and `creatorEmail`: the employer's staff (docs/partners.md).
    pub created_by_user_id: Option<i64>,
    pub creator_name: Option<String>,
    pub creator_email: Option<String>,
    pub result_issued_on: Option<NaiveDate>,
    pub employee_notified_on: Option<NaiveDate>,
    pub referred_on: Option<NaiveDate>,
    pub continuance_on: Option<NaiveDate>,
    pub duplicate_reason: Option<DuplicateReason>,
    /// What is to be done next; `null` once closed.
    pub next_step: Option<String>,
    /// By when, in federal working days (docs/everify.md, "Windows").
    pub next_step_due_date: Option<NaiveDate>,
    /// The due date has passed without the step, on E-Verify's (Eastern) day.
    pub overdue: bool,
    pub closure_reason: Option<ClosureReason>,
    pub closure_statement: Option<String>,
    pub employed_at_closure: Option<bool>,
    /// The employer's typed closure reason; `null` to a partner client (docs/partners.md).
    pub closure_note: Option<String>,
    pub closed_on: Option<NaiveDate>,
    /// The user who closed the case; `null` when the program closed it, and to a partner client.
    pub closed_by: Option<i64>,
    /// The case that replaced this one (Close Case and Resubmit).
    pub resubmitted_as: Option<i64>,
    /// The case this one replaced.
    pub resubmit_of: Option<i64>,
    /// When the case last changed (UTC).
    #[serde(serialize_with = "format::timestamp")]
    #[schema(value_type = String, example = "2026-11-22T14:03:07.123456")]
    pub updated_at: Option<DateTime<Utc>>,
    /// Each status with its day, oldest first (empty in lists).
    pub history: Vec<CaseHistoryEntry>,
    /// `self`, `i9`, `employee`.
    pub links: Vec<Link>,
}

impl EverifyCase {
    fn new(c: Case, today: NaiveDate) -> Self {
        let overdue = c.state().overdue(today);
        Self {
            links: vec![
                Link::new("self", format!("/v1/everify-cases/{}", c.id)),
                Link::new("i9", format!("/v1/i9s/{}", c.i9_id)),
                Link::new("employee", format!("/v1/employees/{}", c.employee_id)),
            ],
            id: c.id,
            case_number: c.case_number,
            program: c.program,
            i9_id: c.i9_id,
            employee_id: c.employee_id,
            legal_entity: c.legal_entity_id,
            status: c.status,
            result: c.result,
            agency: c.agency,
            basis: c.basis,
            program_message: c.program_message,
            from_receipt: c.from_receipt,
            created_on: c.created_on,
            due_on: c.due_on,
            late: c.late,
            late_reason: c.late_reason,
            late_reason_other: c.late_reason_other,
            created_by_user_id: Some(c.created_by_user_id),
            creator_name: Some(c.creator_name),
            creator_email: c.creator_email,
            result_issued_on: c.result_issued_on,
            employee_notified_on: c.employee_notified_on,
            referred_on: c.referred_on,
            continuance_on: c.continuance_on,
            duplicate_reason: c.duplicate_reason,
            next_step: c.next_step,
            next_step_due_date: c.next_step_due_on,
            overdue,
            closure_reason: c.closure_reason,
            closure_statement: c.closure_statement,
            employed_at_closure: c.employed_at_closure,
            closure_note: c.closure_note,
            closed_on: c.closed_on,
            closed_by: c.closed_by_user_id,
            resubmitted_as: c.resubmitted_as,
            resubmit_of: c.resubmit_of,
            updated_at: Some(c.updated_at),
            history: Vec::new(),
        }
    }
}

impl EverifyCase {
    /// The case as `caller` may see it: to a partner client (the employer's
    /// vendor, reading its own employees' cases) the employer's staff and
    /// their free text are `null`: who opened, closed or took a step of the
    /// case, and the typed late and closure reasons (docs/partners.md, "What
    /// your token reaches"; docs/everify.md, "REST resource").
    fn seen_by(mut self, caller: &Caller) -> Self {
        if caller.partner {
            self.created_by_user_id = None;
            self.creator_name = None;
            self.creator_email = None;
            self.closed_by = None;
            self.closure_note = None;
            self.late_reason_other = None;
            for h in &mut self.history {
                h.by_user_id = None;
            }
        }
        self
    }
}

/// The latest case of an I-9 or an employee, on its record.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EverifyCaseSummary {
    pub id: i64,
    pub case_number: Option<String>,
    pub status: CaseStatus,
    /// The program's latest result, kept when closed: a `Closed` case was Employment Authorized,
    /// a Final Nonconfirmation, a Close Case and Resubmit, ...
    pub result: Option<CaseResult>,
    pub next_step: Option<String>,
    pub next_step_due_date: Option<NaiveDate>,
}

impl From<model::Latest> for EverifyCaseSummary {
    fn from(l: model::Latest) -> Self {
        Self {
            id: l.id,
            case_number: l.case_number,
            status: l.status,
            result: l.result,
            next_step: l.next_step,
            next_step_due_date: l.next_step_due_on,
        }
    }
}

/// 404 unless case `id` exists and the caller sees its employee (as for its I-9).
async fn visible(state: &AppState, caller: &Caller, id: i64) -> ApiResult<Case> {
    let mut conn = state.pool.acquire().await?;
    let case = model::get(&mut conn, id).await?.ok_or(ApiError::NotFound)?;
    i9s::check_visible(state, caller, case.i9_id).await?;
    Ok(case)
}

/// Case `id` as the caller sees it, with its history.
async fn load(state: &AppState, caller: &Caller, id: i64) -> ApiResult<EverifyCase> {
    let case = visible(state, caller, id).await?;
    let mut rec = EverifyCase::new(case, state.config.everify_today());
    rec.history = sqlx::query_as(
        "SELECT status, result, step, on_day, by_user_id FROM everify_case_history
         WHERE case_id = $1 ORDER BY id",
    )
    .bind(id)
    .fetch_all(&state.pool)
    .await?;
    Ok(rec.seen_by(caller))
}

/// `202 Accepted` with the case, and `Location` for a new one.
fn accepted(rec: EverifyCase, location: bool) -> Response {
    let mut r = (StatusCode::ACCEPTED, Json(&rec)).into_response();
    if location {
        if let Ok(v) = format!("/v1/everify-cases/{}", rec.id).parse() {
            r.headers_mut().insert(header::LOCATION, v);
        }
    }
    r
}

#[utoipa::path(
    post, path = "/v1/i9s/{id}/everify", operation_id = "openEverifyCase", tag = "everify",
    params(("id" = i64, Path, description = "I-9 id")),
    request_body(content = NewEverifyCase, content_type = "application/json"),
    responses(
        (status = 202, description = "The case is written (`Pending`); the worker submits it. `Location` names it", body = EverifyCase),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "No permission, a partner client, or an API client acting without a user (a case names its creator)", body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The I-9 is not Signed Sec 2, Completed or Approved; it has an open case; or it is verified already", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every problem named: the legal entity not enrolled in E-Verify (`everify_not_enrolled`) or not in good standing (`everify_not_in_good_standing`); a start before the enrollment (`hired_before_mou`); the late reason rules", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn open(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    body: JsonBody<NewEverifyCase>,
) -> ApiResult<Response> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let id = id.get()?;
    i9s::check_visible(&state, &caller, id).await?;
    let input = body.check(NewEverifyCase::check)?;
    let mut tx = state.pool.begin().await?;
    let case = model::open(
        &mut tx,
        &caller.actor(),
        id,
        &input,
        OpeningDays {
            service: state.config.today(),
            everify: state.config.everify_today(),
        },
        state.config.everify_adapter,
        &state.config.public_base_url,
    )
    .await?;
    tx.commit().await?;
    Ok(accepted(load(&state, &caller, case).await?, true))
}

#[utoipa::path(
    get, path = "/v1/everify-cases/{caseId}", operation_id = "getEverifyCase", tag = "everify",
    params(("caseId" = i64, Path, description = "Case id")),
    responses(
        (status = 200, body = EverifyCase),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such case, or its employee is not in the caller's groups", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<EverifyCase>> {
    caller.require(Scope::Read, Permission::ViewI9s)?;
    let id = id.get()?;
    Ok(Json(load(&state, &caller, id).await?))
}

#[utoipa::path(
    get, path = "/v1/i9s/{id}/everify", operation_id = "listI9EverifyCases", tag = "everify",
    params(("id" = i64, Path, description = "I-9 id")),
    responses(
        (status = 200, description = "The I-9's cases, newest first", body = Vec<EverifyCase>),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn of_i9(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<Vec<EverifyCase>>> {
    caller.require(Scope::Read, Permission::ViewI9s)?;
    let id = id.get()?;
    i9s::check_visible(&state, &caller, id).await?;
    let mut conn = state.pool.acquire().await?;
    let today = state.config.everify_today();
    Ok(Json(
        model::of_i9(&mut conn, id)
            .await?
            .into_iter()
            .map(|c| EverifyCase::new(c, today).seen_by(&caller))
            .collect(),
    ))
}

pub const FILTERS: &[FilterSpec] = &[
    filter("status", K::OneOf("c.status", CaseStatus::NAMES)),
    filter("unresolved", K::Computed),
    filter("legalEntity", K::Int("c.legal_entity_id")),
    filter("employeeId", K::Int("c.employee_id")),
    filter("i9Id", K::Int("c.i9_id")),
    // The number a report or an email of E-Verify gives (the HR trial).
    filter("caseNumber", K::Text("c.case_number")),
    filter("overdue", K::Computed),
];

/// The `status` filter's schema: a status in any case, or several separated by commas.
pub struct CaseStatusFilter;

impl PartialSchema for CaseStatusFilter {
    fn schema() -> RefOr<Schema> {
        crate::list::params::one_of(CaseStatus::NAMES)
    }
}

impl ToSchema for CaseStatusFilter {}

/// Filters of `GET /v1/everify-cases`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
pub struct EverifyCaseFilters {
    /// One status, or several separated by commas.
    #[param(inline)]
    status: Option<CaseStatusFilter>,
    /// `true`: the cases not closed; `false`: the closed ones.
    unresolved: Option<bool>,
    /// A legal entity id.
    #[param(inline)]
    legalEntity: Option<crate::list::params::Int>,
    #[param(inline)]
    employeeId: Option<crate::list::params::Int>,
    #[param(inline)]
    i9Id: Option<crate::list::params::Int>,
    /// The program's case number (`SIM000000000088`), in any letter case.
    #[param(inline)]
    caseNumber: Option<crate::list::params::Text>,
    /// `true`: open cases whose next step's due date has passed (on E-Verify's day, the U.S.
    /// Eastern date).
    overdue: Option<bool>,
    #[param(inline)]
    page: Option<crate::list::params::Positive>,
    #[param(inline)]
    page_size: Option<crate::list::params::Positive>,
}

#[utoipa::path(
    get, path = "/v1/everify-cases", operation_id = "listEverifyCases", tag = "everify", params(EverifyCaseFilters),
    responses(
        (status = 200, content((ListResponse<EverifyCase> = "application/json"), (String = "text/csv"))),
        (status = 406, description = "The Accept allows neither application/json nor text/csv", body = Problem, content_type = "application/problem+json"),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    format: Format,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    caller.require(Scope::Read, Permission::ViewI9s)?;
    // `overdue` counts on E-Verify's day (docs/everify.md, "Which day (7)").
    let today = state.config.everify_today();
    let q = ListQuery::parse_as(raw.as_deref(), FILTERS, format)?.on(today);
    let visibility = caller.visibility(&state).await?;
    let computed = move |name: &str, v: bool, qb: &mut QueryBuilder<'_, Postgres>| match name {
        "unresolved" => {
            qb.push(if v {
                " AND c.status <> 'Closed'"
            } else {
                " AND c.status = 'Closed'"
            });
        }
        "overdue" => {
            qb.push(if v { " AND " } else { " AND NOT " });
            qb.push("(c.status <> 'Closed' AND COALESCE(c.next_step_due_on < ");
            qb.push_bind(today);
            qb.push(", FALSE))");
        }
        _ => {}
    };
    let columns = model::COLUMNS.to_owned();
    let (rows, total) = q
        .fetch_page::<Case>(
            &state.pool,
            &state.cipher,
            PageSql {
                from: "FROM everify_cases c JOIN employees e ON e.id = c.employee_id WHERE TRUE",
                count_from: None,
                columns: &columns,
                order: "ORDER BY c.id DESC",
                restrict: Some(Restrict::Employee(&visibility, "e")),
            },
            &computed,
        )
        .await?;
    Ok(ListResponse {
        links: q.links("/v1/everify-cases", total),
        search_result: rows
            .into_iter()
            .map(|c| EverifyCase::new(c, today).seen_by(&caller))
            .collect(),
        total,
    }
    .answer(format))
}

impl crate::list::CsvColumns for EverifyCase {
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "caseNumber",
        "program",
        "i9Id",
        "employeeId",
        "legalEntity",
        "status",
        "result",
        "agency",
        "basis",
        "programMessage",
        "fromReceipt",
        "createdOn",
        "dueOn",
        "late",
        "lateReason",
        "lateReasonOther",
        "createdByUserId",
        "creatorName",
        "creatorEmail",
        "resultIssuedOn",
        "employeeNotifiedOn",
        "referredOn",
        "continuanceOn",
        "duplicateReason",
        "nextStep",
        "nextStepDueDate",
        "overdue",
        "closureReason",
        "closureStatement",
        "employedAtClosure",
        "closureNote",
        "closedOn",
        "closedBy",
        "resubmittedAs",
        "resubmitOf",
        "updatedAt",
        "history",
        "links",
    ];
}

/// Take `input` on case `id` as the caller.
async fn take(state: &AppState, caller: &Caller, id: Id, input: StepInput) -> ApiResult<Response> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let id = id.get()?;
    visible(state, caller, id).await?;
    let mut tx = state.pool.begin().await?;
    let shown = model::step(
        &mut tx,
        &caller.actor(),
        id,
        &input,
        state.config.everify_today(),
        &state.config.public_base_url,
    )
    .await?;
    tx.commit().await?;
    Ok(accepted(load(state, caller, shown).await?, shown != id))
}

macro_rules! plain_step {
    ($fn:ident, $path:tt, $op:tt, $input:expr, $what:tt) => {
        #[utoipa::path(
            post, path = $path, operation_id = $op, tag = "everify",
            params(("caseId" = i64, Path, description = "Case id")),
            request_body(content = Option<NoFields>, content_type = "application/json", description = "Optional: the step takes no fields; send no body, or `{}`"),
            responses(
                (status = 202, description = $what, body = EverifyCase),
                (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
                (status = 401, body = Problem, content_type = "application/problem+json"),
                (status = 403, description = "No permission, or a partner client (read-only)", body = Problem, content_type = "application/problem+json"),
                (status = 404, body = Problem, content_type = "application/problem+json"),
                (status = 409, description = "The step does not fit the case's status, saying what would", body = Problem, content_type = "application/problem+json"),
                (status = 422, description = "The body has a member (`unknown_field`, naming it): the step takes none", body = Problem, content_type = "application/problem+json"),
            ),
            security(("oauth2" = ["write"]))
        )]
        pub async fn $fn(
            State(state): State<AppState>,
            caller: Caller,
            id: Id,
            body: JsonBody<NoFields>,
        ) -> ApiResult<Response> {
            caller.require(Scope::Write, Permission::WorkOnI9s)?;
            body.check_optional(|NoFields {}| Ok(()))?;
            take(&state, &caller, id, $input).await
        }
    };
}

plain_step!(
    confirm_details,
    "/v1/everify-cases/{caseId}/confirm-details",
    "confirmEverifyCaseDetails",
    StepInput::ConfirmDetails,
    "Case Incomplete: the data is as on the I-9; the case is `Pending` again"
);
plain_step!(
    notify,
    "/v1/everify-cases/{caseId}/notify",
    "notifyEverifyCase",
    StepInput::Notify { language: None },
    "Tentative Nonconfirmation: the employee was told privately and given the Further Action Notice"
);
plain_step!(
    refer,
    "/v1/everify-cases/{caseId}/refer",
    "referEverifyCase",
    StepInput::Refer,
    "Tentative Nonconfirmation, notified: the employee takes action; the case is `Referred`"
);
plain_step!(
    no_action,
    "/v1/everify-cases/{caseId}/no-action",
    "noActionEverifyCase",
    StepInput::NoAction,
    "Tentative Nonconfirmation: the employee does not take action; Final Nonconfirmation (`no_action`)"
);
plain_step!(
    resubmit,
    "/v1/everify-cases/{caseId}/resubmit",
    "resubmitEverifyCase",
    StepInput::Resubmit,
    "Close Case and Resubmit: this case closes and a new one opens from the same I-9; the answer is the new case, `Location` names it"
);

#[utoipa::path(
    post, path = "/v1/everify-cases/{caseId}/continue-duplicate", operation_id = "continueEverifyDuplicate", tag = "everify",
    params(("caseId" = i64, Path, description = "Case id")),
    request_body(content = DuplicateContinuation, content_type = "application/json"),
    responses(
        (status = 202, description = "Duplicate Case: the case goes on (`Pending`)", body = EverifyCase),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn continue_duplicate(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    body: JsonBody<DuplicateContinuation>,
) -> ApiResult<Response> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let input = body.check(DuplicateContinuation::check)?;
    take(&state, &caller, id, input).await
}

#[utoipa::path(
    post, path = "/v1/everify-cases/{caseId}/close", operation_id = "closeEverifyCase", tag = "everify",
    params(("caseId" = i64, Path, description = "Case id")),
    request_body(content = CaseClosure, content_type = "application/json"),
    responses(
        (status = 202, description = "The case is `Closed`", body = EverifyCase),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The case cannot be closed in its status (`Pending`, `Closed`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A closure reason that does not fit the status (naming `closureReason` and the allowed ones); a missing or bad `closureNote`; `employedAtClosure` missing on a Final Nonconfirmation closed with a code that does not say it (`required`), or contradicting the code (`contradicts_closure_reason`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn close(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    body: JsonBody<CaseClosure>,
) -> ApiResult<Response> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let input = body.check(CaseClosure::check)?;
    take(&state, &caller, id, input).await
}
