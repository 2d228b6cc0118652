//! `POST /v1/partners/i9s/section1`: an applicant tracking system (a partner
//! client) pushes a hire and starts the integrated I-9 (docs/partners.md).
//!
//! The employee is matched by the partner's `integrationCandidateId`: none
//! creates it; a terminated one is re-hired (a new period of employment); an
//! active one with an open I-9 is a 409. Then the I-9 is requested and the
//! answer carries its Section 1 link. One transaction, like every write.

use axum::{body::Bytes, extract::State, http::HeaderMap, response::Response};
use chrono::NaiveDate;
use i9_common::domain::{Permission, Scope};
use serde::Serialize;
use uuid::Uuid;

use super::employees::{
    input::Operation,
    write::{
        check_references, check_unique, has_open_i9, parse_body, push_insert, request_i9,
        section1_link, set_columns, unique_violation,
    },
};
use crate::{
    auth::{Caller, Visibility},
    error::{ApiError, ApiResult, Problem},
    idempotency::{self, Outcome, Replay},
    list::Link,
    ssn_writes,
    state::AppState,
};

/// The answer of the partner operation.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Section1Started {
    /// The employee completes Section 1 here (absolute URL; shown only in this answer).
    pub i9_section1_link: String,
    /// The employee's id.
    pub id: i64,
    /// `self`: the employee.
    pub links: Vec<Link>,
}

/// The fields of the partner operation (the I column of the specification's table).
#[derive(utoipa::ToSchema)]
#[schema(example = json!({
    "integrationCandidateId": "cand-8812", "onboardingType": "remote", "firstName": "Ana", "lastName": "Diaz",
    "emailAddress": "ana.diaz@mail.example", "startDate": "2026-12-01", "locationId": 3,
    "employeeReturnUrl": "https://ats.example/candidates/8812"
}))]
#[allow(non_snake_case, dead_code)]
pub struct PartnerHire {
    /// The partner's own key for the candidate (max 50). Required.
    integrationCandidateId: String,
    /// `on-site` or `remote`. Required.
    onboardingType: String,
    firstName: String,
    lastName: String,
    emailAddress: String,
    /// `YYYY-MM-DD` or `MM/DD/YYYY`. Required.
    startDate: String,
    locationId: i64,
    /// Where the employee's browser goes after signing Section 1 (https, max 255).
    employeeReturnUrl: Option<String>,
    middleName: Option<String>,
    socialSecurityNumber: Option<String>,
    dateOfBirth: Option<String>,
    profileId: Option<String>,
    jobTitle: Option<String>,
    legalEntity: Option<i64>,
    languagePreference: Option<i32>,
}

#[utoipa::path(
    post, path = "/v1/partners/i9s/section1", tag = "partners",
    request_body(content = PartnerHire, content_type = "application/json"),
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first response for 24 hours")),
    responses(
        (status = 201, description = "The employee was created or re-hired and its I-9 requested", body = Section1Started),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not a partner client, or no permission 10", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The candidate is an active employee with an open I-9; or its profileId or SSN belongs to another employee", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Writes of SSNs ending in the same four digits by a caller without permission 12 wait; see Retry-After (docs/api.md, \"Social security numbers\")", body = Problem, content_type = "application/problem+json"),
        (status = 415, body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn section1(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    caller.require(Scope::Write, Permission::PartnerOperation)?;
    let partner: Option<(String, Option<String>)> = sqlx::query_as(
        "SELECT integration_client_system, integration_hr_url FROM oauth_clients
         WHERE id = $1 AND integration_client_system IS NOT NULL",
    )
    .bind(caller.client_id)
    .fetch_optional(&state.pool)
    .await?;
    let Some((system, hr_url)) = partner else {
        return Err(ApiError::Forbidden(
            "Only a partner client may call the partner operation.".into(),
        ));
    };
    let key = idempotency::key(&headers)?;
    let op = Operation::Partner {
        allow_http: state.config.allow_private_callbacks,
    };
    let input = parse_body(&headers, &body, op)?;
    let (Some(candidate), Some(remote)) = (input.candidate_id.clone(), input.onboarding_remote)
    else {
        return Err(ApiError::Internal(anyhow::anyhow!(
            "required partner fields passed validation unset"
        )));
    };
    let visibility = caller.visibility(&state.pool).await?;

    let mut tx = state.pool.begin().await?;
    if let Some(key) = &key {
        if let Some(replay) = idempotency::claim(
            &mut tx,
            &state.cipher,
            caller.user_id,
            key,
            "POST /v1/partners/i9s/section1",
            &body,
        )
        .await?
        {
            drop(tx);
            return replay_answer(&state, &visibility, replay).await;
        }
    }
    ssn_writes::admit(&state, &caller, input.ssn.as_ref().and_then(Option::as_ref)).await?;
    check_references(&mut tx, &input, &visibility).await?;
    let existing: Option<(i64, Option<NaiveDate>, i64)> = sqlx::query_as(
        "SELECT e.id, (SELECT terminated_date FROM employment_periods p WHERE p.employee_id = e.id ORDER BY p.id DESC LIMIT 1),
                e.location_id
         FROM employees e WHERE e.integration_client_id = $1 AND e.integration_candidate_id = $2 FOR UPDATE",
    )
    .bind(caller.client_id)
    .bind(&candidate)
    .fetch_optional(&mut *tx)
    .await?;
    // The employer may have moved the candidate's employee out of the
    // partner's reach: a partner never writes what it cannot read.
    if let Some((id, _, location)) = existing {
        if !visibility.sees(location, Some(caller.client_id)) {
            return Err(ApiError::Forbidden(format!(
                "Candidate {candidate} is employee {id}, which the employer has placed outside \
                 your client's reach; it can no longer be changed through the partner operation."
            )));
        }
    }
    let existing = existing.map(|(id, terminated, _)| (id, terminated));
    let start = input.start_date.flatten();
    let (id, action) = match existing {
        None => {
            check_unique(&mut tx, &state, &caller, &visibility, &input, None).await?;
            let mut insert = sqlx::QueryBuilder::<sqlx::Postgres>::new("");
            push_insert(&mut insert, &state, &input);
            insert.push(" RETURNING id");
            let id: i64 = insert
                .build_query_scalar()
                .fetch_one(&mut *tx)
                .await
                .map_err(unique_violation)?;
            sqlx::query("INSERT INTO employment_periods (employee_id, start_date) VALUES ($1, $2)")
                .bind(id)
                .bind(start)
                .execute(&mut *tx)
                .await?;
            (id, "partner.create")
        }
        Some((id, Some(_terminated))) => {
            check_unique(&mut tx, &state, &caller, &visibility, &input, Some(id)).await?;
            set_columns(&mut tx, &state, &input, id).await?;
            sqlx::query("INSERT INTO employment_periods (employee_id, start_date) VALUES ($1, $2)")
                .bind(id)
                .bind(start)
                .execute(&mut *tx)
                .await?;
            (id, "partner.rehire")
        }
        Some((id, None)) => {
            if has_open_i9(&mut tx, id).await? {
                return Err(ApiError::Conflict(format!(
                    "Candidate {candidate} is active employee {id} with an open I-9."
                )));
            }
            check_unique(&mut tx, &state, &caller, &visibility, &input, Some(id)).await?;
            set_columns(&mut tx, &state, &input, id).await?;
            sqlx::query(
                "UPDATE employment_periods SET start_date = $2
                 WHERE id = (SELECT id FROM employment_periods WHERE employee_id = $1 ORDER BY id DESC LIMIT 1)",
            )
            .bind(id)
            .bind(start)
            .execute(&mut *tx)
            .await?;
            (id, "partner.update")
        }
    };
    sqlx::query(
        "UPDATE employees SET integration_client_id = $2, integration_client_system = $3, integration_hr_url = $4,
                integration_candidate_id = $5, integration_client_process = $6, integration_request_id = $7,
                integration_transaction_id = $8, integration_service_id = 'i9-section1',
                integration_report_url = $9 || '/v1/employees/' || id, employee_return_url = $10, updated_at = now()
         WHERE id = $1",
    )
    .bind(id)
    .bind(caller.client_id)
    .bind(&system)
    .bind(&hr_url)
    .bind(&candidate)
    .bind(if remote { "remote" } else { "on-site" })
    .bind(&caller.request_id)
    .bind(Uuid::new_v4().to_string())
    .bind(&state.config.public_base_url)
    .bind(&input.return_url)
    .execute(&mut *tx)
    .await
    .map_err(unique_violation)?;
    let (request, link) = request_i9(&mut tx, &state, id, remote).await?;
    sqlx::query(
        "INSERT INTO audit_log (user_id, client_id, action, resource_type, resource_id, request_id, detail)
         VALUES ($1, $2, $3, 'employee', $4, $5, $6)",
    )
    .bind(caller.user_id)
    .bind(caller.client_id)
    .bind(action)
    .bind(id.to_string())
    .bind(&caller.request_id)
    .bind(serde_json::json!({ "candidate": candidate, "onboardingType": if remote { "remote" } else { "on-site" } }))
    .execute(&mut *tx)
    .await?;

    let location = format!("/v1/employees/{id}");
    let answer = Section1Started {
        i9_section1_link: link,
        id,
        links: vec![Link::new("self", location.clone())],
    };
    let outcome = Outcome {
        resource_id: id,
        section1_request: Some(request),
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

/// The answer to a repeated call, rendered again (404 if the caller no
/// longer sees the employee).
async fn replay_answer(
    state: &AppState,
    visibility: &Visibility,
    replay: Replay,
) -> ApiResult<Response> {
    let id = replay.outcome.resource_id;
    let mut conn = state.pool.acquire().await?;
    let owner: Option<(i64, Option<i64>)> =
        sqlx::query_as("SELECT location_id, integration_client_id FROM employees WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
    if !owner.is_some_and(|(location, client)| visibility.sees(location, client)) {
        return Err(ApiError::NotFound);
    }
    let request = replay.outcome.section1_request.ok_or_else(|| {
        ApiError::Internal(anyhow::anyhow!(
            "a partner answer kept without its I-9 request"
        ))
    })?;
    let answer = Section1Started {
        i9_section1_link: section1_link(&mut conn, state, request).await?,
        id,
        links: vec![Link::new("self", format!("/v1/employees/{id}"))],
    };
    replay.respond(&answer)
}
