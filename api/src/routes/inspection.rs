//! `GET /v1/i9s/{id}/pdf`: one I-9 as a PDF for an inspection
//! (docs/inspection.md): every section, Supplements A and B, its E-Verify
//! cases and, for a reader with permission 12, the audit trail of the
//! record. Read as `GET /v1/i9s/{id}` is (permission 3, the caller's
//! groups, 404 before 410); the SSN is masked in the PDF whoever asks, so
//! nothing is decrypted and no `ssn.read` is written; the export itself is
//! audited (`i9.pdf_exported`).

use axum::{
    extract::State,
    http::header,
    response::{IntoResponse, Response},
};
use chrono::Utc;
use i9_common::{
    domain::{Permission, Scope},
    inspection::{self, Gather},
    models::audit::{self, Entry},
};
use serde_json::json;
use utoipa::ToSchema;

use super::{i9s, Id};
use crate::{
    auth::Caller,
    error::{ApiError, ApiResult, Problem},
    state::AppState,
};

/// A PDF document (`application/pdf`).
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct PdfDocument(#[allow(dead_code)] Vec<u8>);

#[utoipa::path(
    get, path = "/v1/i9s/{id}/pdf", operation_id = "getI9Pdf", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id")),
    responses(
        (status = 200, description = "The I-9 as a PDF for an inspection (docs/inspection.md): every section, Supplements A and B, the E-Verify cases and, with permission 12, the audit trail; the SSN masked to its last four digits",
         body = PdfDocument, content_type = "application/pdf",
         headers(("Content-Disposition" = String, description = "`attachment; filename=i9-{id}.pdf`"))),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such I-9, or its employee is not in the caller's groups", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "Purged at the end of its retention period (docs/retention.md)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn pdf(State(state): State<AppState>, caller: Caller, id: Id) -> ApiResult<Response> {
    caller.require(Scope::Read, Permission::ViewI9s)?;
    let id = id.get()?;
    i9s::check_visible(&state, &caller, id).await?;
    // The audit trail says who read full SSNs: for the readers the history
    // is for (api/src/routes/history.rs).
    let audit_trail = caller.has(Permission::FullSsn);
    let mut conn = state.pool.acquire().await?;
    let record = inspection::gather(
        &mut conn,
        id,
        Gather {
            generated_at: Utc::now(),
            audit_trail,
        },
    )
    .await?
    // Purged between the check and the read.
    .ok_or(ApiError::NotFound)?;
    drop(conn);
    let (bytes, pages) = tokio::task::spawn_blocking(move || inspection::render_counted(&record))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    audit::record(
        &state.pool,
        &caller.actor(),
        Entry::new("i9.pdf_exported", "i9", id)
            .detail(json!({ "pages": pages, "auditTrail": audit_trail })),
    )
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/pdf".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=i9-{id}.pdf"),
            ),
        ],
        bytes,
    )
        .into_response())
}
