//! `GET /v1/i9s` and `GET /v1/i9s/{id}`: I-9 records of the employees the
//! caller may see.

use axum::{
    extract::{RawQuery, State},
    Json,
};
use chrono::{DateTime, NaiveDate, Utc};
use i9_common::{
    crypto::Purpose,
    domain::{Attestation, I9Status, Permission, Scope, Section1Difference},
};
use serde::Serialize;
use sqlx::FromRow;
use utoipa::{IntoParams, ToSchema};

use super::{reveal_ssn, Id};
use crate::list::Format;
use crate::{
    audit,
    auth::Caller,
    error::{ApiError, ApiResult, Problem},
    format,
    list::{
        filter, no_computed, FilterKind as K, FilterSpec, Link, ListQuery, ListResponse, PageSql,
        Queue, Restrict,
    },
    state::AppState,
};
use axum::response::Response;

pub const FILTERS: &[FilterSpec] = &[
    filter("firstName", K::Text("i.first_name")),
    filter("lastName", K::Text("i.last_name")),
    filter("startDate", K::Date("i.start_date")),
    filter("i9Expiration", K::Date("i.i9_expiration")),
    filter("employeeId", K::Int("i.employee_id")),
    filter("locationId", K::Int("e.location_id")),
    filter("locationIdWithin", K::GroupWithin("e.location_id")),
    filter("i9Status", K::OneOf("i.status", I9Status::NAMES)),
    filter("dateDue", K::Date("i.date_due")),
    filter("dateDueFrom", K::DateFrom("i.date_due")),
    filter("dateDueTo", K::DateTo("i.date_due")),
    filter("startDateFrom", K::DateFrom("i.start_date")),
    filter("startDateTo", K::DateTo("i.start_date")),
    filter("i9ExpirationFrom", K::DateFrom("i.i9_expiration")),
    filter("i9ExpirationTo", K::DateTo("i.i9_expiration")),
    filter("queue", K::Queue(QUEUES)),
    filter(
        "withinDays",
        K::QueueParam {
            max: MAX_WITHIN_DAYS,
        },
    ),
];

/// The longest look-ahead of `queue=reverification` (ten years).
pub const MAX_WITHIN_DAYS: i32 = 3650;

/// The work queues of `GET /v1/i9s` (docs/api.md, "Work queues"): each one
/// query, combined with the other filters and the caller's visibility.
pub const QUEUES: &[Queue] = &[
    // Section 1 signed, Section 2 not yet: the soonest deadline first.
    Queue {
        name: "section2-due",
        condition: "i.status = 'Signed Sec 1'",
        order: "ORDER BY i.date_due NULLS LAST, i.id",
        param: None,
    },
    // The next step's deadline has passed: Section 1 by the start date,
    // Section 2 by dateDue. The longest overdue first.
    Queue {
        name: "overdue",
        condition: "(i.status = 'Section 1 Incomplete' AND i.start_date < {today})
                    OR (i.status = 'Signed Sec 1' AND i.date_due < {today})",
        order: "ORDER BY CASE WHEN i.status = 'Section 1 Incomplete' THEN i.start_date
                              ELSE i.date_due END, i.id",
        param: None,
    },
    // Reverification due within withinDays days (already past included),
    // not Parked, of employees still employed: not those whose current
    // (latest) period of employment ended today or earlier (one ending
    // later is still employed). The soonest first.
    Queue {
        name: "reverification",
        condition: "i.status <> 'Parked' AND i.i9_expiration <= {today} + {param}
                    AND NOT EXISTS (
                        SELECT 1 FROM (SELECT p.terminated_date FROM employment_periods p
                                       WHERE p.employee_id = i.employee_id
                                       ORDER BY p.id DESC LIMIT 1) AS latest
                        WHERE latest.terminated_date <= {today})",
        order: "ORDER BY i.i9_expiration, i.id",
        param: Some("withinDays"),
    },
];

/// The `queue` parameter's schema: a queue's name in any case.
pub struct QueueName;

impl utoipa::PartialSchema for QueueName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        let names: Vec<&str> = QUEUES.iter().map(|q| q.name).collect();
        crate::list::params::one_of_single(&names)
    }
}

impl ToSchema for QueueName {}

/// `withinDays`: 0 to [`MAX_WITHIN_DAYS`].
pub struct WithinDays;

impl utoipa::PartialSchema for WithinDays {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::Type::Integer)
            .minimum(Some(0))
            .maximum(Some(MAX_WITHIN_DAYS))
            .into()
    }
}

impl ToSchema for WithinDays {}

/// The `i9Status` filter's schema: a status in any case, or several
/// separated by commas.
pub struct I9StatusFilter;

impl utoipa::PartialSchema for I9StatusFilter {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        crate::list::params::one_of(I9Status::NAMES)
    }
}

impl ToSchema for I9StatusFilter {}

/// Filters of `GET /v1/i9s` (exact match, case-insensitive).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
pub struct I9Filters {
    #[param(inline)]
    firstName: Option<crate::list::params::Text>,
    #[param(inline)]
    lastName: Option<crate::list::params::Text>,
    /// The I-9 hire date, `YYYY-MM-DD` or `MM/DD/YYYY`.
    #[param(inline)]
    startDate: Option<crate::list::params::DateFilter>,
    /// The date reverification is due, `YYYY-MM-DD` or `MM/DD/YYYY`.
    #[param(inline)]
    i9Expiration: Option<crate::list::params::DateFilter>,
    /// The employee's I-9s (a single employee record links here as `i9s`).
    #[param(inline)]
    employeeId: Option<crate::list::params::Int>,
    /// The employee's group (`locationId`), that group only.
    #[param(inline)]
    locationId: Option<crate::list::params::Int>,
    /// The employee's group is this group or one below it (a region and its offices): a
    /// region's work queue with `queue`.
    #[param(inline)]
    locationIdWithin: Option<crate::list::params::Int>,
    /// The I-9's status (`Section 1 Incomplete`, `Signed Sec 1`, `Signed Sec 2`, `Completed`,
    /// `Approved`, `Parked`; any case), or several separated by commas:
    /// `Signed Sec 1,Signed Sec 2`.
    #[param(inline)]
    i9Status: Option<I9StatusFilter>,
    /// The Section 2 deadline, `YYYY-MM-DD` or `MM/DD/YYYY`.
    #[param(inline)]
    dateDue: Option<crate::list::params::DateFilter>,
    /// `dateDue` on or after this date (inclusive); not after `dateDueTo`.
    #[param(inline)]
    dateDueFrom: Option<crate::list::params::DateFilter>,
    /// `dateDue` on or before this date (inclusive).
    #[param(inline)]
    dateDueTo: Option<crate::list::params::DateFilter>,
    /// `startDate` on or after this date (inclusive); not after `startDateTo`.
    #[param(inline)]
    startDateFrom: Option<crate::list::params::DateFilter>,
    /// `startDate` on or before this date (inclusive).
    #[param(inline)]
    startDateTo: Option<crate::list::params::DateFilter>,
    /// `i9Expiration` on or after this date (inclusive); not after `i9ExpirationTo`.
    #[param(inline)]
    i9ExpirationFrom: Option<crate::list::params::DateFilter>,
    /// `i9Expiration` on or before this date (inclusive).
    #[param(inline)]
    i9ExpirationTo: Option<crate::list::params::DateFilter>,
    /// A work queue, in one query (docs/api.md, "Work queues"): `section2-due` (Section 1 signed,
    /// Section 2 not yet; by `dateDue`), `overdue` (Section 1 not signed by `startDate`, or
    /// Section 2 not recorded by `dateDue`; the longest overdue first), `reverification`
    /// (`i9Expiration` at most `withinDays` days from today, passed ones included, not `Parked`,
    /// not of a terminated employee; by `i9Expiration`). Any case; combines with the other filters.
    #[param(inline)]
    queue: Option<QueueName>,
    /// Days from today (UTC) for `queue=reverification`, which needs it; only with that queue.
    #[param(inline)]
    withinDays: Option<WithinDays>,
    #[param(inline)]
    page: Option<crate::list::params::Positive>,
    #[param(inline)]
    page_size: Option<crate::list::params::Positive>,
}

#[derive(Debug, FromRow, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct I9Summary {
    pub id: i64,
    pub first_name: String,
    pub last_name: String,
    pub email_address: Option<String>,
    /// Where the I-9 is in its lifecycle (docs/api.md, "The I-9 lifecycle").
    pub i9_status: I9Status,
    /// Section 2 deadline: three business days after the start date.
    pub date_due: Option<NaiveDate>,
    pub start_date: Option<NaiveDate>,
    /// The employee this I-9 belongs to.
    pub employee_id: i64,
    /// When reverification is due: the date that puts an I-9 in the `reverification` queue
    /// and orders it (docs/api.md, "Work queues").
    pub i9_expiration: Option<NaiveDate>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct I9Record {
    pub id: i64,
    /// The employee this I-9 belongs to.
    pub employee_id: i64,
    /// Where the I-9 is in its lifecycle (docs/api.md, "The I-9 lifecycle").
    pub i9_status: I9Status,
    pub i9_notes: Option<String>,
    pub form_type: i32,
    /// Edition of the form, e.g. `01/20/25`.
    pub form_version: String,
    /// The citizenship or immigration status the employee attested in Section 1; `null` before.
    pub attestation: Option<Attestation>,
    /// Whether the employee completes Section 1 remotely.
    pub remote: bool,
    /// The partner push that started this I-9 (docs/partners.md, "Transaction ids"); `null` for an I-9 not started by one.
    #[serde(rename = "IntegrationTransactionId")]
    pub integration_transaction_id: Option<String>,
    #[serde(serialize_with = "format::timestamp")]
    #[schema(value_type = String, example = "2026-11-22T14:03:07.123456")]
    pub date_created: Option<DateTime<Utc>>,
    #[serde(serialize_with = "format::timestamp")]
    #[schema(value_type = Option<String>)]
    pub date_completed: Option<DateTime<Utc>>,
    /// Section 2 deadline: three business days after the start date.
    pub date_due: Option<NaiveDate>,
    #[serde(serialize_with = "format::timestamp")]
    #[schema(value_type = Option<String>)]
    pub date_approved: Option<DateTime<Utc>>,
    pub start_date: Option<NaiveDate>,
    /// When reverification is due.
    pub i9_expiration: Option<NaiveDate>,
    /// The earliest date the record may be purged, once the employee is terminated.
    pub retention_date: Option<NaiveDate>,
    pub signed_date_employee: Option<NaiveDate>,
    pub signed_date_employer: Option<NaiveDate>,
    pub signed_date_translator: Option<NaiveDate>,
    pub first_name: String,
    pub last_name: String,
    pub middle_initial: Option<String>,
    pub other_name: Option<String>,
    pub date_of_birth: Option<NaiveDate>,
    /// `###-##-####`, masked `***-**-1234` without permission 12.
    pub ssn: Option<String>,
    pub email_address: Option<String>,
    pub phone_number: Option<String>,
    pub address_street: Option<String>,
    pub address_apartment: Option<String>,
    pub address_city: Option<String>,
    pub address_state: Option<String>,
    pub address_zip: Option<String>,
    pub work_authorization: Option<String>,
    pub alien_number: Option<String>,
    pub admission_number: Option<String>,
    pub foreign_passport_number: Option<String>,
    pub foreign_passport_country: Option<String>,
    /// Where Section 1 and the employee record disagree, recorded when the
    /// employee signed: the employee record's field names, never values
    /// (docs/api.md, "I-9s"). `[]` when nothing differs; `null` before
    /// Section 1 is signed.
    pub section1_differences: Option<Vec<Section1Difference>>,
    pub employer_first_name: Option<String>,
    pub employer_last_name: Option<String>,
    pub employer_title: Option<String>,
    pub employer_business: Option<String>,
    pub employer_address: Option<String>,
    pub employer_city: Option<String>,
    pub employer_state: Option<String>,
    pub employer_zip: Option<String>,
    pub translator_first_name: Option<String>,
    pub translator_last_name: Option<String>,
    pub translator_address: Option<String>,
    pub translator_city: Option<String>,
    pub translator_state: Option<String>,
    pub translator_zip: Option<String>,
    pub list_a1_doc_title: Option<String>,
    pub list_a1_doc_issuer: Option<String>,
    pub list_a1_doc_number: Option<String>,
    pub list_a1_doc_expiration: Option<NaiveDate>,
    pub list_a2_doc_title: Option<String>,
    pub list_a2_doc_issuer: Option<String>,
    pub list_a2_doc_number: Option<String>,
    pub list_a2_doc_expiration: Option<NaiveDate>,
    pub list_a3_doc_title: Option<String>,
    pub list_a3_doc_issuer: Option<String>,
    pub list_a3_doc_number: Option<String>,
    pub list_a3_doc_expiration: Option<NaiveDate>,
    pub list_b_doc_title: Option<String>,
    pub list_b_doc_issuer: Option<String>,
    pub list_b_doc_number: Option<String>,
    pub list_b_doc_expiration: Option<NaiveDate>,
    pub list_c_doc_title: Option<String>,
    pub list_c_doc_issuer: Option<String>,
    pub list_c_doc_number: Option<String>,
    pub list_c_doc_expiration: Option<NaiveDate>,
    /// `self` and `employee`.
    pub links: Vec<Link>,
    #[serde(skip)]
    pub ssn_ciphertext: Option<Vec<u8>>,
    #[serde(skip)]
    pub ssn_last4: Option<String>,
    #[serde(skip)]
    pub location_id: i64,
    #[serde(skip)]
    pub integration_client_id: Option<i64>,
    /// Computed at read from the period of employment.
    #[serde(skip)]
    pub purge_after: Option<NaiveDate>,
}

/// `section1_differences` as stored (JSON).
type Differences = sqlx::types::Json<Vec<Section1Difference>>;

/// An I-9 as `load` reads it, before what is derived.
struct I9Row {
    id: i64,
    employee_id: i64,
    i9_status: I9Status,
    i9_notes: Option<String>,
    form_type: i32,
    form_version: String,
    attestation: Option<Attestation>,
    remote: bool,
    integration_transaction_id: Option<String>,
    date_created: DateTime<Utc>,
    date_completed: Option<DateTime<Utc>>,
    date_due: Option<NaiveDate>,
    date_approved: Option<DateTime<Utc>>,
    start_date: Option<NaiveDate>,
    i9_expiration: Option<NaiveDate>,
    retention_date: Option<NaiveDate>,
    signed_date_employee: Option<NaiveDate>,
    signed_date_employer: Option<NaiveDate>,
    signed_date_translator: Option<NaiveDate>,
    first_name: String,
    last_name: String,
    middle_initial: Option<String>,
    other_name: Option<String>,
    date_of_birth: Option<NaiveDate>,
    email_address: Option<String>,
    phone_number: Option<String>,
    address_street: Option<String>,
    address_apartment: Option<String>,
    address_city: Option<String>,
    address_state: Option<String>,
    address_zip: Option<String>,
    work_authorization: Option<String>,
    alien_number: Option<String>,
    admission_number: Option<String>,
    foreign_passport_number: Option<String>,
    foreign_passport_country: Option<String>,
    section1_differences: Option<Differences>,
    employer_first_name: Option<String>,
    employer_last_name: Option<String>,
    employer_title: Option<String>,
    employer_business: Option<String>,
    employer_address: Option<String>,
    employer_city: Option<String>,
    employer_state: Option<String>,
    employer_zip: Option<String>,
    translator_first_name: Option<String>,
    translator_last_name: Option<String>,
    translator_address: Option<String>,
    translator_city: Option<String>,
    translator_state: Option<String>,
    translator_zip: Option<String>,
    list_a1_doc_title: Option<String>,
    list_a1_doc_issuer: Option<String>,
    list_a1_doc_number: Option<String>,
    list_a1_doc_expiration: Option<NaiveDate>,
    list_a2_doc_title: Option<String>,
    list_a2_doc_issuer: Option<String>,
    list_a2_doc_number: Option<String>,
    list_a2_doc_expiration: Option<NaiveDate>,
    list_a3_doc_title: Option<String>,
    list_a3_doc_issuer: Option<String>,
    list_a3_doc_number: Option<String>,
    list_a3_doc_expiration: Option<NaiveDate>,
    list_b_doc_title: Option<String>,
    list_b_doc_issuer: Option<String>,
    list_b_doc_number: Option<String>,
    list_b_doc_expiration: Option<NaiveDate>,
    list_c_doc_title: Option<String>,
    list_c_doc_issuer: Option<String>,
    list_c_doc_number: Option<String>,
    list_c_doc_expiration: Option<NaiveDate>,
    ssn_ciphertext: Option<Vec<u8>>,
    ssn_last4: Option<String>,
    location_id: i64,
    integration_client_id: Option<i64>,
    purge_after: Option<NaiveDate>,
}

/// The record with its number and links left empty (`load` fills them).
impl From<I9Row> for I9Record {
    fn from(r: I9Row) -> Self {
        Self {
            id: r.id,
            employee_id: r.employee_id,
            i9_status: r.i9_status,
            i9_notes: r.i9_notes,
            form_type: r.form_type,
            form_version: r.form_version,
            attestation: r.attestation,
            remote: r.remote,
            integration_transaction_id: r.integration_transaction_id,
            date_created: Some(r.date_created),
            date_completed: r.date_completed,
            date_due: r.date_due,
            date_approved: r.date_approved,
            start_date: r.start_date,
            i9_expiration: r.i9_expiration,
            retention_date: r.retention_date,
            signed_date_employee: r.signed_date_employee,
            signed_date_employer: r.signed_date_employer,
            signed_date_translator: r.signed_date_translator,
            first_name: r.first_name,
            last_name: r.last_name,
            middle_initial: r.middle_initial,
            other_name: r.other_name,
            date_of_birth: r.date_of_birth,
            ssn: None,
            email_address: r.email_address,
            phone_number: r.phone_number,
            address_street: r.address_street,
            address_apartment: r.address_apartment,
            address_city: r.address_city,
            address_state: r.address_state,
            address_zip: r.address_zip,
            work_authorization: r.work_authorization,
            alien_number: r.alien_number,
            admission_number: r.admission_number,
            foreign_passport_number: r.foreign_passport_number,
            foreign_passport_country: r.foreign_passport_country,
            section1_differences: r.section1_differences.map(|d| d.0),
            employer_first_name: r.employer_first_name,
            employer_last_name: r.employer_last_name,
            employer_title: r.employer_title,
            employer_business: r.employer_business,
            employer_address: r.employer_address,
            employer_city: r.employer_city,
            employer_state: r.employer_state,
            employer_zip: r.employer_zip,
            translator_first_name: r.translator_first_name,
            translator_last_name: r.translator_last_name,
            translator_address: r.translator_address,
            translator_city: r.translator_city,
            translator_state: r.translator_state,
            translator_zip: r.translator_zip,
            list_a1_doc_title: r.list_a1_doc_title,
            list_a1_doc_issuer: r.list_a1_doc_issuer,
            list_a1_doc_number: r.list_a1_doc_number,
            list_a1_doc_expiration: r.list_a1_doc_expiration,
            list_a2_doc_title: r.list_a2_doc_title,
            list_a2_doc_issuer: r.list_a2_doc_issuer,
            list_a2_doc_number: r.list_a2_doc_number,
            list_a2_doc_expiration: r.list_a2_doc_expiration,
            list_a3_doc_title: r.list_a3_doc_title,
            list_a3_doc_issuer: r.list_a3_doc_issuer,
            list_a3_doc_number: r.list_a3_doc_number,
            list_a3_doc_expiration: r.list_a3_doc_expiration,
            list_b_doc_title: r.list_b_doc_title,
            list_b_doc_issuer: r.list_b_doc_issuer,
            list_b_doc_number: r.list_b_doc_number,
            list_b_doc_expiration: r.list_b_doc_expiration,
            list_c_doc_title: r.list_c_doc_title,
            list_c_doc_issuer: r.list_c_doc_issuer,
            list_c_doc_number: r.list_c_doc_number,
            list_c_doc_expiration: r.list_c_doc_expiration,
            links: Vec::new(),
            ssn_ciphertext: r.ssn_ciphertext,
            ssn_last4: r.ssn_last4,
            location_id: r.location_id,
            integration_client_id: r.integration_client_id,
            purge_after: r.purge_after,
        }
    }
}

#[utoipa::path(
    get, path = "/v1/i9s", operation_id = "listI9s", tag = "i9s", params(I9Filters),
    responses(
        (status = 200, content((ListResponse<I9Summary> = "application/json"), (String = "text/csv"))),
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
    let q = ListQuery::parse_as(raw.as_deref(), FILTERS, format)?;
    let visibility = caller.visibility(&state.pool).await?;
    let (rows, total): (Vec<I9Summary>, i64) = q
        .fetch_page(
            &state.pool,
            &state.cipher,
            PageSql {
                from: "FROM i9s i JOIN employees e ON e.id = i.employee_id WHERE TRUE",
                count_from: None,
                columns: "i.id, i.first_name, i.last_name, i.email_address,
                          i.status AS i9_status, i.date_due, i.start_date, i.employee_id,
                          i.i9_expiration",
                order: "ORDER BY i.id",
                restrict: Some(Restrict::Employee(&visibility, "e")),
            },
            &no_computed,
        )
        .await?;
    Ok(ListResponse {
        links: q.links("/v1/i9s", total),
        search_result: rows,
        total,
    }
    .answer(format))
}

/// 404 unless the I-9 exists and the caller may see it: the check of a step
/// on it, which discloses nothing (and so decrypts and audits nothing).
pub async fn check_visible(state: &AppState, caller: &Caller, id: i64) -> ApiResult<()> {
    let owner = sqlx::query!(
        "SELECT e.location_id, e.integration_client_id
         FROM i9s i JOIN employees e ON e.id = i.employee_id WHERE i.id = $1",
        id,
    )
    .fetch_optional(&state.pool)
    .await?;
    let visibility = caller.visibility(&state.pool).await?;
    match owner {
        Some(o) if visibility.sees(o.location_id, o.integration_client_id) => Ok(()),
        _ => Err(ApiError::NotFound),
    }
}

/// Load one I-9 the caller may see, with its SSN revealed or masked (and a
/// revealed one audited); visibility is checked first.
pub async fn load(state: &AppState, caller: &Caller, id: i64) -> ApiResult<I9Record> {
    let mut rec: I9Record = sqlx::query_as!(
        I9Row,
        r#"SELECT i.id, i.employee_id, i.status AS "i9_status: I9Status", i.i9_notes, i.form_type,
                  i.form_version, i.attestation AS "attestation: Attestation", i.remote,
                  i.integration_transaction_id, i.date_created,
                  i.date_completed, i.date_due, i.date_approved, i.start_date, i.i9_expiration,
                  i.retention_date, i.signed_date_employee, i.signed_date_employer, i.signed_date_translator,
                  i.first_name, i.last_name, i.middle_initial, i.other_name, i.date_of_birth,
                  i.email_address, i.phone_number, i.address_street, i.address_apartment, i.address_city,
                  i.address_state, i.address_zip, i.work_authorization, i.alien_number, i.admission_number,
                  i.foreign_passport_number, i.foreign_passport_country,
                  i.section1_differences AS "section1_differences: Differences",
                  i.employer_first_name,
                  i.employer_last_name, i.employer_title, i.employer_business, i.employer_address,
                  i.employer_city, i.employer_state, i.employer_zip, i.translator_first_name,
                  i.translator_last_name, i.translator_address, i.translator_city, i.translator_state,
                  i.translator_zip, i.list_a1_doc_title, i.list_a1_doc_issuer, i.list_a1_doc_number,
                  i.list_a1_doc_expiration, i.list_a2_doc_title, i.list_a2_doc_issuer, i.list_a2_doc_number,
                  i.list_a2_doc_expiration, i.list_a3_doc_title, i.list_a3_doc_issuer, i.list_a3_doc_number,
                  i.list_a3_doc_expiration, i.list_b_doc_title, i.list_b_doc_issuer, i.list_b_doc_number,
                  i.list_b_doc_expiration, i.list_c_doc_title, i.list_c_doc_issuer, i.list_c_doc_number,
                  i.list_c_doc_expiration, i.ssn_ciphertext, i.ssn_last4, e.location_id,
                  e.integration_client_id,
                  -- Retention: once terminated, the later of hire + 3 years and termination + 1 year.
                  CASE WHEN p.terminated_date IS NOT NULL THEN
                      GREATEST(COALESCE(i.start_date, p.start_date) + INTERVAL '3 years',
                               p.terminated_date + INTERVAL '1 year')::DATE
                  END AS purge_after
           FROM i9s i JOIN employees e ON e.id = i.employee_id
           LEFT JOIN LATERAL (
               SELECT start_date, terminated_date FROM employment_periods
               WHERE id = i.employment_period_id
                  OR (i.employment_period_id IS NULL AND employee_id = i.employee_id)
               ORDER BY id DESC LIMIT 1
           ) p ON TRUE
           WHERE i.id = $1"#,
        id,
    )
    .fetch_optional(&state.pool)
    .await?
    .ok_or(ApiError::NotFound)?
    .into();
    if !caller
        .visibility(&state.pool)
        .await?
        .sees(rec.location_id, rec.integration_client_id)
    {
        return Err(ApiError::NotFound);
    }
    rec.ssn = reveal_ssn(
        state,
        caller,
        Purpose::I9Ssn,
        rec.ssn_ciphertext.as_deref(),
        rec.ssn_last4.as_deref(),
    )?;
    if rec.ssn_ciphertext.is_some() && caller.has(Permission::FullSsn) {
        audit::record_ssn_reads(&state.pool, caller, "i9", &[id]).await?;
    }
    rec.retention_date = rec.purge_after.or(rec.retention_date);
    rec.links = vec![
        Link::new("self", format!("/v1/i9s/{id}")),
        Link::new("employee", format!("/v1/employees/{}", rec.employee_id)),
    ];
    Ok(rec)
}

#[utoipa::path(
    get, path = "/v1/i9s/{id}", operation_id = "getI9", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    responses(
        (status = 200, body = I9Record),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such I-9, or its employee is not in the caller's groups", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<I9Record>> {
    caller.require(Scope::Read, Permission::ViewI9s)?;
    let id = id.get()?;
    Ok(Json(load(&state, &caller, id).await?))
}

impl crate::list::CsvColumns for I9Summary {
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "firstName",
        "lastName",
        "emailAddress",
        "i9Status",
        "dateDue",
        "startDate",
        "employeeId",
        "i9Expiration",
    ];
}
