//! Employees: `GET /v1/employees`, `GET /v1/employees/{id}` here; the writes
//! (`POST`, `PATCH`) in [`write`], their body in [`input`].

pub mod input;
pub mod periods;
pub mod write;

use axum::{
    extract::{RawQuery, State},
    Json,
};
use chrono::NaiveDate;
use i9_common::{
    crypto::Purpose,
    domain::everify::{CaseResult, CaseStatus},
    domain::{EmployeeI9Status, I9Status, Permission, Scope, Step},
    models::{everify_case, retention},
};
use serde::Serialize;
use sqlx::FromRow;
use utoipa::{IntoParams, ToSchema};

use super::{reveal_ssn, Id};
use crate::list::Format;
use crate::{
    audit,
    auth::Caller,
    auth::Visibility,
    error::{ApiError, ApiResult, Problem},
    list::{
        filter, no_computed, FilterKind as K, FilterSpec, Link, ListQuery, ListResponse, PageSql,
        Restrict,
    },
    state::AppState,
};
use axum::response::Response;

pub const FILTERS: &[FilterSpec] = &[
    filter("custom1", K::Text("e.custom1")),
    filter("custom2", K::Text("e.custom2")),
    filter("custom3", K::Text("e.custom3")),
    filter("custom4", K::Text("e.custom4")),
    filter("custom5", K::Text("e.custom5")),
    filter("custom6", K::Text("e.custom6")),
    filter("custom7", K::Text("e.custom7")),
    filter("custom8", K::Text("e.custom8")),
    filter("emailAddress", K::Text("e.email_address")),
    filter("firstName", K::Text("e.first_name")),
    filter(
        "integrationCandidateId",
        K::Text("e.integration_candidate_id"),
    ),
    filter("jobTitle", K::Text("e.job_title")),
    filter("lastName", K::Text("e.last_name")),
    filter("middleName", K::Text("e.middle_name")),
    filter("otherName", K::Text("e.other_name")),
    filter("profileId", K::Text("e.profile_id")),
    filter("socialSecurityNumber", K::Ssn("e.ssn_hash")),
    filter("dateOfBirth", K::Date("e.date_of_birth")),
    filter("languagePreference", K::Language("e.language_preference")),
    filter("legalEntity", K::Int("e.legal_entity_id")),
    filter("locationId", K::Int("e.location_id")),
    filter("locationIdWithin", K::GroupWithin("e.location_id")),
];

/// Filters of `GET /v1/employees` (exact match, case-insensitive).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
pub struct EmployeeFilters {
    #[param(inline)]
    custom1: Option<crate::list::params::Text>,
    #[param(inline)]
    custom2: Option<crate::list::params::Text>,
    #[param(inline)]
    custom3: Option<crate::list::params::Text>,
    #[param(inline)]
    custom4: Option<crate::list::params::Text>,
    #[param(inline)]
    custom5: Option<crate::list::params::Text>,
    #[param(inline)]
    custom6: Option<crate::list::params::Text>,
    #[param(inline)]
    custom7: Option<crate::list::params::Text>,
    #[param(inline)]
    custom8: Option<crate::list::params::Text>,
    #[param(inline)]
    emailAddress: Option<crate::list::params::Text>,
    #[param(inline)]
    firstName: Option<crate::list::params::Text>,
    /// The partner's candidate key (docs/partners.md, "Finding your employee").
    #[param(inline)]
    integrationCandidateId: Option<crate::list::params::Text>,
    #[param(inline)]
    jobTitle: Option<crate::list::params::Text>,
    #[param(inline)]
    lastName: Option<crate::list::params::Text>,
    #[param(inline)]
    middleName: Option<crate::list::params::Text>,
    #[param(inline)]
    otherName: Option<crate::list::params::Text>,
    #[param(inline)]
    profileId: Option<crate::list::params::Text>,
    /// `###-##-####`.
    #[param(inline)]
    socialSecurityNumber: Option<crate::list::params::Ssn>,
    /// `YYYY-MM-DD` or `MM/DD/YYYY`.
    #[param(inline)]
    dateOfBirth: Option<crate::list::params::DateFilter>,
    /// 1 (English) or 2 (Spanish).
    #[param(inline)]
    languagePreference: Option<crate::list::params::Language>,
    /// Legal entity id.
    #[param(inline)]
    legalEntity: Option<crate::list::params::Int>,
    /// Group id: that group only.
    #[param(inline)]
    locationId: Option<crate::list::params::Int>,
    /// Group id: that group and every group below it (a region).
    #[param(inline)]
    locationIdWithin: Option<crate::list::params::Int>,
    /// Page number, from 1.
    #[param(inline)]
    page: Option<crate::list::params::Positive>,
    /// Items per page, 1 to 50 (larger values are treated as 50).
    #[param(inline)]
    page_size: Option<crate::list::params::Positive>,
}

/// The employee's latest I-9 (`li`), from which its `i9Status` is derived
/// ([`EmployeeI9Status::of_latest`]); read as `latest_i9_status` and
/// `latest_i9_id`.
const LATEST_I9: &str = "LEFT JOIN LATERAL (
        SELECT i.id, i.status, i.i9_expiration FROM i9s i WHERE i.employee_id = e.id ORDER BY i.id DESC LIMIT 1
    ) li ON TRUE";

#[derive(Debug, FromRow, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmployeeSummary {
    pub id: i64,
    /// Derived from the latest I-9 (docs/api.md, "Employees").
    #[sqlx(skip)]
    pub i9_status: EmployeeI9Status,
    pub i9_expiration: Option<NaiveDate>,
    pub first_name: String,
    pub last_name: String,
    /// `###-##-####`, masked `***-**-1234` without permission 12.
    #[sqlx(skip)]
    pub social_security_number: Option<String>,
    pub profile_id: Option<String>,
    #[serde(skip)]
    pub ssn_ciphertext: Option<Vec<u8>>,
    #[serde(skip)]
    pub ssn_last4: Option<String>,
    /// The latest I-9's status; `None` without one.
    #[serde(skip)]
    pub latest_i9_status: Option<I9Status>,
}

#[utoipa::path(
    get, path = "/v1/employees", operation_id = "listEmployees", tag = "employees",
    params(EmployeeFilters),
    responses(
        (status = 200, description = "A page of employees the caller may see", content((ListResponse<EmployeeSummary> = "application/json"), (String = "text/csv"))),
        (status = 406, description = "The Accept allows neither application/json nor text/csv", body = Problem, content_type = "application/problem+json"),
        (status = 400, description = "Unknown parameter or bad value", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission 1; a socialSecurityNumber filter without permission 12", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    format: Format,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    caller.require(Scope::Read, Permission::ViewEmployees)?;
    let q = ListQuery::parse_as(raw.as_deref(), FILTERS, format)?;
    // Without permission 12 a search by number would reveal masked numbers by trial.
    if q.searches_ssn() && !caller.has(Permission::FullSsn) {
        return Err(ApiError::Forbidden(
            "Filtering by socialSecurityNumber needs permission 12 (see full social security numbers).".into(),
        ));
    }
    let visibility = caller.visibility(&state).await?;
    let columns =
        "e.id, li.status AS latest_i9_status, li.i9_expiration, e.first_name, e.last_name,
         e.profile_id, e.ssn_ciphertext, e.ssn_last4";
    let (mut rows, total): (Vec<EmployeeSummary>, i64) = q
        .fetch_page(
            &state.pool,
            &state.cipher,
            PageSql {
                from: &format!("FROM employees e {LATEST_I9} WHERE e.purged_at IS NULL"),
                count_from: Some("FROM employees e WHERE e.purged_at IS NULL"),
                columns,
                order: "ORDER BY e.id",
                restrict: Some(Restrict::Employee(&visibility, "e")),
            },
            &no_computed,
        )
        .await?;
    if q.searches_ssn() {
        audit::record_ssn_search(&state.pool, &caller, total).await?;
    }

    let mut revealed = Vec::new();
    for r in &mut rows {
        r.i9_status = EmployeeI9Status::of_latest(r.latest_i9_status);
        r.social_security_number = reveal_ssn(
            &state,
            &caller,
            Purpose::EmployeeSsn,
            r.ssn_ciphertext.as_deref(),
            r.ssn_last4.as_deref(),
        )?;
        if r.ssn_ciphertext.is_some() && caller.has(Permission::FullSsn) {
            revealed.push(r.id);
        }
    }
    audit::record_ssn_reads(&state.pool, &caller, "employee", &revealed).await?;
    Ok(ListResponse {
        links: q.links("/v1/employees", total),
        search_result: rows,
        total,
    }
    .answer(format))
}

#[derive(Debug, FromRow, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmployeeRecord {
    pub id: i64,
    /// `<lastName>, <firstName>`.
    pub full_name: String,
    pub first_name: String,
    pub last_name: String,
    pub middle_name: Option<String>,
    /// `###-##-####`, masked `***-**-1234` without permission 12.
    #[sqlx(skip)]
    pub social_security_number: Option<String>,
    pub date_of_birth: Option<NaiveDate>,
    /// Start of the current period of employment.
    pub start_date: Option<NaiveDate>,
    /// End of the current period of employment.
    pub terminated_date: Option<NaiveDate>,
    pub profile_id: Option<String>,
    pub other_name: Option<String>,
    pub job_title: Option<String>,
    pub email_address: Option<String>,
    /// The employee's group.
    pub location_id: i64,
    /// Legal entity id.
    #[sqlx(rename = "legal_entity_id")]
    pub legal_entity: Option<i64>,
    /// 1 English, 2 Spanish.
    pub language_preference: Option<i16>,
    pub custom1: Option<String>,
    pub custom2: Option<String>,
    pub custom3: Option<String>,
    pub custom4: Option<String>,
    pub custom5: Option<String>,
    pub custom6: Option<String>,
    pub custom7: Option<String>,
    pub custom8: Option<String>,
    pub notification_email1: Option<String>,
    pub notification_email2: Option<String>,
    pub address_street: Option<String>,
    pub address_street2: Option<String>,
    pub address_apartment: Option<String>,
    pub address_city: Option<String>,
    pub address_state: Option<String>,
    pub address_country: Option<String>,
    pub address_zip: Option<String>,
    pub work_number: Option<String>,
    pub work_extension: Option<String>,
    pub home_number: Option<String>,
    pub home_extension: Option<String>,
    pub cell_number: Option<String>,
    pub cell_extension: Option<String>,
    pub integration_client_system: Option<String>,
    pub integration_client_process: Option<String>,
    pub integration_hr_url: Option<String>,
    /// The id of the employee's latest partner push (docs/partners.md, "Transaction ids").
    #[serde(rename = "IntegrationTransactionId")]
    pub integration_transaction_id: Option<String>,
    pub integration_request_id: Option<String>,
    pub integration_candidate_id: Option<String>,
    pub integration_service_id: Option<String>,
    pub integration_report_url: Option<String>,
    pub employee_return_url: Option<String>,
    /// Derived from the latest I-9 (docs/api.md, "Employees").
    // A query without this column reads `latest_i9_status` instead (`fetch`).
    #[sqlx(default)]
    pub i9_status: EmployeeI9Status,
    pub i9_expiration: Option<NaiveDate>,
    /// The Section 1 link of an I-9 requested by this response's write;
    /// `null` on GET (the link is a credential and is shown only once).
    #[sqlx(skip)]
    pub i9_form_section1_link: Option<String>,
    /// Where Section 2 of the latest I-9 is recorded, once Section 1 is
    /// signed (`Signed Sec 1`); `null` otherwise.
    #[sqlx(skip)]
    pub i9_form_section2_link: Option<String>,
    /// Whether a legal hold (on the employee or its legal entity) keeps its
    /// I-9s from the retention purge (docs/retention.md, "Legal holds").
    #[sqlx(skip)]
    pub legal_hold: bool,
    /// The employee's latest E-Verify case, if any (docs/everify.md).
    #[sqlx(skip)]
    pub everify_case: Option<crate::routes::everify::EverifyCaseSummary>,
    /// Whether one of the employee's E-Verify cases is not closed: an
    /// unresolved verification record (docs/everify.md, "Unresolved
    /// verification records").
    #[sqlx(skip)]
    pub unresolved_verification: bool,
    /// `self`; `i9s`, the employee's I-9s (`/v1/i9s?employeeId=`); and
    /// `i9` for each I-9 of the employee, newest first.
    #[sqlx(skip)]
    pub links: Vec<Link>,
    #[serde(skip)]
    pub ssn_ciphertext: Option<Vec<u8>>,
    #[serde(skip)]
    pub ssn_last4: Option<String>,
    #[serde(skip)]
    #[sqlx(default)]
    pub section2_i9_id: Option<i64>,
    /// The latest I-9, when the query reads it (`fetch`).
    #[serde(skip)]
    #[sqlx(default)]
    pub latest_i9_status: Option<I9Status>,
    #[serde(skip)]
    #[sqlx(default)]
    pub latest_i9_id: Option<i64>,
    /// The partner client the employee was created through.
    #[serde(skip)]
    pub integration_client_id: Option<i64>,
    /// When the employee was purged with its I-9s, if it was (`fetch`).
    #[serde(skip)]
    #[sqlx(skip)]
    pub destruction: Option<retention::Destruction>,
}

/// An employee as `fetch` reads it, before what is derived.
struct EmployeeRow {
    id: i64,
    full_name: String,
    first_name: String,
    last_name: String,
    middle_name: Option<String>,
    date_of_birth: Option<NaiveDate>,
    start_date: Option<NaiveDate>,
    terminated_date: Option<NaiveDate>,
    profile_id: Option<String>,
    other_name: Option<String>,
    job_title: Option<String>,
    email_address: Option<String>,
    location_id: i64,
    legal_entity_id: Option<i64>,
    language_preference: Option<i16>,
    custom1: Option<String>,
    custom2: Option<String>,
    custom3: Option<String>,
    custom4: Option<String>,
    custom5: Option<String>,
    custom6: Option<String>,
    custom7: Option<String>,
    custom8: Option<String>,
    notification_email1: Option<String>,
    notification_email2: Option<String>,
    address_street: Option<String>,
    address_street2: Option<String>,
    address_apartment: Option<String>,
    address_city: Option<String>,
    address_state: Option<String>,
    address_country: Option<String>,
    address_zip: Option<String>,
    work_number: Option<String>,
    work_extension: Option<String>,
    home_number: Option<String>,
    home_extension: Option<String>,
    cell_number: Option<String>,
    cell_extension: Option<String>,
    integration_client_system: Option<String>,
    integration_client_process: Option<String>,
    integration_hr_url: Option<String>,
    integration_transaction_id: Option<String>,
    integration_request_id: Option<String>,
    integration_candidate_id: Option<String>,
    integration_service_id: Option<String>,
    integration_report_url: Option<String>,
    employee_return_url: Option<String>,
    ssn_ciphertext: Option<Vec<u8>>,
    ssn_last4: Option<String>,
    integration_client_id: Option<i64>,
    latest_i9_status: Option<I9Status>,
    i9_expiration: Option<NaiveDate>,
    latest_i9_id: Option<i64>,
    i9_ids: Vec<i64>,
    legal_hold: bool,
    case_id: Option<i64>,
    case_number: Option<String>,
    case_status: Option<CaseStatus>,
    case_result: Option<CaseResult>,
    case_next_step: Option<String>,
    case_next_step_due_on: Option<NaiveDate>,
    unresolved_verification: bool,
    purged_at: Option<chrono::DateTime<chrono::Utc>>,
    retention_date: Option<NaiveDate>,
    rule: Option<String>,
}

impl EmployeeRow {
    /// The employee's latest E-Verify case, if it has one.
    fn everify(&self) -> Option<everify_case::Latest> {
        Some(everify_case::Latest {
            id: self.case_id?,
            case_number: self.case_number.clone(),
            status: self.case_status?,
            result: self.case_result,
            next_step: self.case_next_step.clone(),
            next_step_due_on: self.case_next_step_due_on,
        })
    }

    /// When the employee was purged, if it was.
    fn destruction(&self) -> Option<retention::Destruction> {
        Some(retention::Destruction {
            purged_at: self.purged_at?,
            retention_date: self.retention_date?,
            rule: self.rule.clone()?,
        })
    }
}

/// The record with what is derived left empty (`fetch` fills it).
impl From<EmployeeRow> for EmployeeRecord {
    fn from(r: EmployeeRow) -> Self {
        let destruction = r.destruction();
        Self {
            id: r.id,
            full_name: r.full_name,
            first_name: r.first_name,
            last_name: r.last_name,
            middle_name: r.middle_name,
            social_security_number: None,
            date_of_birth: r.date_of_birth,
            start_date: r.start_date,
            terminated_date: r.terminated_date,
            profile_id: r.profile_id,
            other_name: r.other_name,
            job_title: r.job_title,
            email_address: r.email_address,
            location_id: r.location_id,
            legal_entity: r.legal_entity_id,
            language_preference: r.language_preference,
            custom1: r.custom1,
            custom2: r.custom2,
            custom3: r.custom3,
            custom4: r.custom4,
            custom5: r.custom5,
            custom6: r.custom6,
            custom7: r.custom7,
            custom8: r.custom8,
            notification_email1: r.notification_email1,
            notification_email2: r.notification_email2,
            address_street: r.address_street,
            address_street2: r.address_street2,
            address_apartment: r.address_apartment,
            address_city: r.address_city,
            address_state: r.address_state,
            address_country: r.address_country,
            address_zip: r.address_zip,
            work_number: r.work_number,
            work_extension: r.work_extension,
            home_number: r.home_number,
            home_extension: r.home_extension,
            cell_number: r.cell_number,
            cell_extension: r.cell_extension,
            integration_client_system: r.integration_client_system,
            integration_client_process: r.integration_client_process,
            integration_hr_url: r.integration_hr_url,
            integration_transaction_id: r.integration_transaction_id,
            integration_request_id: r.integration_request_id,
            integration_candidate_id: r.integration_candidate_id,
            integration_service_id: r.integration_service_id,
            integration_report_url: r.integration_report_url,
            employee_return_url: r.employee_return_url,
            i9_status: EmployeeI9Status::default(),
            i9_expiration: r.i9_expiration,
            i9_form_section1_link: None,
            i9_form_section2_link: None,
            links: Vec::new(),
            legal_hold: r.legal_hold,
            everify_case: None,
            unresolved_verification: r.unresolved_verification,
            destruction,
            ssn_ciphertext: r.ssn_ciphertext,
            ssn_last4: r.ssn_last4,
            section2_i9_id: None,
            latest_i9_status: r.latest_i9_status,
            latest_i9_id: r.latest_i9_id,
            integration_client_id: r.integration_client_id,
        }
    }
}

/// Load one employee the caller may see, with its SSN revealed or masked.
pub async fn load(state: &AppState, caller: &Caller, id: i64) -> ApiResult<EmployeeRecord> {
    let visibility = caller.visibility(state).await?;
    let mut conn = state.pool.acquire().await?;
    fetch(&mut conn, state, caller, &visibility, id)
        .await?
        .ok_or(ApiError::NotFound)
}

/// The record as `caller` may see it, read through `conn` (a write's own
/// transaction, so its response shows what it wrote); `None` when there is
/// none or the caller cannot see it. One statement reads the record with
/// everything it shows (its I-9s, hold, E-Verify case, destruction), checks
/// visibility and, for a caller shown full SSNs (permission 12), writes the
/// `ssn.read` audit entry of a record that has one and that the caller sees:
/// one round trip, and the entry is committed with the read (a GET's
/// statement commits on its own before the answer leaves), so an answer never
/// shows a number the audit log does not hold.
pub async fn fetch(
    conn: &mut sqlx::PgConnection,
    state: &AppState,
    caller: &Caller,
    visibility: &Visibility,
    id: i64,
) -> ApiResult<Option<EmployeeRecord>> {
    let (groups, client) = visibility.as_params();
    let audit_ssn = caller.has(Permission::FullSsn);
    let actor = caller.actor();
    // The latest I-9 is joined as in LATEST_I9 (a macro takes no constant);
    // the hold is the view `employee_holds` (migrations/20261125100000_read_folds.sql),
    // as retention::held reads it; visibility is Visibility::sees, in the
    // audit entry's condition too (audit::record_each writes such entries).
    let row = sqlx::query_as!(
        EmployeeRow,
        r#"WITH ssn_read AS (
               INSERT INTO audit_log (user_id, client_id, action, resource_type, resource_id, request_id)
               SELECT $5, $6, 'ssn.read', 'employee', a.id::TEXT, $7 FROM employees a
               WHERE $4 AND a.id = $1 AND a.ssn_ciphertext IS NOT NULL
                 AND ($2::BIGINT[] IS NULL OR a.location_id = ANY($2))
                 AND ($3::BIGINT IS NULL OR a.integration_client_id = $3)
           )
           SELECT e.id, e.last_name || ', ' || e.first_name AS "full_name!", e.first_name, e.last_name,
                  e.middle_name, e.date_of_birth, p.start_date AS "start_date?",
                  p.terminated_date AS "terminated_date?", e.profile_id, e.other_name, e.job_title,
                  e.email_address, e.location_id, e.legal_entity_id, e.language_preference,
                  e.custom1, e.custom2, e.custom3, e.custom4, e.custom5, e.custom6, e.custom7, e.custom8,
                  e.notification_email1, e.notification_email2, e.address_street, e.address_street2,
                  e.address_apartment, e.address_city, e.address_state, e.address_country, e.address_zip,
                  e.work_number, e.work_extension, e.home_number, e.home_extension, e.cell_number,
                  e.cell_extension, e.integration_client_system, e.integration_client_process,
                  e.integration_hr_url, e.integration_transaction_id, e.integration_request_id,
                  e.integration_candidate_id, e.integration_service_id, e.integration_report_url,
                  e.employee_return_url, e.ssn_ciphertext, e.ssn_last4, e.integration_client_id,
                  li.status AS "latest_i9_status?: I9Status", li.i9_expiration AS "i9_expiration?",
                  li.id AS "latest_i9_id?",
                  COALESCE((SELECT array_agg(i.id ORDER BY i.id DESC) FROM i9s i WHERE i.employee_id = e.id),
                           '{}') AS "i9_ids!",
                  EXISTS (SELECT 1 FROM employee_holds h WHERE h.employee_id = e.id) AS "legal_hold!",
                  c.id AS "case_id?", c.case_number AS "case_number?",
                  c.status AS "case_status?: CaseStatus", c.result AS "case_result?: CaseResult",
                  c.next_step AS "case_next_step?", c.next_step_due_on AS "case_next_step_due_on?",
                  EXISTS (SELECT 1 FROM everify_cases u WHERE u.employee_id = e.id AND u.status <> 'Closed')
                    AS "unresolved_verification!",
                  d.purged_at AS "purged_at?", d.retention_date AS "retention_date?", d.rule AS "rule?"
           FROM employees e
           LEFT JOIN LATERAL (
               SELECT i.id, i.status, i.i9_expiration FROM i9s i WHERE i.employee_id = e.id ORDER BY i.id DESC LIMIT 1
           ) li ON TRUE
           LEFT JOIN LATERAL (
               SELECT start_date, terminated_date FROM employment_periods p
               WHERE p.employee_id = e.id ORDER BY p.id DESC LIMIT 1
           ) p ON TRUE
           LEFT JOIN LATERAL (
               SELECT id, case_number, status, result, next_step, next_step_due_on FROM everify_cases
               WHERE employee_id = e.id ORDER BY id DESC LIMIT 1
           ) c ON TRUE
           LEFT JOIN LATERAL (
               SELECT d.purged_at, d.retention_date, d.rule FROM i9_destructions d
               WHERE e.purged_at IS NOT NULL AND d.employee_id = e.id
               ORDER BY d.purged_at DESC, d.i9_id DESC LIMIT 1
           ) d ON TRUE
           WHERE e.id = $1
             AND ($2::BIGINT[] IS NULL OR e.location_id = ANY($2))
             AND ($3::BIGINT IS NULL OR e.integration_client_id = $3)"#,
        id,
        groups.as_deref(),
        client,
        audit_ssn,
        actor.user_id,
        actor.client_id,
        actor.request_id,
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(mut row) = row else {
        return Ok(None);
    };
    let i9_ids = std::mem::take(&mut row.i9_ids);
    let everify = row.everify();
    let mut rec = EmployeeRecord::from(row);
    rec.social_security_number = reveal_ssn(
        state,
        caller,
        Purpose::EmployeeSsn,
        rec.ssn_ciphertext.as_deref(),
        rec.ssn_last4.as_deref(),
    )?;
    rec.i9_status = EmployeeI9Status::of_latest(rec.latest_i9_status);
    // Section 2 is due once the latest I-9 allows recording it.
    rec.section2_i9_id = rec.latest_i9_id.filter(|_| {
        rec.latest_i9_status
            .is_some_and(|s| s.allows(Step::RecordSection2))
    });
    rec.i9_form_section2_link = rec
        .section2_i9_id
        .map(|i9| format!("{}/v1/i9s/{i9}/section2", state.config.public_base_url));
    rec.links = record_links(id, &i9_ids, !caller.partner);
    rec.everify_case = everify.map(Into::into);
    Ok(Some(rec))
}

/// The links of a single employee record: `self`; `i9s`, the list of the
/// employee's I-9s, whether or not one exists yet (the specification:
/// single employee records carry `i9s`); `i9`, each I-9, newest first; and,
/// when `periods` (not to a partner client, which does not reach it),
/// `periods`, the employee's periods of employment.
pub fn record_links(id: i64, i9_ids: &[i64], periods: bool) -> Vec<Link> {
    [
        Link::new("self", format!("/v1/employees/{id}")),
        Link::new("i9s", format!("/v1/i9s?employeeId={id}")),
    ]
    .into_iter()
    .chain(
        i9_ids
            .iter()
            .map(|i| Link::new("i9", format!("/v1/i9s/{i}"))),
    )
    .chain(periods.then(|| Link::new("periods", format!("/v1/employees/{id}/periods"))))
    .collect()
}

#[utoipa::path(
    get, path = "/v1/employees/{id}", operation_id = "getEmployee", tag = "employees",
    params(("id" = i64, Path, description = "Employee id")),
    responses(
        (status = 200, description = "The employee", body = EmployeeRecord),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such employee, or not in the caller's groups", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "Purged with its I-9s at the end of their retention (docs/retention.md)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<EmployeeRecord>> {
    caller.require(Scope::Read, Permission::ViewEmployees)?;
    let id = id.get()?;
    let mut rec = load(&state, &caller, id).await?;
    // An employee purged with its I-9s is gone (docs/retention.md, "The employee").
    if let Some(d) = rec.destruction.take() {
        return Err(super::legal_holds::gone("employee", Some(d)));
    }
    Ok(Json(rec))
}

impl crate::list::CsvColumns for EmployeeSummary {
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "i9Status",
        "i9Expiration",
        "firstName",
        "lastName",
        "socialSecurityNumber",
        "profileId",
    ];
}

/// 404 unless employee `id` exists and the caller sees it (its group, and
/// for a partner client its own employees).
pub async fn check_visible(state: &AppState, caller: &Caller, id: i64) -> ApiResult<()> {
    let owner = sqlx::query!(
        "SELECT location_id, integration_client_id FROM employees WHERE id = $1",
        id,
    )
    .fetch_optional(&state.pool)
    .await?;
    let visibility = caller.visibility(state).await?;
    match owner {
        Some(o) if visibility.sees(o.location_id, o.integration_client_id) => Ok(()),
        _ => Err(ApiError::NotFound),
    }
}
