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
use crate::list::Format;
use crate::{
    auth::Caller,
    error::{ApiError, ApiResult, Problem},
    list::{
        filter, no_computed, FilterKind as K, FilterSpec, Link, ListQuery, ListResponse, PageSql,
    },
    state::AppState,
};
use axum::response::Response;

pub const FILTERS: &[FilterSpec] = &[filter("name", K::Text("name"))];

/// Filters of `GET /v1/roles` (exact match, case-insensitive).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct RoleFilters {
    /// The role's unique name.
    #[param(inline)]
    name: Option<crate::list::params::Text>,
    #[param(inline)]
    page: Option<crate::list::params::Positive>,
    #[param(inline)]
    page_size: Option<crate::list::params::Positive>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleSummary {
    pub id: i64,
    pub name: String,
    pub description: String,
}

/// A `roles` row, as the list reads it (through its dynamic filters).
#[derive(Debug, FromRow)]
struct RoleSummaryRow {
    id: i64,
    name: String,
    description: String,
}

impl From<RoleSummaryRow> for RoleSummary {
    fn from(row: RoleSummaryRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            description: row.description,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleRecord {
    pub id: i64,
    pub name: String,
    pub description: String,
    /// Permission ids (1 to 12, see the API guide).
    pub permissions: Vec<i16>,
    pub links: Vec<Link>,
}

/// A `roles` row, with its permission ids in order.
struct RoleRow {
    id: i64,
    name: String,
    description: String,
    permissions: Vec<i16>,
}

impl From<RoleRow> for RoleRecord {
    fn from(row: RoleRow) -> Self {
        let id = row.id;
        Self {
            id,
            name: row.name,
            description: row.description,
            permissions: row.permissions,
            links: vec![Link::new("self", format!("/v1/roles/{id}"))],
        }
    }
}

#[utoipa::path(
    get, path = "/v1/roles", operation_id = "listRoles", tag = "roles", params(RoleFilters),
    responses(
        (status = 200, content((ListResponse<RoleSummary> = "application/json"), (String = "text/csv"))),
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
    caller.require(Scope::Read, Permission::ViewRoles)?;
    let q = ListQuery::parse_as(raw.as_deref(), FILTERS, format)?;
    let (rows, total) = q
        .fetch_page::<RoleSummaryRow>(
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
    Ok(ListResponse {
        links: q.links("/v1/roles", total),
        search_result: rows.into_iter().map(RoleSummary::from).collect(),
        total,
    }
    .answer(format))
}

#[utoipa::path(
    get, path = "/v1/roles/{role_id}", operation_id = "getRole", tag = "roles",
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
    let row = sqlx::query_as!(
        RoleRow,
        r#"SELECT id, name, description,
                ARRAY(SELECT permission_id FROM role_permissions WHERE role_id = r.id ORDER BY permission_id)
                  AS "permissions!"
         FROM roles r WHERE id = $1"#,
        id,
    )
    .fetch_optional(&state.pool)
    .await?
    .ok_or(ApiError::NotFound)?;
    Ok(Json(RoleRecord::from(row)))
}

impl crate::list::CsvColumns for RoleSummary {
    const COLUMNS: &'static [&'static str] = &["id", "name", "description"];
}
