//! `GET /v1/eins` and `GET /v1/eins/{id}`: legal entities.

use axum::{
    extract::{RawQuery, State},
    Json,
};
use chrono::NaiveDate;
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

pub const FILTERS: &[FilterSpec] = &[
    filter("entityName", K::Text("entity_name")),
    filter("everifyId", K::Text("everify_id")),
    filter("ein", K::Text("ein")),
];

/// Filters of `GET /v1/eins` (exact match, case-insensitive).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
pub struct EinFilters {
    #[param(inline)]
    entityName: Option<crate::list::params::Text>,
    /// Numeric verification-program account id.
    #[param(inline)]
    everifyId: Option<crate::list::params::Text>,
    /// Employer identification number, `##-#######`.
    #[param(inline)]
    ein: Option<crate::list::params::Text>,
    #[param(inline)]
    page: Option<crate::list::params::Positive>,
    #[param(inline)]
    page_size: Option<crate::list::params::Positive>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegalEntity {
    pub id: i64,
    pub entity_name: String,
    /// May be empty.
    pub ein: String,
    pub everify_id: Option<String>,
    pub everify_effective_date: Option<NaiveDate>,
    /// e.g. `Not Ready`, `Active`.
    pub everify_status: String,
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

/// A `legal_entities` row, as both routes read it (the list through its
/// dynamic filters, [`COLUMNS`]).
#[derive(Debug, FromRow)]
struct LegalEntityRow {
    id: i64,
    entity_name: String,
    ein: String,
    everify_id: Option<String>,
    everify_effective_date: Option<NaiveDate>,
    everify_status: String,
    active: bool,
}

impl From<LegalEntityRow> for LegalEntity {
    fn from(row: LegalEntityRow) -> Self {
        Self {
            id: row.id,
            entity_name: row.entity_name,
            ein: row.ein,
            everify_id: row.everify_id,
            everify_effective_date: row.everify_effective_date,
            everify_status: row.everify_status,
            active: row.active,
            links: None,
        }
    }
}

const COLUMNS: &str =
    "id, entity_name, ein, everify_id, everify_effective_date, everify_status, active";

#[utoipa::path(
    get, path = "/v1/eins", operation_id = "listLegalEntities", tag = "legal entities", params(EinFilters),
    responses(
        (status = 200, content((ListResponse<LegalEntity> = "application/json"), (String = "text/csv"))),
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
    caller.require(Scope::Read, Permission::ViewLegalEntities)?;
    let q = ListQuery::parse_as(raw.as_deref(), FILTERS, format)?;
    let (rows, total) = q
        .fetch_page::<LegalEntityRow>(
            &state.pool,
            &state.cipher,
            PageSql {
                from: "FROM legal_entities WHERE TRUE",
                count_from: None,
                columns: COLUMNS,
                order: "ORDER BY id",
                restrict: None,
            },
            &no_computed,
        )
        .await?;
    Ok(ListResponse {
        links: q.links("/v1/eins", total),
        search_result: rows.into_iter().map(LegalEntity::from).collect(),
        total,
    }
    .answer(format))
}

#[utoipa::path(
    get, path = "/v1/eins/{id}", operation_id = "getLegalEntity", tag = "legal entities",
    params(("id" = i64, Path, description = "Legal entity id")),
    responses(
        (status = 200, body = LegalEntity),
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
) -> ApiResult<Json<LegalEntity>> {
    caller.require(Scope::Read, Permission::ViewLegalEntities)?;
    let id = id.get()?;
    let row = sqlx::query_as!(
        LegalEntityRow,
        "SELECT id, entity_name, ein, everify_id, everify_effective_date, everify_status, active
         FROM legal_entities WHERE id = $1",
        id,
    )
    .fetch_optional(&state.pool)
    .await?
    .ok_or(ApiError::NotFound)?;
    Ok(Json(LegalEntity {
        links: Some(vec![Link::new("self", format!("/v1/eins/{id}"))]),
        ..LegalEntity::from(row)
    }))
}

impl crate::list::CsvColumns for LegalEntity {
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "entityName",
        "ein",
        "everifyId",
        "everifyEffectiveDate",
        "everifyStatus",
        "active",
    ];
}
