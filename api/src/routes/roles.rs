//! `GET /v1/roles` and `GET /v1/roles/{role_id}`.

use axum::{
    extract::{RawQuery, State},
    Json,
};
use i9_common::domain::{Permission, Scope};
use serde::Serialize;
use sqlx::FromRow;
use utoipa::{IntoParams, ToSchema};

use super::Id;
use crate::{
    auth::Caller,
    error::{ApiError, ApiResult, Problem},
    list::{
        filter, no_computed, FilterKind as K, FilterSpec, Link, ListQuery, ListResponse, PageSql,
    },
    state::AppState,
};

pub const FILTERS: &[FilterSpec] = &[filter("name", K::Text("name"))];

/// Filters of `GET /v1/roles` (exact match, case-insensitive).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct RoleFilters {
    /// The role's unique name.
    name: Option<String>,
    page: Option<i64>,
    page_size: Option<i64>,
}

#[derive(Debug, FromRow, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleSummary {
    pub id: i64,
    pub name: String,
    pub description: String,
}

#[derive(Debug, FromRow, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleRecord {
    pub id: i64,
    pub name: String,
    pub description: String,
    /// Permission ids (1 to 12, see the API guide).
    pub permissions: Vec<i16>,
    #[sqlx(skip)]
    pub links: Vec<Link>,
}

#[utoipa::path(
    get, path = "/v1/roles", tag = "roles", params(RoleFilters),
    responses(
        (status = 200, body = ListResponse<RoleSummary>),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<ListResponse<RoleSummary>>> {
    caller.require(Scope::Read, Permission::ViewRoles)?;
    let q = ListQuery::parse(raw.as_deref(), FILTERS)?;
    let (rows, total) = q
        .fetch_page(
            &state.pool,
            &state.cipher,
            PageSql {
                from: "FROM roles WHERE TRUE",
                count_from: None,
                columns: "id, name, description",
                order: "ORDER BY id",
                restrict: None,
            },
            &no_computed,
        )
        .await?;
    Ok(Json(ListResponse {
        links: q.links("/v1/roles", total),
        search_result: rows,
    }))
}

#[utoipa::path(
    get, path = "/v1/roles/{role_id}", tag = "roles",
    params(("role_id" = i64, Path, description = "Role id")),
    responses(
        (status = 200, body = RoleRecord),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<RoleRecord>> {
    caller.require(Scope::Read, Permission::ViewRoles)?;
    let id = id.get()?;
    let mut role: RoleRecord = sqlx::query_as(
        "SELECT id, name, description,
                ARRAY(SELECT permission_id FROM role_permissions WHERE role_id = r.id ORDER BY permission_id) AS permissions
         FROM roles r WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(&state.pool)
    .await?
    .ok_or(ApiError::NotFound)?;
    role.links = vec![Link::new("self", format!("/v1/roles/{id}"))];
    Ok(Json(role))
}
