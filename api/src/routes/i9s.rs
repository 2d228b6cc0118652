//! `GET /v1/i9s` and `GET /v1/i9s/{id}`: I-9 records of the employees the
//! caller may see.

use axum::{
    extract::{RawQuery, State},
    Json,
};
use chrono::{DateTime, NaiveDate, Utc};
use i9_common::{
    crypto::Purpose,
    domain::{Attestation, DueKind, I9Status, Permission, Scope, Section1Difference},
    models::{
        i9, retention,
        status_change_report::{self, ReverificationRequired},
    },
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
    // Reverification due within withinDays days (already past included), of
    // I-9s still followed up: not Parked, of employees still employed (not
    // those whose current, latest, period of employment ended today or
    // earlier; one ending later is still employed): `i9_awaits_follow_up`,
    // written once in migrations/20261124200501_reminders.sql and read by
    // the reminders too. The soonest first.
    // A reverification a Status Change Report asks for (docs/everify.md)
    // is due by its request's day (`i9_revocation_due`, the earliest open
    // request's; migrations/20261125000300_status_change_reports.sql): the
    // earlier of the two dates puts the I-9 in the queue and orders it.
    // "The earlier of the dates is at most the day" is written as "one of
    // them is": the I-9s whose expiration is (an index range) and those with
    // an open request due by then, so Postgres reads an index, not every
    // I-9 with `i9_revocation_due` called on each (BENCHMARKS.md, "Growth").
    Queue {
        name: "reverification",
        condition: "i.status <> 'Parked'
                    AND i.id IN (SELECT x.id FROM i9s x
                                 WHERE x.i9_expiration <= {today} + {param}
                                 UNION ALL
                                 SELECT r.i9_id FROM i9_reverification_requests r
                                 WHERE r.cleared_at IS NULL AND r.due_on <= {today} + {param})
                    AND i9_awaits_follow_up(i.status, i.employee_id, {today})",
        order: "ORDER BY LEAST(i.i9_expiration, i9_revocation_due(i.id)), i.id",
        param: Some("withinDays"),
    },
    // Expiring-document reminders (docs/reminders.md): the receipt queue and
    // the two dates together, on the same I-9s as `reverification`.
    Queue {
        name: "receipt",
        condition: "i.status <> 'Parked' AND i.receipt_due_date <= {today} + {param}
                    AND i9_awaits_follow_up(i.status, i.employee_id, {today})",
        order: "ORDER BY i.receipt_due_date, i.id",
        param: Some("withinDays"),
    },
    Queue {
        name: "expiring",
        condition: "i.status <> 'Parked'
                    AND i.id IN (SELECT x.id FROM i9s x
                                 WHERE x.i9_expiration <= {today} + {param}
                                 UNION ALL
                                 SELECT x.id FROM i9s x
                                 WHERE x.receipt_due_date <= {today} + {param}
                                   AND x.status <> 'Parked'
                                 UNION ALL
                                 SELECT r.i9_id FROM i9_reverification_requests r
                                 WHERE r.cleared_at IS NULL AND r.due_on <= {today} + {param})
                    AND i9_awaits_follow_up(i.status, i.employee_id, {today})",
        order: "ORDER BY LEAST(i.i9_expiration, i.receipt_due_date, i9_revocation_due(i.id)), i.id",
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
    /// not of a terminated employee; by `i9Expiration`, or the earlier due date of a reverification
    /// the Status Change Report asks for, docs/everify.md), `receipt` (the same by
    /// `receiptDueDate`: a receipt's replacement due), `expiring` (any of them, by
    /// `documentDueDate`; docs/reminders.md).
    /// Any case; combines with the other filters.
    #[param(inline)]
    queue: Option<QueueName>,
    /// Days from today (UTC) for `queue=reverification`, `receipt` and `expiring`, which need it;
    /// only with those queues.
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
    /// The next document due (docs/reminders.md): the earliest of `i9Expiration`, the
    /// receipt due date and the due date of a reverification the Status Change Report asks for
    /// (`reverificationRequired.dueDate`, docs/everify.md); `null` when none is set. Orders
    /// `queue=expiring`. Named apart from `dateDue`, Section 2's deadline.
    #[serde(rename = "documentDueDate")]
    pub due_date: Option<NaiveDate>,
    /// What is due by `documentDueDate`: `revocation` (a reverification the Status Change
    /// Report asks for: the EAD was revoked), `reverification` (`i9Expiration`) or `receipt` (a
    /// receipt's replacement), in that order when they fall the same day; `null` with it.
    #[serde(rename = "documentDueKind")]
    pub due_kind: Option<DueKind>,
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
    /// The date the record is purged on, once its period of employment is
    /// terminated: the later of hire + 3 years and termination + 1 year
    /// (docs/retention.md); `null` while employed.
    pub retention_date: Option<NaiveDate>,
    /// Whether a legal hold (on the employee or its legal entity) keeps the
    /// record from the purge (docs/retention.md, "Legal holds").
    pub legal_hold: bool,
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
    /// The date the employee's work authorization expires, as attested in
    /// Section 1 by a noncitizen authorized to work; `null` when none was
    /// given (`N/A`, or another attestation). Section 2 compares the
    /// documents with it; `i9Expiration` follows from both.
    pub work_authorization_expiration: Option<NaiveDate>,
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
    /// Supplement A: every preparer and/or translator who assisted the
    /// employee with Section 1, in the order given; the first is also in
    /// `translator*` and `signedDateTranslator` (docs/supplement-a.md). `[]`
    /// when none did, or before Section 1 is signed.
    pub preparers_and_translators: Vec<PreparerRecord>,
    pub list_a1_doc_title: Option<String>,
    pub list_a1_doc_issuer: Option<String>,
    pub list_a1_doc_number: Option<String>,
    pub list_a1_doc_expiration: Option<NaiveDate>,
    /// `true`: this document is a receipt for a lost, stolen or damaged one
    /// (docs/reverification.md, "Receipts"); kept after the receipt update.
    pub list_a1_doc_receipt: bool,
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
    /// `true`: this document is a receipt for a lost, stolen or damaged one
    /// (docs/reverification.md, "Receipts"); kept after the receipt update.
    pub list_b_doc_receipt: bool,
    pub list_c_doc_title: Option<String>,
    pub list_c_doc_issuer: Option<String>,
    pub list_c_doc_number: Option<String>,
    pub list_c_doc_expiration: Option<NaiveDate>,
    /// `true`: this document is a receipt for a lost, stolen or damaged one
    /// (docs/reverification.md, "Receipts"); kept after the receipt update.
    pub list_c_doc_receipt: bool,
    /// Section 2's checkbox: the documents were examined under the DHS
    /// alternative procedure (docs/remote-examination.md).
    pub alternative_procedure: bool,
    /// `self` and `employee`.
    pub links: Vec<Link>,
    // Supplement B (docs/reverification.md).
    /// The day by which the real document must replace a receipt for a lost, stolen or damaged
    /// one (90 days); `null` when no receipt is pending.
    pub receipt_due_date: Option<NaiveDate>,
    /// The Supplement B entries (reverifications, rehires, receipt updates), oldest first.
    pub supplement_b: Vec<super::supplement_b::SupplementBEntry>,
    /// The I-9's latest E-Verify case, if any (docs/everify.md).
    pub everify_case: Option<super::everify::EverifyCaseSummary>,
    /// A reverification E-Verify's Status Change Report asks for: the I-9's EAD was revoked
    /// (docs/everify.md, "The Status Change Report (2025)"); `null` when none is open. `POST
    /// /v1/i9s/{id}/reverify` clears it.
    pub reverification_required: Option<ReverificationRequired>,
    #[serde(skip)]
    pub ssn_ciphertext: Option<Vec<u8>>,
    #[serde(skip)]
    pub ssn_last4: Option<String>,
    #[serde(skip)]
    pub location_id: i64,
    #[serde(skip)]
    pub integration_client_id: Option<i64>,
    #[serde(skip)]
    pub purged_at: Option<DateTime<Utc>>,
}

/// One preparer and/or translator of Supplement A (docs/supplement-a.md).
#[derive(Debug, Serialize, ToSchema, FromRow)]
#[serde(rename_all = "camelCase")]
pub struct PreparerRecord {
    pub last_name: String,
    pub first_name: String,
    pub middle_initial: Option<String>,
    /// Street number and name.
    pub address: String,
    pub city: String,
    /// USPS code of a state, territory or military post office.
    pub state: String,
    /// `12345` or `12345-6789`.
    pub zip: String,
    /// The preparer's typed name: their electronic signature.
    pub signature: String,
    /// The day they signed (the day Section 1 was signed).
    pub signed_date: NaiveDate,
}

/// The record of the I-9's row (docs/api.md, "I-9s"), with its number,
/// preparers, links and what follows from other tables left empty (`load`
/// fills them).
impl From<i9::RecordRow> for I9Record {
    fn from(r: i9::RecordRow) -> Self {
        Self {
            id: r.id,
            employee_id: r.employee_id,
            i9_status: r.status,
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
            work_authorization_expiration: r.work_authorization_expiration,
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
            preparers_and_translators: Vec::new(),
            list_a1_doc_title: r.list_a1_doc_title,
            list_a1_doc_issuer: r.list_a1_doc_issuer,
            list_a1_doc_number: r.list_a1_doc_number,
            list_a1_doc_expiration: r.list_a1_doc_expiration,
            list_a1_doc_receipt: r.list_a1_doc_receipt,
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
            list_b_doc_receipt: r.list_b_doc_receipt,
            list_c_doc_title: r.list_c_doc_title,
            list_c_doc_issuer: r.list_c_doc_issuer,
            list_c_doc_number: r.list_c_doc_number,
            list_c_doc_expiration: r.list_c_doc_expiration,
            list_c_doc_receipt: r.list_c_doc_receipt,
            alternative_procedure: r.alternative_procedure,
            links: Vec::new(),
            receipt_due_date: r.receipt_due_date,
            supplement_b: Vec::new(),
            everify_case: None,
            reverification_required: None,
            ssn_ciphertext: r.ssn_ciphertext,
            ssn_last4: r.ssn_last4,
            location_id: r.location_id,
            integration_client_id: r.integration_client_id,
            purged_at: r.purged_at,
            legal_hold: false,
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
    let q = ListQuery::parse_as(raw.as_deref(), FILTERS, format)?.on(state.config.today());
    let visibility = caller.visibility(&state).await?;
    let (rows, total): (Vec<I9Summary>, i64) = q
        .fetch_page(
            &state.pool,
            &state.cipher,
            PageSql {
                // A purged I-9 is listed no more (docs/retention.md).
                from:
                    "FROM i9s i JOIN employees e ON e.id = i.employee_id WHERE i.purged_at IS NULL",
                count_from: None,
                columns: "i.id, i.first_name, i.last_name, i.email_address,
                          i.status AS i9_status, i.date_due, i.start_date, i.employee_id,
                          i.i9_expiration,
                          LEAST(i.i9_expiration, i.receipt_due_date, i9_revocation_due(i.id))
                              AS due_date,
                          CASE WHEN i9_revocation_due(i.id)
                                    <= LEAST(i.i9_expiration, i.receipt_due_date, i9_revocation_due(i.id))
                               THEN 'revocation'
                               WHEN i.i9_expiration <= i.receipt_due_date
                                    OR i.receipt_due_date IS NULL AND i.i9_expiration IS NOT NULL
                               THEN 'reverification'
                               WHEN i.receipt_due_date IS NOT NULL THEN 'receipt' END AS due_kind",
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
/// on it, which discloses nothing (and so decrypts and audits nothing). 410
/// once it is purged: no step, link or history (docs/retention.md).
pub async fn check_visible(state: &AppState, caller: &Caller, id: i64) -> ApiResult<()> {
    let owner = sqlx::query!(
        "SELECT e.location_id, e.integration_client_id, i.purged_at
         FROM i9s i JOIN employees e ON e.id = i.employee_id WHERE i.id = $1",
        id,
    )
    .fetch_optional(&state.pool)
    .await?;
    let visibility = caller.visibility(state).await?;
    match owner {
        Some(o) if visibility.sees(o.location_id, o.integration_client_id) => match o.purged_at {
            Some(_) => Err(super::legal_holds::gone(
                "I-9",
                retention::destruction(&state.pool, id).await?,
            )),
            None => Ok(()),
        },
        _ => Err(ApiError::NotFound),
    }
}

/// Load one I-9 the caller may see, with its SSN revealed or masked (and a
/// revealed one audited); visibility is checked first.
pub async fn load(state: &AppState, caller: &Caller, id: i64) -> ApiResult<I9Record> {
    let mut rec: I9Record = i9::record_row(&mut *state.pool.acquire().await?, id)
        .await?
        .ok_or(ApiError::NotFound)?
        .into();
    if !caller
        .visibility(state)
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
    rec.preparers_and_translators = sqlx::query_as!(
        PreparerRecord,
        "SELECT last_name, first_name, middle_initial, address, city, state, zip, signature,
                signed_date
         FROM i9_preparers WHERE i9_id = $1 ORDER BY position",
        id,
    )
    .fetch_all(&state.pool)
    .await?;
    // Retention (docs/retention.md): the stored date; a purged I-9 is gone,
    // a held one says so.
    if rec.purged_at.is_some() {
        let d = retention::destruction(&state.pool, id).await?;
        return Err(super::legal_holds::gone("I-9", d));
    }
    rec.legal_hold = retention::held(&state.pool, rec.employee_id).await?;
    rec.links = vec![
        Link::new("self", format!("/v1/i9s/{id}")),
        Link::new("employee", format!("/v1/employees/{}", rec.employee_id)),
    ];
    // Supplement B (docs/reverification.md); `receiptDueDate` is the row's.
    let mut conn = state.pool.acquire().await?;
    rec.supplement_b = super::supplement_b::entries(&mut conn, id).await?;
    rec.everify_case = i9_common::models::everify_case::latest_of_i9(&mut conn, id)
        .await?
        .map(Into::into);
    rec.reverification_required = status_change_report::open_request(&mut conn, id).await?;
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
        (status = 410, description = "Purged at the end of its retention period (docs/retention.md)", body = Problem, content_type = "application/problem+json"),
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
        "documentDueDate",
        "documentDueKind",
    ];
}
