//! Legal holds (docs/retention.md, "Legal holds"): `POST
//! /v1/employees/{id}/legal-holds`, `POST /v1/eins/{id}/legal-holds`, `GET
//! /v1/legal-holds`, `GET /v1/legal-holds/{id}`, `DELETE
//! /v1/legal-holds/{id}` (lift; the hold stays as history). A hold keeps the employee's I-9s (or those of every employee of
//! the legal entity) from the retention purge while it is active.
//! Permission 5 (approve I-9s: the compliance role), audited
//! `legal_hold.set` and `legal_hold.lift`. A hold on a legal entity covers
//! every employee of it: only a caller who sees every employee (no group
//! limit) sets or lifts one (docs/retention.md, "Who may hold a legal
//! entity").

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
    auth::{Caller, Visibility},
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
    /// it is; their I-9s are the entity's) that the caller sees: a caller
    /// limited to some groups counts only the employees of those groups.
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

    /// The representation of `h`, its employees that `visibility` sees
    /// counted now.
    async fn load(
        conn: &mut sqlx::PgConnection,
        visibility: &Visibility,
        h: Hold,
    ) -> Result<Self, sqlx::Error> {
        let (groups, client) = visibility.as_params();
        let covered =
            retention::employees_covered(&mut *conn, &h, groups.as_deref(), client).await?;
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

async fn set(
    state: &AppState,
    caller: &Caller,
    visibility: &Visibility,
    on: HoldOn,
    reason: String,
) -> ApiResult<Created> {
    let mut tx = state.pool.begin().await?;
    let hold = retention::set_hold(&mut tx, &caller.actor(), on, &reason).await?;
    // A purged employee is gone: no hold is set on it (the transaction is
    // rolled back). Read under the holds' lock that set_hold took, which a
    // purge takes too: a purge committed before it is seen.
    if let HoldOn::Employee(id) = on {
        if let Some(d) = retention::employee_destruction(&mut *tx, id).await? {
            return Err(gone("employee", Some(d)));
        }
    }
    let hold = LegalHold::load(&mut tx, visibility, hold).await?;
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
        (status = 410, description = "The employee was purged (docs/retention.md): nothing is left to hold", body = Problem, content_type = "application/problem+json"),
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
    let visibility = caller.visibility(&state).await?;
    set(&state, &caller, &visibility, HoldOn::Employee(id), reason).await
}

#[utoipa::path(
    post, path = "/v1/eins/{id}/legal-holds", operation_id = "holdLegalEntity", tag = "legal holds",
    params(("id" = i64, Path, description = "Legal entity id")),
    request_body(content = NewLegalHold, content_type = "application/json"),
    responses(
        (status = 201, description = "The hold is in force: the I-9s of every employee of the legal entity are not purged", body = LegalHold),
        (status = 400, description = "The body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission 5 (or 6, to see legal entities); or the caller's visibility is limited to some groups (a hold on a legal entity covers every employee of it)", body = Problem, content_type = "application/problem+json"),
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
    let visibility = caller.visibility(&state).await?;
    check_entity_write(&state, &visibility, id, "set").await?;
    set(
        &state,
        &caller,
        &visibility,
        HoldOn::LegalEntity(id),
        reason,
    )
    .await
}

/// Whether the caller may set or lift (`verb`) a hold on legal entity
/// `entity`: only one who sees every employee (docs/retention.md, "Who may
/// hold a legal entity"). A hold on a legal entity covers each of its
/// employees, in every group, and those who join it later: a caller limited
/// to some groups would lift the protection of employees it cannot see.
/// `404` for no such legal entity, `403` for a limited caller.
async fn check_entity_write(
    state: &AppState,
    visibility: &Visibility,
    entity: i64,
    verb: &str,
) -> ApiResult<()> {
    if visibility.sees_all() {
        return Ok(());
    }
    let exists = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM legal_entities WHERE id = $1) AS "exists!""#,
        entity,
    )
    .fetch_one(&state.pool)
    .await?;
    if !exists {
        return Err(ApiError::NotFound);
    }
    Err(ApiError::Forbidden(format!(
        "A legal hold on a legal entity covers every employee of it, in every group; your \
         visibility is limited to some groups, so you may not {verb} one. It needs permission \
         11 (see employees of every group). Holds on the employees you see are yours to set \
         and lift (POST /v1/employees/{{id}}/legal-holds)."
    )))
}

#[utoipa::path(
    get, path = "/v1/legal-holds", operation_id = "listLegalHolds", tag = "legal holds",
    responses(
        (status = 200, description = "Every legal hold, active and lifted, newest first: those on an employee in the caller's groups, and (with permission 6) those on a legal entity, counting the employees the caller sees", body = LegalHolds),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<LegalHolds>> {
    caller.require(Scope::Read, Permission::ApproveI9s)?;
    let visibility = caller.visibility(&state).await?;
    let (groups, client) = visibility.as_params();
    let rows = sqlx::query!(
        r#"SELECT h.id, h.employee_id, h.legal_entity_id, h.reason, h.set_by, h.set_at,
                  h.lifted_by, h.lifted_at,
                  e.location_id AS "location_id?", e.integration_client_id,
                  (SELECT count(*) FROM employees c
                   WHERE c.purged_at IS NULL
                     AND (c.id = h.employee_id OR c.legal_entity_id = h.legal_entity_id)
                     AND ($1::BIGINT[] IS NULL OR c.location_id = ANY($1))
                     AND ($2::BIGINT IS NULL OR c.integration_client_id = $2))
                    AS "employees_covered!"
           FROM legal_holds h LEFT JOIN employees e ON e.id = h.employee_id
           ORDER BY h.id DESC"#,
        groups.as_deref(),
        client,
    )
    .fetch_all(&state.pool)
    .await?;
    let entities = caller.has(Permission::ViewLegalEntities);
    let holds: Vec<LegalHold> = rows
        .into_iter()
        .filter(|r| match r.location_id {
            Some(location) => visibility.sees(location, r.integration_client_id),
            // On a legal entity: for those who see legal entities.
            None => entities,
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
        (status = 403, description = "Missing scope or permission 5; or a hold on a legal entity and the caller's visibility is limited to some groups (the hold covers every employee of it)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such hold, on an employee not in the caller's groups, or on a legal entity without permission 6", body = Problem, content_type = "application/problem+json"),
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
    let visibility = check_readable(&state, &caller, &hold).await?;
    if let Some(entity) = hold.legal_entity_id {
        check_entity_write(&state, &visibility, entity, "lift").await?;
    }
    let hold = retention::lift_hold(&mut tx, &caller.actor(), id).await?;
    let hold = LegalHold::load(&mut tx, &visibility, hold).await?;
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
        (status = 404, description = "No such hold, on an employee not in the caller's groups, or on a legal entity without permission 6", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<LegalHold>> {
    // As the list: permission 5, scope read; a hold on an employee the
    // caller does not see is not there, nor one on a legal entity without
    // permission 6.
    caller.require(Scope::Read, Permission::ApproveI9s)?;
    let id = id.get()?;
    let mut conn = state.pool.acquire().await?;
    let hold = retention::find_hold(&mut conn, id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let visibility = check_readable(&state, &caller, &hold).await?;
    Ok(Json(LegalHold::load(&mut conn, &visibility, hold).await?))
}

/// `404` unless the caller may read `hold`, as the list shows it: one on an
/// employee it sees, or one on a legal entity with permission 6 (read-only
/// for a caller limited to some groups: [`check_entity_write`]). The
/// caller's visibility.
async fn check_readable(state: &AppState, caller: &Caller, hold: &Hold) -> ApiResult<Visibility> {
    if let Some(employee) = hold.employee_id {
        employees::check_visible(state, caller, employee).await?;
    } else if !caller.has(Permission::ViewLegalEntities) {
        return Err(ApiError::NotFound);
    }
    caller.visibility(state).await
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

/// The 410 of a re-hire (`PATCH /v1/employees/{id}` with `rehire: "yes"`)
/// of a purged employee: [`gone`], and what to do instead (docs/retention.md,
/// "What the API answers").
pub fn gone_rehire(d: retention::Destruction) -> ApiError {
    match gone("employee", Some(d)) {
        ApiError::Gone(detail) => ApiError::Gone(format!(
            "{detail} Its records were destroyed, so it cannot be re-hired: hire the person as a \
             new employee (POST /v1/employees), with a new I-9."
        )),
        other => other,
    }
}
