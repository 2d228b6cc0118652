//! `POST /v1/partners/i9s/section1`: an applicant tracking system (a partner
//! client) pushes a hire and starts the integrated I-9 (docs/partners.md);
//! `GET /v1/partners/locations`: the groups it may push hires into.
//!
//! The employee is matched by the partner's `integrationCandidateId`: none
//! creates it; a terminated one is re-hired (a new period of employment, and
//! what its ended employment left open is parked); one still employed is a
//! 409, whatever its I-9 (docs/partners.md, "The service matches the
//! employee"). Then the I-9 is requested and the answer carries its Section 1
//! link; or, for a re-hire with `rehireI9: supplementB`, the re-hire is
//! recorded on Supplement B of the latest I-9 and the answer has no link
//! (docs/reverification.md, "Rehire"). One transaction, like every write.

use axum::{
    extract::{RawQuery, State},
    http::HeaderMap,
    response::Response,
};
use i9_common::{
    domain::{Permission, Scope},
    models::{
        employee::{self, Integration, Period},
        i9,
        i9_request::I9Request,
        retention, supplement_b,
    },
};
use serde::Serialize;
use sqlx::FromRow;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::employees::{
    input::{PartnerHire, RehireI9},
    write::{check_references, check_unique, create_error, read_body, section1_link},
};
use crate::list::Format;
use crate::{
    auth::{Caller, Visibility},
    body::JsonBody,
    error::{ApiError, ApiResult, FieldError, Problem},
    idempotency::{self, Outcome, Replay},
    list::{
        filter, no_computed, FilterKind as K, FilterSpec, Link, ListQuery, ListResponse, PageSql,
        Restrict,
    },
    ssn_writes,
    state::AppState,
};

/// The answer of the partner operation.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Section1Started {
    /// The employee completes Section 1 here (absolute URL; shown only in
    /// this answer). `null` for a re-hire recorded on Supplement B
    /// (`rehireI9: supplementB`), which starts no new I-9.
    pub i9_section1_link: Option<String>,
    /// The employee's id.
    pub id: i64,
    /// `self`: the employee.
    pub links: Vec<Link>,
}

pub const LOCATION_FILTERS: &[FilterSpec] = &[filter("name", K::Text("g.name"))];

/// Filters of `GET /v1/partners/locations` (exact match, case-insensitive).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct LocationFilters {
    /// The group's name.
    #[param(inline)]
    name: Option<crate::list::params::Text>,
    #[param(inline)]
    page: Option<crate::list::params::Positive>,
    #[param(inline)]
    page_size: Option<crate::list::params::Positive>,
}

/// A group the partner may push hires into: its `id` is a `locationId` of
/// the partner operation.
#[derive(Debug, Serialize, ToSchema)]
pub struct PartnerLocation {
    /// The group's id: the `locationId` to send.
    pub id: i64,
    pub name: String,
}

/// A `groups` row, as the list of locations reads it (through its dynamic
/// filters and the caller's groups).
#[derive(Debug, FromRow)]
struct LocationRow {
    id: i64,
    name: String,
}

impl From<LocationRow> for PartnerLocation {
    fn from(row: LocationRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
        }
    }
}

// A partner's token reaches no other group route, so this is how it learns
// its `locationId`s (docs/partners.md, "Find your locationId").
/// The groups this partner client may push hires into.
///
/// Each `id` is a `locationId` that `POST /v1/partners/i9s/section1` accepts
/// from this client: the groups of its user and the groups below them, or
/// every group when the user's role has permission 11.
#[utoipa::path(
    get, path = "/v1/partners/locations", operation_id = "listPartnerLocations", tag = "partners",
    params(LocationFilters),
    responses(
        (status = 200, description = "The groups the partner may push hires into, ordered by name (case-insensitive), then id", content((ListResponse<PartnerLocation> = "application/json"), (String = "text/csv"))),
        (status = 406, description = "The Accept allows neither application/json nor text/csv", body = Problem, content_type = "application/problem+json"),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not a partner client, or no permission 10", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn locations(
    State(state): State<AppState>,
    caller: Caller,
    format: Format,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    caller.require(Scope::Read, Permission::PartnerOperation)?;
    if !caller.partner {
        // As the operation itself answers such a caller: the route exists,
        // and this client may not use it.
        return Err(ApiError::Forbidden(
            "Only a partner client may list the locations of the partner operation.".into(),
        ));
    }
    let q = ListQuery::parse_as(raw.as_deref(), LOCATION_FILTERS, format)?;
    let visibility = caller.visibility(&state).await?;
    let (rows, total) = q
        .fetch_page::<LocationRow>(
            &state.pool,
            &state.cipher,
            PageSql {
                from: "FROM groups g WHERE TRUE",
                count_from: None,
                columns: "g.id, g.name",
                order: "ORDER BY lower(g.name), g.name, g.id",
                restrict: Some(Restrict::Group(&visibility, "g.id")),
            },
            &no_computed,
        )
        .await?;
    Ok(ListResponse {
        links: q.links("/v1/partners/locations", total),
        search_result: rows.into_iter().map(PartnerLocation::from).collect(),
        total,
    }
    .answer(format))
}

#[utoipa::path(
    post, path = "/v1/partners/i9s/section1", operation_id = "partnerSection1", tag = "partners",
    request_body(content = PartnerHire, content_type = "application/json"),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255, pattern = r"^[!-~]([\t -~]*[!-~])?$", description = "Replays the first response for 24 hours. 1 to 255 visible ASCII characters (spaces and tabs inside)")),
    responses(
        (status = 201, description = "The employee was created, or re-hired (an I-9 its ended employment left open is parked), and its I-9 requested", body = Section1Started),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not a partner client, or no permission 10", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`/problems/conflict`: the candidate is an employee still employed (not terminated), whatever its I-9: the employer terminates it first, then a push re-hires it; or its profileId or SSN belongs to another employee. `/problems/unresolved-verification`: a re-hire with a new I-9 while an E-Verify case of the employee is not Closed, its id in the member `caseId`; push again once the case's `everify.status_changed` event says `Closed` (the same Idempotency-Key may be reused: a 409 is not kept for replay; docs/partners.md)", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "A replay (same `Idempotency-Key`) of a call whose employee was purged since (docs/retention.md)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Writes of SSNs ending in the same four digits by a caller without permission 12 wait; see Retry-After (docs/api.md, \"Social security numbers\")", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn section1(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: JsonBody<PartnerHire>,
) -> ApiResult<Response> {
    caller.require(Scope::Write, Permission::PartnerOperation)?;
    let partner = sqlx::query!(
        r#"SELECT integration_client_system AS "system!", integration_hr_url AS hr_url FROM oauth_clients
           WHERE id = $1 AND integration_client_system IS NOT NULL"#,
        caller.client_id,
    )
    .fetch_optional(&state.pool)
    .await?;
    let Some((system, hr_url)) = partner.map(|p| (p.system, p.hr_url)) else {
        return Err(ApiError::Forbidden(
            "Only a partner client may call the partner operation.".into(),
        ));
    };
    let key = idempotency::key(&headers)?;
    let hire = read_body(&state, &body, |b: PartnerHire| {
        b.check(state.config.allow_private_callbacks)
    })
    .await?;
    let candidate = hire.candidate.as_str();
    let visibility = caller.visibility(&state).await?;

    let mut tx = state.pool.begin().await?;
    if let Some(key) = &key {
        if let Some(replay) = idempotency::claim(
            &mut tx,
            &state.cipher,
            caller.user_id,
            key,
            "POST /v1/partners/i9s/section1",
            &body.raw,
        )
        .await?
        {
            drop(tx);
            return replay_answer(&state, &visibility, replay).await;
        }
    }
    let fields = &hire.fields;
    ssn_writes::admit(&state, &caller, fields.new_ssn()).await?;
    let existing = employee::lock_candidate(&mut tx, caller.client_id, candidate).await?;
    // A new candidate's references are checked by its insert, as `POST
    // /v1/employees` does: a group the caller may place in exists, so the
    // usual push asks nothing of the database first (`create_error`
    // explains a failed insert). A re-hire's update is checked first.
    if existing.is_some()
        || fields
            .location_id
            .is_some_and(|group| !visibility.may_place_in(group))
    {
        check_references(&mut tx, fields, &visibility).await?;
    }
    // The employer may have moved the candidate's employee out of the
    // partner's reach: a partner never writes what it cannot read.
    if let Some((id, current)) = &existing {
        if !visibility.sees(current.location_id, Some(caller.client_id)) {
            return Err(ApiError::Forbidden(format!(
                "Candidate {candidate} is employee {id}, which the employer has placed outside \
                 your client's reach; it can no longer be changed through the partner operation."
            )));
        }
    }
    let start = Period {
        start: Some(hire.start_date),
        terminated: None,
    };
    let base = state.config.public_base_url.as_str();
    let actor = caller.actor();
    let transaction = Uuid::new_v4().to_string();
    // The matching rule (docs/partners.md, "The service matches the employee").
    let on_supplement_b = hire.rehire_i9 == RehireI9::SupplementB;
    let new_request = || {
        I9Request::new(
            hire.onboarding,
            &state.config.public_base_url,
            state.config.section1_link_ttl,
        )
        .of_partner_push(transaction.clone())
    };
    let detail = || {
        let mut detail =
            serde_json::json!({ "candidate": candidate, "onboardingType": hire.onboarding });
        if on_supplement_b {
            detail["rehireI9"] = "supplementB".into();
        }
        detail
    };
    let (id, hired) = match existing {
        None if on_supplement_b => {
            return Err(ApiError::Validation(vec![FieldError::new(
                "rehireI9",
                "not_a_rehire",
                format!(
                    "Candidate {candidate} is not an employee yet: a new employee starts a new \
                     I-9 (leave out rehireI9)."
                ),
            )]))
        }
        None => {
            // The employee, its first period, its I-9 request with the job
            // that creates the I-9, and the audit entry: one statement
            // (`employee::create`); its unique indexes answer for a taken
            // profileId or SSN.
            let request = new_request();
            let created: Result<NewEmployee, sqlx::Error> = employee::create(
                &mut tx,
                &state.cipher,
                &actor,
                fields,
                start,
                "partner.create",
                detail(),
                Some(&request),
                false,
            )
            .await;
            match created {
                Ok(new) => (new.id, Hired::New(request)),
                Err(e) => {
                    drop(tx);
                    return Err(create_error(e, &state, &caller, &visibility, fields).await);
                }
            }
        }
        Some((id, current)) if current.is_terminated() => {
            // The new period starts after the ended one (docs/api.md,
            // "Periods of employment"); nothing is written otherwise.
            if let Some(e) = employee::new_period_error(&mut tx, id, start).await? {
                return Err(ApiError::Validation(vec![e]));
            }
            check_unique(&mut tx, &state, &caller, &visibility, fields, Some(id)).await?;
            // What the ended employment left open is parked, so that the new
            // I-9 can start; before the update, so that an I-9 made here from
            // a pending request keeps the data it was requested with. A
            // re-hire on Supplement B needs the latest I-9 completed, and
            // says so (below) rather than parking it.
            // An open E-Verify case is not parked: the employer closes it
            // (docs/everify.md, "Unresolved verification records").
            if !on_supplement_b {
                if let Some(case @ employee::I9Blocker::UnresolvedCase { .. }) =
                    employee::i9_blocker(&mut tx, id).await?
                {
                    return Err(case.into());
                }
            }
            if !on_supplement_b {
                i9::park_for_rehire(
                    &mut tx,
                    &state.cipher,
                    &actor,
                    id,
                    &format!(
                        "Parked: candidate {candidate} was re-hired through the partner operation \
                     (a new period of employment and a new I-9)."
                    ),
                    base,
                )
                .await?;
            }
            employee::update(&mut tx, &state.cipher, id, fields).await?;
            employee::start_period(&mut tx, id, start, base).await?;
            if on_supplement_b {
                supplement_b::rehire(&mut tx, &actor, id, state.config.today(), "rehireI9").await?;
            }
            (id, Hired::Rehired)
        }
        Some((id, _)) => {
            return Err(ApiError::Conflict(still_employed(
                candidate,
                id,
                on_supplement_b,
            )))
        }
    };
    employee::link_partner(
        &mut tx,
        id,
        &Integration {
            client_id: caller.client_id,
            client_system: &system,
            hr_url: hr_url.as_deref(),
            candidate,
            onboarding: hire.onboarding,
            request_id: caller.request_id.as_deref(),
            transaction_id: (!on_supplement_b).then_some(transaction.as_str()),
            public_base_url: base,
            return_url: hire.return_url.as_deref(),
        },
    )
    .await?;
    let request = match hired {
        // Recorded, with its job and the audit entry, by the insert.
        Hired::New(request) => Some(request),
        Hired::Rehired => {
            let request = if on_supplement_b {
                None
            } else {
                let request = new_request();
                request.insert(&mut tx, &state.cipher, id).await?;
                Some(request)
            };
            employee::audit(&mut tx, &actor, "partner.rehire", id, detail()).await?;
            request
        }
    };

    let location = format!("/v1/employees/{id}");
    let outcome = Outcome {
        resource_id: id,
        section1_request: request.as_ref().map(|r| r.id),
    };
    let answer = Section1Started {
        i9_section1_link: request.map(|r| r.link),
        id,
        links: vec![Link::new("self", location.clone())],
    };
    idempotency::created(
        Some(tx),
        caller.user_id,
        key.as_deref(),
        outcome,
        location,
        &answer,
    )
    .await
}

/// The employee a push created: its id, read from the insert's answer.
#[derive(FromRow)]
struct NewEmployee {
    id: i64,
}

/// What a push did to its candidate's employee.
enum Hired {
    /// Created it, with the I-9 request (recorded in the same statement).
    New(I9Request),
    /// Re-hired it (a terminated employee): its request and audit entry
    /// are written after the partner link.
    Rehired,
}

/// The 409 of a push of a candidate whose employee is still employed
/// (whatever the state of its I-9s): a push re-hires only a terminated one.
fn still_employed(candidate: &str, id: i64, on_supplement_b: bool) -> String {
    let how = if on_supplement_b {
        "on Supplement B of its latest I-9"
    } else {
        "with a new I-9 (once no E-Verify case of it is unresolved: docs/everify.md)"
    };
    format!(
        "Candidate {candidate} is employee {id}, who is still employed. A push creates a new \
         employee or re-hires a terminated one: the employer terminates employee {id} first \
         (terminatedDate), then a push of the candidate re-hires it {how}."
    )
}

/// The answer to a repeated call, rendered again (404 if the caller no
/// longer sees the employee, 410 if it was purged since: docs/retention.md).
async fn replay_answer(
    state: &AppState,
    visibility: &Visibility,
    replay: Replay,
) -> ApiResult<Response> {
    let id = replay.outcome.resource_id;
    let mut conn = state.pool.acquire().await?;
    let owner = sqlx::query!(
        "SELECT location_id, integration_client_id FROM employees WHERE id = $1",
        id,
    )
    .fetch_optional(&mut *conn)
    .await?;
    if !owner.is_some_and(|o| visibility.sees(o.location_id, o.integration_client_id)) {
        return Err(ApiError::NotFound);
    }
    // Purged since: its Section 1 link went with it.
    if let Some(d) = retention::employee_destruction(&mut *conn, id).await? {
        return Err(super::legal_holds::gone("employee", Some(d)));
    }
    // No request: a re-hire recorded on Supplement B, answered without a link.
    let link = match replay.outcome.section1_request {
        // `None` too when the I-9 it started was purged since (the
        // employee re-hired): the link went with it (docs/retention.md).
        Some(request) => section1_link(&mut conn, state, request).await?,
        None => None,
    };
    let answer = Section1Started {
        i9_section1_link: link,
        id,
        links: vec![Link::new("self", format!("/v1/employees/{id}"))],
    };
    replay.respond(&answer)
}

impl crate::list::CsvColumns for PartnerLocation {
    const COLUMNS: &'static [&'static str] = &["id", "name"];
}
