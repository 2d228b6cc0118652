//! `GET /v1/groups`, `GET /v1/groups/{id}` and `GET /v1/groups/{id}/users`.

use axum::{
    extract::{RawQuery, State},
    Json,
};
use i9_common::domain::{Permission, Scope};
use serde::Serialize;
use sqlx::{FromRow, QueryBuilder};
use utoipa::{IntoParams, ToSchema};

use super::{
    users::{NamedRef, GROUPS_OF_USER, ORDER},
    Id,
};
use crate::{
    auth::{Caller, Visibility},
    error::{ApiError, ApiResult, Problem},
    list::{filter, FilterKind as K, FilterSpec, Link, ListQuery, ListResponse, Restrict},
    state::AppState,
};

pub const FILTERS: &[FilterSpec] = &[
    filter("name", K::Text("g.name")),
    filter("managed", K::Computed),
];
pub const USER_FILTERS: &[FilterSpec] = &[];

/// Filters of `GET /v1/groups`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct GroupFilters {
    /// Exact name, case-insensitive.
    name: Option<String>,
    /// `true`: groups whose employees the caller can see.
    managed: Option<bool>,
    page: Option<i64>,
    page_size: Option<i64>,
}

/// Paging of `GET /v1/groups/{id}/users`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct Paging {
    page: Option<i64>,
    page_size: Option<i64>,
}

#[derive(Debug, FromRow, Serialize, ToSchema)]
pub struct GroupSummary {
    pub id: i64,
    pub name: String,
    /// Whether the caller can see this group's employees.
    pub managed: bool,
}

#[derive(Debug, FromRow, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupRecord {
    pub id: i64,
    pub name: String,
    /// Number of direct children.
    pub num_child: i64,
    /// `self` and `users`.
    #[sqlx(skip)]
    pub links: Vec<Link>,
}

#[derive(Debug, FromRow, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupUser {
    pub id: i64,
    pub first_name: String,
    pub last_name: String,
    pub full_name: String,
    pub title: Option<String>,
    pub email_address: Option<String>,
    pub retired: bool,
    #[sqlx(json)]
    pub groups: Vec<NamedRef>,
}

fn push_managed(qb: &mut QueryBuilder<'_, sqlx::Postgres>, visibility: &Visibility) {
    visibility.push_group_condition(qb, "g.id");
}

#[utoipa::path(
    get, path = "/v1/groups", tag = "groups", params(GroupFilters),
    responses(
        (status = 200, body = ListResponse<GroupSummary>),
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
) -> ApiResult<Json<ListResponse<GroupSummary>>> {
    caller.require(Scope::Read, Permission::ViewGroups)?;
    let q = ListQuery::parse(raw.as_deref(), FILTERS)?;
    let visibility = caller.visibility(&state.pool).await?;
    let hash = |s: &_| state.cipher.ssn_search_hashes(s);
    let managed = |_: &str, want: bool, qb: &mut QueryBuilder<'_, sqlx::Postgres>| {
        qb.push(" AND (");
        push_managed(qb, &visibility);
        qb.push(") = ").push_bind(want);
    };
    let mut count = QueryBuilder::new("SELECT count(*) FROM groups g WHERE TRUE");
    q.push_filters(&mut count, &hash, &managed);
    let total: i64 = count.build_query_scalar().fetch_one(&state.pool).await?;
    let mut select = QueryBuilder::new("SELECT g.id, g.name, ");
    push_managed(&mut select, &visibility);
    select.push(" AS managed FROM groups g WHERE TRUE");
    q.push_filters(&mut select, &hash, &managed);
    select
        .push(" ORDER BY g.id LIMIT ")
        .push_bind(q.page_size)
        .push(" OFFSET ")
        .push_bind(q.offset());
    let rows = select.build_query_as().fetch_all(&state.pool).await?;
    Ok(Json(ListResponse {
        links: q.links("/v1/groups", total),
        search_result: rows,
    }))
}

#[utoipa::path(
    get, path = "/v1/groups/{id}", tag = "groups",
    params(("id" = i64, Path, description = "Group id")),
    responses(
        (status = 200, body = GroupRecord),
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
) -> ApiResult<Json<GroupRecord>> {
    caller.require(Scope::Read, Permission::ViewGroups)?;
    let id = id.get()?;
    let mut group: GroupRecord = sqlx::query_as(
        "SELECT g.id, g.name, (SELECT count(*) FROM groups c WHERE c.parent_id = g.id) AS num_child
         FROM groups g WHERE g.id = $1",
    )
    .bind(id)
    .fetch_optional(&state.pool)
    .await?
    .ok_or(ApiError::NotFound)?;
    group.links = vec![
        Link::new("self", format!("/v1/groups/{id}")),
        Link::new("users", format!("/v1/groups/{id}/users")),
    ];
    Ok(Json(group))
}

#[utoipa::path(
    get, path = "/v1/groups/{id}/users", tag = "groups",
    params(("id" = i64, Path, description = "Group id"), Paging),
    responses(
        (status = 200, description = "Users assigned to the group, ordered by fullName", body = ListResponse<GroupUser>),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn users(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<ListResponse<GroupUser>>> {
    caller.require(Scope::Read, Permission::ViewGroups)?;
    let id = id.get()?;
    let q = ListQuery::parse(raw.as_deref(), USER_FILTERS)?;
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM groups WHERE id = $1)")
        .bind(id)
        .fetch_one(&state.pool)
        .await?;
    if !exists {
        return Err(ApiError::NotFound);
    }
    // An employee's own sign-in is listed only to a caller who sees the employee.
    let visibility = caller.visibility(&state.pool).await?;
    let members = |select: &str| {
        let mut qb = QueryBuilder::new(format!(
            "SELECT {select} FROM users u JOIN user_groups m ON m.user_id = u.id
             LEFT JOIN employees e ON e.id = u.employee_id WHERE m.group_id = "
        ));
        qb.push_bind(id);
        Restrict::EmployeeIfAny(&visibility, "e").push(&mut qb);
        qb
    };
    let total: i64 = members("count(*)")
        .build_query_scalar()
        .fetch_one(&state.pool)
        .await?;
    let mut select = members(&format!(
        "u.id, u.first_name, u.last_name, u.last_name || ', ' || u.first_name AS full_name,
         u.title, u.email_address, u.retired, {GROUPS_OF_USER}"
    ));
    select
        .push(format_args!("{ORDER} LIMIT "))
        .push_bind(q.page_size)
        .push(" OFFSET ")
        .push_bind(q.offset());
    let rows = select.build_query_as().fetch_all(&state.pool).await?;
    Ok(Json(ListResponse {
        links: q.links(&format!("/v1/groups/{id}/users"), total),
        search_result: rows,
    }))
}
