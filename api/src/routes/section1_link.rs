//! `POST /v1/i9s/{id}/section1-link`: a new Section 1 link for an I-9 whose
//! employee lost theirs (docs/api.md, "A new Section 1 link"). Permission 4,
//! as the other steps an HR user takes on an I-9; `Section 1 Incomplete`
//! only (409 otherwise). The old link stops working at once; the new one is
//! shown only in this answer (and emailed to the employee when it has an
//! address). Each call issues a new link: a retried call only replaces the
//! link once more, so no `Idempotency-Key` is read.

use axum::{extract::State, Json};
use i9_common::{
    domain::{Permission, Scope},
    models::i9_request,
};
use serde::Serialize;
use utoipa::ToSchema;

use super::{i9s, Id};
use crate::{
    auth::Caller,
    error::{ApiResult, Problem},
    state::AppState,
};

/// The new link.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Section1Link {
    /// The I-9's id.
    pub id: i64,
    /// `{PUBLIC_BASE_URL}/i9/section1/<token>`: the employee's new Section 1
    /// link, shown only here. Earlier links of the I-9 no longer work.
    #[serde(rename = "i9Section1Link")]
    pub i9_section1_link: String,
    /// Whether the link is being emailed to the employee's `emailAddress`
    /// (the remote-hire email); `false` when the employee has none.
    pub emailed: bool,
}

#[utoipa::path(
    post, path = "/v1/i9s/{id}/section1-link", operation_id = "reissueSection1Link", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    responses(
        (status = 200, description = "A new Section 1 link; the old one no longer works", body = Section1Link),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission 4; a partner client's token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such I-9, or its employee is not in the caller's groups", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The I-9 is not Section 1 Incomplete", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn reissue(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
) -> ApiResult<Json<Section1Link>> {
    caller.require(Scope::Write, Permission::WorkOnI9s)?;
    let id = id.get()?;
    i9s::check_visible(&state, &caller, id).await?;
    let mut tx = state.pool.begin().await?;
    let issued = i9_request::reissue(
        &mut tx,
        &state.cipher,
        &caller.actor(),
        id,
        &state.config.public_base_url,
        state.config.section1_link_ttl,
    )
    .await?;
    tx.commit().await?;
    Ok(Json(Section1Link {
        id,
        i9_section1_link: issued.link,
        emailed: issued.emailed,
    }))
}
