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
use crate::list::Format;
use crate::{
    auth::{Caller, Visibility},
    error::{ApiError, ApiResult, Problem},
    list::{filter, FilterKind as K, FilterSpec, Link, ListQuery, ListResponse, Restrict},
    state::AppState,
};
use axum::response::Response;

pub const FILTERS: &[FilterSpec] = &[
    filter("name", K::Text("g.name")),
    filter("parentId", K::Int("g.parent_id")),
    filter("managed", K::Computed),
];
pub const USER_FILTERS: &[FilterSpec] = &[];

/// Filters of `GET /v1/groups`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code, non_snake_case)]
pub struct GroupFilters {
    /// Exact name, case-insensitive.
    #[param(inline)]
    name: Option<crate::list::params::Text>,
    /// The groups directly below this group (a group record's `children` link).
    #[param(inline)]
    parentId: Option<crate::list::params::Int>,
    /// `true`: groups whose employees the caller can see.
    managed: Option<bool>,
    #[param(inline)]
    page: Option<crate::list::params::Positive>,
    #[param(inline)]
    page_size: Option<crate::list::params::Positive>,
}

/// Paging of `GET /v1/groups/{id}/users`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct Paging {
    #[param(inline)]
    page: Option<crate::list::params::Positive>,
    #[param(inline)]
    page_size: Option<crate::list::params::Positive>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GroupSummary {
    pub id: i64,
    pub name: String,
    /// Whether the caller can see this group's employees.
    pub managed: bool,
}

/// A `groups` row and whether the caller sees its employees, as the list
/// reads it (through its dynamic filters).
#[derive(Debug, FromRow)]
struct GroupSummaryRow {
    id: i64,
    name: String,
    managed: bool,
}

impl From<GroupSummaryRow> for GroupSummary {
    fn from(row: GroupSummaryRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            managed: row.managed,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupRecord {
    pub id: i64,
    pub name: String,
    /// The group directly above it; `null` for the top of the organization.
    pub parent_id: Option<i64>,
    /// Number of direct children.
    pub num_child: i64,
    /// `self`, `users`, `children` (`/v1/groups?parentId={id}`) and, below the top, `parent`.
    pub links: Vec<Link>,
}

/// A `groups` row, with its number of direct children.
struct GroupRow {
    id: i64,
    name: String,
    parent_id: Option<i64>,
    num_child: i64,
}

impl From<GroupRow> for GroupRecord {
    fn from(row: GroupRow) -> Self {
        let id = row.id;
        let mut links = vec![
            Link::new("self", format!("/v1/groups/{id}")),
            Link::new("users", format!("/v1/groups/{id}/users")),
            Link::new("children", format!("/v1/groups?parentId={id}")),
        ];
        if let Some(parent) = row.parent_id {
            links.push(Link::new("parent", format!("/v1/groups/{parent}")));
        }
        Self {
            id,
            name: row.name,
            parent_id: row.parent_id,
            num_child: row.num_child,
            links,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupUser {
    pub id: i64,
    pub first_name: String,
    pub last_name: String,
    pub full_name: String,
    pub title: Option<String>,
    pub email_address: Option<String>,
    pub retired: bool,
    pub groups: Vec<NamedRef>,
}

/// A member of a group, with the user's groups (JSON), as the member list
/// reads it (its visibility condition is composed at run time).
#[derive(Debug, FromRow)]
struct GroupUserRow {
    id: i64,
    first_name: String,
    last_name: String,
    full_name: String,
    title: Option<String>,
    email_address: Option<String>,
    retired: bool,
    #[sqlx(json)]
    groups: Vec<NamedRef>,
}

impl From<GroupUserRow> for GroupUser {
    fn from(row: GroupUserRow) -> Self {
        Self {
            id: row.id,
            first_name: row.first_name,
            last_name: row.last_name,
            full_name: row.full_name,
            title: row.title,
            email_address: row.email_address,
            retired: row.retired,
            groups: row.groups,
        }
    }
}

fn push_managed(qb: &mut QueryBuilder<'_, sqlx::Postgres>, visibility: &Visibility) {
    visibility.push_group_condition(qb, "g.id");
}

#[utoipa::path(
    get, path = "/v1/groups", operation_id = "listGroups", tag = "groups", params(GroupFilters),
    responses(
        (status = 200, content((ListResponse<GroupSummary> = "application/json"), (String = "text/csv"))),
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
    caller.require(Scope::Read, Permission::ViewGroups)?;
    let q = ListQuery::parse_as(raw.as_deref(), FILTERS, format)?;
    let visibility = caller.visibility(&state).await?;
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
    let rows = select
        .build_query_as::<GroupSummaryRow>()
        .fetch_all(&state.pool)
        .await?;
    Ok(ListResponse {
        links: q.links("/v1/groups", total),
        search_result: rows.into_iter().map(GroupSummary::from).collect(),
        total,
    }
    .answer(format))
}

#[utoipa::path(
    get, path = "/v1/groups/{id}", operation_id = "getGroup", tag = "groups",
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
    let row = sqlx::query_as!(
        GroupRow,
        r#"SELECT g.id, g.name, g.parent_id,
                (SELECT count(*) FROM groups c WHERE c.parent_id = g.id) AS "num_child!"
         FROM groups g WHERE g.id = $1"#,
        id,
    )
    .fetch_optional(&state.pool)
    .await?
    .ok_or(ApiError::NotFound)?;
    Ok(Json(GroupRecord::from(row)))
}

#[utoipa::path(
    get, path = "/v1/groups/{id}/users", operation_id = "listGroupUsers", tag = "groups",
    params(("id" = i64, Path, description = "Group id"), Paging),
    responses(
        (status = 200, description = "Users assigned to the group, ordered by fullName", content((ListResponse<GroupUser> = "application/json"), (String = "text/csv"))),
        (status = 406, description = "The Accept allows neither application/json nor text/csv", body = Problem, content_type = "application/problem+json"),
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
    format: Format,
    id: Id,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    caller.require(Scope::Read, Permission::ViewGroups)?;
    let id = id.get()?;
    let q = ListQuery::parse_as(raw.as_deref(), USER_FILTERS, format)?;
    let exists = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM groups WHERE id = $1) AS "exists!""#,
        id,
    )
    .fetch_one(&state.pool)
    .await?;
    if !exists {
        return Err(ApiError::NotFound);
    }
    // An employee's own sign-in is listed only to a caller who sees the employee.
    let visibility = caller.visibility(&state).await?;
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
    let rows = select
        .build_query_as::<GroupUserRow>()
        .fetch_all(&state.pool)
        .await?;
    Ok(ListResponse {
        links: q.links(&format!("/v1/groups/{id}/users"), total),
        search_result: rows.into_iter().map(GroupUser::from).collect(),
        total,
    }
    .answer(format))
}

impl crate::list::CsvColumns for GroupSummary {
    const COLUMNS: &'static [&'static str] = &["id", "name", "managed"];
}

impl crate::list::CsvColumns for GroupUser {
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "firstName",
        "lastName",
        "fullName",
        "title",
        "emailAddress",
        "retired",
        "groups",
    ];
}
