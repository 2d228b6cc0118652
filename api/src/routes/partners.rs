//! `POST /v1/partners/i9s/section1`: an applicant tracking system (a partner
//! client) pushes a hire and starts the integrated I-9 (docs/partners.md).
//!
//! The employee is matched by the partner's `integrationCandidateId`: none
//! creates it; a terminated one is re-hired (a new period of employment); an
//! active one with an open I-9 is a 409. Then the I-9 is requested and the
//! answer carries its Section 1 link. One transaction, like every write.

use axum::{extract::State, http::HeaderMap, response::Response};
use i9_common::{
    domain::{Permission, Scope},
    models::{
        employee::{self, Integration, Period},
        i9_request::I9Request,
    },
};
use serde::Serialize;
use uuid::Uuid;

use super::employees::{
    input::PartnerHire,
    write::{check_references, check_unique, section1_link},
};
use crate::{
    auth::{Caller, Visibility},
    body::JsonBody,
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

#[utoipa::path(
    post, path = "/v1/partners/i9s/section1", operation_id = "partnerSection1", tag = "partners",
    request_body(content = PartnerHire, content_type = "application/json"),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255, pattern = r"^[!-~]([\t -~]*[!-~])?$", description = "Replays the first response for 24 hours. 1 to 255 visible ASCII characters (spaces and tabs inside)")),
    responses(
        (status = 201, description = "The employee was created or re-hired and its I-9 requested", body = Section1Started),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not a partner client, or no permission 10", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The candidate is an active employee with an open I-9; or its profileId or SSN belongs to another employee", body = Problem, content_type = "application/problem+json"),
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
    let hire = body.check(|b: PartnerHire| b.check(state.config.allow_private_callbacks))?;
    let candidate = hire.candidate.as_str();
    let visibility = caller.visibility(&state.pool).await?;

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
    check_references(&mut tx, fields, &visibility).await?;
    let existing = employee::lock_candidate(&mut tx, caller.client_id, candidate).await?;
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
    let (id, action) = match existing {
        None => {
            check_unique(&mut tx, &state, &caller, &visibility, fields, None).await?;
            let id = employee::insert(&mut tx, &state.cipher, fields).await?;
            employee::start_period(&mut tx, id, start).await?;
            (id, "partner.create")
        }
        Some((id, current)) if current.is_terminated() => {
            check_unique(&mut tx, &state, &caller, &visibility, fields, Some(id)).await?;
            employee::update(&mut tx, &state.cipher, id, fields).await?;
            employee::start_period(&mut tx, id, start).await?;
            (id, "partner.rehire")
        }
        Some((id, current)) => {
            if employee::has_open_i9(&mut tx, id).await? {
                return Err(ApiError::Conflict(format!(
                    "Candidate {candidate} is active employee {id} with an open I-9."
                )));
            }
            check_unique(&mut tx, &state, &caller, &visibility, fields, Some(id)).await?;
            employee::update(&mut tx, &state.cipher, id, fields).await?;
            let period = Period {
                terminated: current.terminated_date,
                ..start
            };
            employee::set_period(&mut tx, id, current.period_id, period).await?;
            (id, "partner.update")
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
            transaction_id: &Uuid::new_v4().to_string(),
            public_base_url: &state.config.public_base_url,
            return_url: hire.return_url.as_deref(),
        },
    )
    .await?;
    let request = I9Request::new(
        hire.onboarding,
        &state.config.public_base_url,
        state.config.section1_link_ttl,
    );
    request.insert(&mut tx, &state.cipher, id).await?;
    employee::audit(
        &mut tx,
        &caller.actor(),
        action,
        id,
        serde_json::json!({ "candidate": candidate, "onboardingType": hire.onboarding }),
    )
    .await?;

    let location = format!("/v1/employees/{id}");
    let answer = Section1Started {
        i9_section1_link: request.link,
        id,
        links: vec![Link::new("self", location.clone())],
    };
    let outcome = Outcome {
        resource_id: id,
        section1_request: Some(request.id),
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
    let owner = sqlx::query!(
        "SELECT location_id, integration_client_id FROM employees WHERE id = $1",
        id,
    )
    .fetch_optional(&mut *conn)
    .await?;
    if !owner.is_some_and(|o| visibility.sees(o.location_id, o.integration_client_id)) {
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
