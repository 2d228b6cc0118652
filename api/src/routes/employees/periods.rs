//! `GET /v1/employees/{id}/periods`: the employee's periods of employment,
//! oldest first, each with the ids of the I-9s made for it (docs/api.md,
//! "Periods of employment").

use axum::{
    extract::{RawQuery, State},
    response::Response,
};
use chrono::NaiveDate;
use i9_common::domain::{Permission, Scope};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::super::Id;
use crate::{
    auth::Caller,
    error::{ApiResult, Problem},
    list::{Format, ListQuery, ListResponse},
    state::AppState,
};

/// One period of employment.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmploymentPeriod {
    pub id: i64,
    pub start_date: Option<NaiveDate>,
    /// `null` while the period runs.
    pub terminated_date: Option<NaiveDate>,
    /// The I-9s made for this period, oldest first.
    pub i9_ids: Vec<i64>,
}

/// Paging of a collection without filters (an employee's periods, a
/// record's history).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
pub struct Paging {
    /// Page number, from 1.
    #[param(inline)]
    page: Option<crate::list::params::Positive>,
    /// Items per page: 1 to 50, default 50 (larger values are treated as 50); for a CSV export
    /// (`Accept: text/csv`) 1 to 10000, default 10000.
    #[param(inline)]
    page_size: Option<crate::list::params::Positive>,
}

#[utoipa::path(
    get, path = "/v1/employees/{id}/periods", operation_id = "listEmploymentPeriods", tag = "employees",
    params(("id" = i64, Path, description = "Employee id"), Paging),
    responses(
        (status = 200, description = "The employee's periods of employment, oldest first", content((ListResponse<EmploymentPeriod> = "application/json"), (String = "text/csv"))),
        (status = 406, description = "The Accept allows neither application/json nor text/csv", body = Problem, content_type = "application/problem+json"),
        (status = 400, description = "Unknown parameter or bad paging", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission 1", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such employee, or not in the caller's groups", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    format: Format,
    id: Id,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    caller.require(Scope::Read, Permission::ViewEmployees)?;
    let q = ListQuery::parse_as(raw.as_deref(), &[], format)?;
    let id = id.get()?;
    super::check_visible(&state, &caller, id).await?;
    let total = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM employment_periods WHERE employee_id = $1"#,
        id,
    )
    .fetch_one(&state.pool)
    .await?;
    let rows = sqlx::query_as!(
        EmploymentPeriod,
        r#"SELECT p.id, p.start_date, p.terminated_date,
                  ARRAY(SELECT i.id FROM i9s i WHERE i.employment_period_id = p.id ORDER BY i.id) AS "i9_ids!"
           FROM employment_periods p WHERE p.employee_id = $1
           ORDER BY p.id LIMIT $2 OFFSET $3"#,
        id,
        q.page_size,
        q.offset(),
    )
    .fetch_all(&state.pool)
    .await?;
    Ok(ListResponse {
        total,
        links: q.links(&format!("/v1/employees/{id}/periods"), total),
        search_result: rows,
    }
    .answer(format))
}

impl crate::list::CsvColumns for EmploymentPeriod {
    const COLUMNS: &'static [&'static str] = &["id", "startDate", "terminatedDate", "i9Ids"];
}
