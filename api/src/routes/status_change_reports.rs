//! `POST /v1/eins/{id}/everify/status-change-reports`: import E-Verify's
//! Status Change Report of a legal entity (docs/everify.md, "The Status
//! Change Report (2025)"). The body is the report as downloaded
//! (`text/csv`, at most 5 MB); the rules are in
//! `i9_common::models::status_change_report`, which `i9-admin everify
//! import-status-change-report` calls too. Permissions 5 (approve I-9s:
//! the compliance role) and 6 (view legal entities), and, since a report
//! covers every employee of the legal entity, a caller who sees every
//! employee (as a legal hold on a legal entity: docs/retention.md).

use axum::{
    body::Bytes,
    extract::State,
    http::{header::CONTENT_TYPE, HeaderMap},
    Json,
};
use i9_common::{
    domain::{Permission, Scope},
    models::status_change_report::{self as model, Imported},
};

use super::Id;
use crate::{
    auth::Caller,
    error::{ApiError, ApiResult, Problem},
    state::AppState,
};

/// The body limit of this route: the model's.
pub const BODY_LIMIT: usize = model::MAX_BYTES;

/// Whether the request says it sends CSV (`text/csv`, parameters allowed).
fn is_csv(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/csv"))
}

#[utoipa::path(
    post, path = "/v1/eins/{id}/everify/status-change-reports",
    operation_id = "importStatusChangeReport", tag = "legal entities",
    params(("id" = i64, Path, description = "Legal entity id")),
    request_body(content = String, content_type = "text/csv",
        description = "E-Verify's Status Change Report as downloaded (CSV with a header row; at most 5 MB). Columns by header, ignoring case, spaces and punctuation: the case number and the revoked document number are required, the revocation date optional; the report's other columns (names, A-Number, case dates) are known and not read (docs/everify.md)."),
    responses(
        (status = 200, description = "The file was read: each row's outcome and the counts. Rows already applied by an earlier import are counted `alreadyApplied` and do nothing again", body = Imported),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission 5 or 6; or the caller's visibility is limited to some groups (a report covers every employee of the legal entity)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such legal entity", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The legal entity is not enrolled in E-Verify in good standing (active, an everifyId, its everifyEffectiveDate reached, everifyStatus Active): `detail` says which; nothing is recorded", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is larger than 5 MB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not sent as `text/csv`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The file cannot be read: empty (`empty`), a header row without rows (`no_rows`), a header not known or a required one missing (the headers found and those expected named), or a row's value, a revocation date after today included (named `row N`, N the line of the file the row starts on, blank lines counted; never by value); nothing is written", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn import(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Imported>> {
    caller.require(Scope::Write, Permission::ApproveI9s)?;
    caller.require(Scope::Write, Permission::ViewLegalEntities)?;
    let id = id.get()?;
    let visibility = caller.visibility(&state).await?;
    if !visibility.sees_all() {
        let exists = sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM legal_entities WHERE id = $1) AS "exists!""#,
            id,
        )
        .fetch_one(&state.pool)
        .await?;
        if !exists {
            return Err(ApiError::NotFound);
        }
        return Err(ApiError::Forbidden(
            "A Status Change Report covers every employee of the legal entity, in every group; \
             your visibility is limited to some groups. It needs permission 11 (see employees \
             of every group)."
                .into(),
        ));
    }
    if !is_csv(&headers) {
        return Err(ApiError::UnsupportedMediaTypeOf("text/csv"));
    }
    let mut tx = state.pool.begin().await?;
    let imported = model::import(
        &mut tx,
        &caller.actor(),
        id,
        &body,
        state.config.today(),
        state.config.everify_revocation_due_business_days,
        &state.config.public_base_url,
    )
    .await?;
    tx.commit().await?;
    Ok(Json(imported))
}
