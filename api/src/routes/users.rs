//! `GET /v1/users` and `GET /v1/users/{user_id}`.
//!
//! An employee's own sign-in (`createLogin`; `users.employee_id` set) is part
//! of that employee's record: only a caller who sees the employee lists or
//! reads it (docs/api.md, "Users"). Other users are visible to anyone with
//! permission 8.

use axum::{
    extract::{RawQuery, State},
    Json,
};
use i9_common::domain::{Permission, Scope};
use serde::{Deserialize, Serialize};
use sqlx::FromRow;
use utoipa::{IntoParams, ToSchema};

use super::Id;
use crate::list::Format;
use crate::{
    auth::Caller,
    error::{ApiError, ApiResult, Problem},
    list::{
        filter, no_computed, FilterKind as K, FilterSpec, Link, ListQuery, ListResponse, PageSql,
        Restrict,
    },
    state::AppState,
};
use axum::response::Response;

pub const FILTERS: &[FilterSpec] = &[
    filter("emailAddress", K::Text("u.email_address")),
    filter("firstName", K::Text("u.first_name")),
    filter("lastName", K::Text("u.last_name")),
    filter("login", K::Text("u.login")),
    filter("middleName", K::Text("u.middle_name")),
    filter("title", K::Text("u.title")),
];

/// Filters of `GET /v1/users` (exact match, case-insensitive).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
pub struct UserFilters {
    #[param(inline)]
    emailAddress: Option<crate::list::params::Text>,
    #[param(inline)]
    firstName: Option<crate::list::params::Text>,
    #[param(inline)]
    lastName: Option<crate::list::params::Text>,
    #[param(inline)]
    login: Option<crate::list::params::Text>,
    #[param(inline)]
    middleName: Option<crate::list::params::Text>,
    #[param(inline)]
    title: Option<crate::list::params::Text>,
    #[param(inline)]
    page: Option<crate::list::params::Positive>,
    #[param(inline)]
    page_size: Option<crate::list::params::Positive>,
}

/// `{id, name}` of a role or group.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NamedRef {
    pub id: i64,
    pub name: String,
}

/// Users ordered by `fullName`, then id (docs/api.md, "Lists").
pub const ORDER: &str = " ORDER BY lower(u.last_name || ', ' || u.first_name), u.id";

pub const GROUPS_OF_USER: &str = "COALESCE((
        SELECT json_agg(json_build_object('id', g.id, 'name', g.name) ORDER BY g.id)
        FROM user_groups ug JOIN groups g ON g.id = ug.group_id WHERE ug.user_id = u.id
    ), '[]'::json) AS groups";

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserSummary {
    pub id: i64,
    pub first_name: String,
    pub last_name: String,
    /// `<lastName>, <firstName>`.
    pub full_name: String,
    pub title: Option<String>,
    pub email_address: Option<String>,
    pub retired: bool,
    pub role: NamedRef,
    pub groups: Vec<NamedRef>,
    pub profile_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserRecord {
    pub id: i64,
    pub login: String,
    pub first_name: String,
    pub middle_name: Option<String>,
    pub last_name: String,
    pub full_name: String,
    pub title: Option<String>,
    pub email_address: Option<String>,
    pub retired: bool,
    pub role: NamedRef,
    pub groups: Vec<NamedRef>,
    pub profile_id: Option<String>,
    pub saml_id: Option<String>,
    pub oauth_id: Option<String>,
    pub work_number: Option<String>,
    pub work_extension: Option<String>,
    pub home_number: Option<String>,
    pub home_extension: Option<String>,
    pub cell_number: Option<String>,
    pub cell_extension: Option<String>,
    pub links: Vec<Link>,
}

/// A `users` row with its full name, role and groups (JSON), as both routes
/// read it: the list through its dynamic filters, the single user under the
/// caller's visibility condition (composed at run time, `auth::Visibility`).
#[derive(Debug, FromRow)]
struct UserRow {
    id: i64,
    login: String,
    first_name: String,
    middle_name: Option<String>,
    last_name: String,
    full_name: String,
    title: Option<String>,
    email_address: Option<String>,
    retired: bool,
    #[sqlx(json)]
    role: NamedRef,
    #[sqlx(json)]
    groups: Vec<NamedRef>,
    profile_id: Option<String>,
    saml_id: Option<String>,
    oauth_id: Option<String>,
    work_number: Option<String>,
    work_extension: Option<String>,
    home_number: Option<String>,
    home_extension: Option<String>,
    cell_number: Option<String>,
    cell_extension: Option<String>,
}

impl From<UserRow> for UserSummary {
    fn from(row: UserRow) -> Self {
        Self {
            id: row.id,
            first_name: row.first_name,
            last_name: row.last_name,
            full_name: row.full_name,
            title: row.title,
            email_address: row.email_address,
            retired: row.retired,
            role: row.role,
            groups: row.groups,
            profile_id: row.profile_id,
        }
    }
}

impl From<UserRow> for UserRecord {
    fn from(row: UserRow) -> Self {
        let id = row.id;
        Self {
            id,
            login: row.login,
            first_name: row.first_name,
            middle_name: row.middle_name,
            last_name: row.last_name,
            full_name: row.full_name,
            title: row.title,
            email_address: row.email_address,
            retired: row.retired,
            role: row.role,
            groups: row.groups,
            profile_id: row.profile_id,
            saml_id: row.saml_id,
            oauth_id: row.oauth_id,
            work_number: row.work_number,
            work_extension: row.work_extension,
            home_number: row.home_number,
            home_extension: row.home_extension,
            cell_number: row.cell_number,
            cell_extension: row.cell_extension,
            links: vec![Link::new("self", format!("/v1/users/{id}"))],
        }
    }
}

const USERS_FROM: &str = "FROM users u JOIN roles r ON r.id = u.role_id
     LEFT JOIN employees e ON e.id = u.employee_id WHERE TRUE";

fn user_columns() -> String {
    format!(
        "u.*, u.last_name || ', ' || u.first_name AS full_name,
         json_build_object('id', r.id, 'name', r.name) AS role, {GROUPS_OF_USER}"
    )
}

fn select_users() -> String {
    format!("SELECT {} {USERS_FROM}", user_columns())
}

#[utoipa::path(
    get, path = "/v1/users", operation_id = "listUsers", tag = "users", params(UserFilters),
    responses(
        (status = 200, description = "Users ordered by fullName", content((ListResponse<UserSummary> = "application/json"), (String = "text/csv"))),
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
    caller.require(Scope::Read, Permission::ViewUsers)?;
    let q = ListQuery::parse_as(raw.as_deref(), FILTERS, format)?;
    let visibility = caller.visibility(&state).await?;
    let (rows, total) = q
        .fetch_page::<UserRow>(
            &state.pool,
            &state.cipher,
            PageSql {
                from: USERS_FROM,
                count_from: Some(
                    "FROM users u LEFT JOIN employees e ON e.id = u.employee_id WHERE TRUE",
                ),
                columns: &user_columns(),
                order: ORDER,
                restrict: Some(Restrict::EmployeeIfAny(&visibility, "e")),
            },
            &no_computed,
        )
        .await?;
    Ok(ListResponse {
        links: q.links("/v1/users", total),
        search_result: rows.into_iter().map(UserSummary::from).collect(),
        total,
    }
    .answer(format))
}

#[utoipa::path(
    get, path = "/v1/users/{user_id}", operation_id = "getUser", tag = "users",
    params(("user_id" = i64, Path, description = "User id")),
    responses(
        (status = 200, body = UserRecord),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such user, or the sign-in of an employee the caller cannot see", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<UserRecord>> {
    caller.require(Scope::Read, Permission::ViewUsers)?;
    let id = id.get()?;
    let visibility = caller.visibility(&state).await?;
    let mut q = sqlx::QueryBuilder::new(select_users());
    q.push(" AND u.id = ").push_bind(id);
    Restrict::EmployeeIfAny(&visibility, "e").push(&mut q);
    let row = q
        .build_query_as::<UserRow>()
        .fetch_optional(&state.pool)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Json(UserRecord::from(row)))
}

impl crate::list::CsvColumns for UserSummary {
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "firstName",
        "lastName",
        "fullName",
        "title",
        "emailAddress",
        "retired",
        "role",
        "groups",
        "profileId",
    ];
}
