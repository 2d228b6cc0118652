//! Legal holds (docs/retention.md, "Legal holds"): `POST
//! /v1/employees/{id}/legal-holds`, `POST /v1/eins/{id}/legal-holds`, `GET
//! /v1/legal-holds`, `GET /v1/legal-holds/{id}`, `DELETE
//! /v1/legal-holds/{id}` (lift; the hold stays as history). A hold keeps the employee's I-9s (or those of every employee of
//! the legal entity) from the retention purge while it is active.
//! Permission 5 (approve I-9s: the compliance role), audited
//! `legal_hold.set` and `legal_hold.lift`.

use std::{collections::BTreeSet, sync::OnceLock};

use axum::{
    extract::State,
    http::{header::LOCATION, StatusCode},
    Json,
};
use chrono::{DateTime, Utc};
use i9_common::{
    domain::{fields::Text, Permission, Required, Scope},
    models::retention::{self, Hold, HoldOn},
};
use serde::{Deserialize, Serialize};
use utoipa::{PartialSchema, ToSchema};

use super::{employees, Id};
use crate::{
    auth::Caller,
    body::{properties, JsonBody, Problems, RequestBody},
    error::{ApiError, ApiResult, FieldError, Problem},
    format,
    list::Link,
    state::AppState,
};

pub type HoldReason = Text<500>;

/// The body of a new legal hold.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"reason": "Litigation matter 2026-114"}))]
pub struct NewLegalHold {
    /// Why the records are held: the matter (a case or audit reference),
    /// never a person's data. 1 to 500 characters.
    #[serde(default)]
    #[schema(inline)]
    pub reason: Required<HoldReason>,
}

impl RequestBody for NewLegalHold {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        FieldError::new(name, "unknown_field", "A legal hold takes only reason.")
    }
}

impl NewLegalHold {
    pub fn check(self) -> Result<String, Vec<FieldError>> {
        let mut p = Problems::default();
        let reason = p.required("reason", self.reason);
        p.finish(reason.map(Text::into_string).unwrap_or_default())
    }
}

/// A legal hold, active (`liftedAt` null) or lifted.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegalHold {
    pub id: i64,
    /// The employee held; `null` for a hold on a legal entity.
    pub employee_id: Option<i64>,
    /// The legal entity held (every one of its employees); `null` for a hold on an employee.
    pub legal_entity_id: Option<i64>,
    pub reason: String,
    /// Whether the hold is in force (not lifted).
    pub active: bool,
    /// The user who set it; `null` when set with `i9-admin`.
    pub set_by: Option<i64>,
    #[serde(serialize_with = "format::timestamp")]
    #[schema(value_type = String, example = "2026-11-22T14:03:07.123456")]
    pub set_at: Option<DateTime<Utc>>,
    pub lifted_by: Option<i64>,
    #[serde(serialize_with = "format::timestamp")]
    #[schema(value_type = Option<String>)]
    pub lifted_at: Option<DateTime<Utc>>,
    /// How many employees the hold is on, counted when answered (lifted or
    /// not): `1` for a hold on an employee (`0` once purged); for a hold on
    /// a legal entity, its employees not purged (those whose `legalEntity`
    /// it is; their I-9s are the entity's).
    pub employees_covered: i64,
    /// `self`, and `employee` or `legalEntity`.
    pub links: Vec<Link>,
}

impl LegalHold {
    /// The representation of `h`, covering `employees_covered` employees
    /// ([`retention::employees_covered`]).
    fn new(h: Hold, employees_covered: i64) -> Self {
        let mut links = vec![Link::new("self", format!("/v1/legal-holds/{}", h.id))];
        if let Some(e) = h.employee_id {
            links.push(Link::new("employee", format!("/v1/employees/{e}")));
        }
        if let Some(l) = h.legal_entity_id {
            links.push(Link::new("legalEntity", format!("/v1/eins/{l}")));
        }
        Self {
            id: h.id,
            employee_id: h.employee_id,
            legal_entity_id: h.legal_entity_id,
            reason: h.reason,
            active: h.lifted_at.is_none(),
            set_by: h.set_by,
            set_at: Some(h.set_at),
            lifted_by: h.lifted_by,
            lifted_at: h.lifted_at,
            employees_covered,
            links,
        }
    }

    /// The representation of `h`, its employees counted now.
    async fn load(conn: &mut sqlx::PgConnection, h: Hold) -> Result<Self, sqlx::Error> {
        let covered = retention::employees_covered(&mut *conn, &h).await?;
        Ok(Self::new(h, covered))
    }
}

/// The legal holds, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegalHolds {
    pub search_result: Vec<LegalHold>,
    pub total: i64,
}

/// A new hold's answer: `201`, its `Location` and the hold.
type Created = (
    StatusCode,
    [(axum::http::HeaderName, String); 1],
    Json<LegalHold>,
);

async fn set(state: &AppState, caller: &Caller, on: HoldOn, reason: String) -> ApiResult<Created> {
    let mut tx = state.pool.begin().await?;
    let hold = retention::set_hold(&mut tx, &caller.actor(), on, &reason).await?;
    let hold = LegalHold::load(&mut tx, hold).await?;
    tx.commit().await?;
    let location = format!("/v1/legal-holds/{}", hold.id);
    Ok((StatusCode::CREATED, [(LOCATION, location)], Json(hold)))
}

#[utoipa::path(
    post, path = "/v1/employees/{id}/legal-holds", operation_id = "holdEmployee", tag = "legal holds",
    params(("id" = i64, Path, description = "Employee id")),
    request_body(content = NewLegalHold, content_type = "application/json"),
    responses(
        (status = 201, description = "The hold is in force: the employee's I-9s are not purged", body = LegalHold),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission 5", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such employee, or not in the caller's groups", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn hold_employee(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    body: JsonBody<NewLegalHold>,
) -> ApiResult<Created> {
    caller.require(Scope::Write, Permission::ApproveI9s)?;
    let id = id.get()?;
    let reason = body.check(NewLegalHold::check)?;
    employees::check_visible(&state, &caller, id).await?;
    set(&state, &caller, HoldOn::Employee(id), reason).await
}

#[utoipa::path(
    post, path = "/v1/eins/{id}/legal-holds", operation_id = "holdLegalEntity", tag = "legal holds",
    params(("id" = i64, Path, description = "Legal entity id")),
    request_body(content = NewLegalHold, content_type = "application/json"),
    responses(
        (status = 201, description = "The hold is in force: the I-9s of every employee of the legal entity are not purged", body = LegalHold),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission 5 (or 6, to see legal entities)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such legal entity", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn hold_legal_entity(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    body: JsonBody<NewLegalHold>,
) -> ApiResult<Created> {
    caller.require(Scope::Write, Permission::ApproveI9s)?;
    caller.require(Scope::Write, Permission::ViewLegalEntities)?;
    let id = id.get()?;
    let reason = body.check(NewLegalHold::check)?;
    set(&state, &caller, HoldOn::LegalEntity(id), reason).await
}

#[utoipa::path(
    get, path = "/v1/legal-holds", operation_id = "listLegalHolds", tag = "legal holds",
    responses(
        (status = 200, description = "Every legal hold, active and lifted, newest first: those on a legal entity, and those on an employee in the caller's groups", body = LegalHolds),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<LegalHolds>> {
    caller.require(Scope::Read, Permission::ApproveI9s)?;
    let visibility = caller.visibility(&state.pool).await?;
    let rows = sqlx::query!(
        r#"SELECT h.id, h.employee_id, h.legal_entity_id, h.reason, h.set_by, h.set_at,
                  h.lifted_by, h.lifted_at,
                  e.location_id AS "location_id?", e.integration_client_id,
                  (SELECT count(*) FROM employees c
                   WHERE c.purged_at IS NULL
                     AND (c.id = h.employee_id OR c.legal_entity_id = h.legal_entity_id))
                    AS "employees_covered!"
           FROM legal_holds h LEFT JOIN employees e ON e.id = h.employee_id
           ORDER BY h.id DESC"#,
    )
    .fetch_all(&state.pool)
    .await?;
    let holds: Vec<LegalHold> = rows
        .into_iter()
        .filter(|r| match r.location_id {
            Some(location) => visibility.sees(location, r.integration_client_id),
            None => true,
        })
        .map(|r| {
            // Counted as retention::employees_covered counts.
            LegalHold::new(
                Hold {
                    id: r.id,
                    employee_id: r.employee_id,
                    legal_entity_id: r.legal_entity_id,
                    reason: r.reason,
                    set_by: r.set_by,
                    set_at: r.set_at,
                    lifted_by: r.lifted_by,
                    lifted_at: r.lifted_at,
                },
                r.employees_covered,
            )
        })
        .collect();
    Ok(Json(LegalHolds {
        total: holds.len() as i64,
        search_result: holds,
    }))
}

#[utoipa::path(
    delete, path = "/v1/legal-holds/{id}", operation_id = "liftLegalHold", tag = "legal holds",
    params(("id" = i64, Path, description = "Legal hold id")),
    responses(
        (status = 200, description = "Lifted; the hold stays as history. The next purge round takes the records whose retention is over", body = LegalHold),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission 5", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such hold, or on an employee not in the caller's groups", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Lifted already", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn lift(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<LegalHold>> {
    caller.require(Scope::Write, Permission::ApproveI9s)?;
    let id = id.get()?;
    let mut tx = state.pool.begin().await?;
    let hold = retention::find_hold(&mut tx, id)
        .await?
        .ok_or(ApiError::NotFound)?;
    if let Some(employee) = hold.employee_id {
        employees::check_visible(&state, &caller, employee).await?;
    }
    let hold = retention::lift_hold(&mut tx, &caller.actor(), id).await?;
    let hold = LegalHold::load(&mut tx, hold).await?;
    tx.commit().await?;
    Ok(Json(hold))
}

#[utoipa::path(
    get, path = "/v1/legal-holds/{id}", operation_id = "getLegalHold", tag = "legal holds",
    params(("id" = i64, Path, description = "Legal hold id")),
    responses(
        (status = 200, description = "The hold, active or lifted (its `self` link)", body = LegalHold),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission 5", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such hold, or on an employee not in the caller's groups", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<LegalHold>> {
    // As the list: permission 5, scope read; a hold on an employee the
    // caller does not see is not there.
    caller.require(Scope::Read, Permission::ApproveI9s)?;
    let id = id.get()?;
    let mut conn = state.pool.acquire().await?;
    let hold = retention::find_hold(&mut conn, id)
        .await?
        .ok_or(ApiError::NotFound)?;
    if let Some(employee) = hold.employee_id {
        employees::check_visible(&state, &caller, employee).await?;
    }
    Ok(Json(LegalHold::load(&mut conn, hold).await?))
}

/// The 410 of a purged record (`what`: `I-9` or `employee`): when it was
/// purged and under which rule, from its destruction record `d`.
pub fn gone(what: &str, d: Option<retention::Destruction>) -> ApiError {
    ApiError::Gone(match d {
        Some(d) => format!(
            "The {what} was purged on {} at the end of its retention period ({}, {}). \
             Only a record of its destruction is kept.",
            d.purged_at.date_naive(),
            d.retention_date,
            d.rule,
        ),
        None => format!("The {what} was purged at the end of its retention period."),
    })
}
