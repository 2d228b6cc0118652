//! The one error type of the API. Every error leaves as RFC 9457 problem
//! details (`application/problem+json`); internal errors are logged with the
//! request id and answered as an opaque 500. An error that means "the
//! database is not available right now" ([`i9_common::db::is_unavailable`]),
//! whether it arrives as a `sqlx::Error` or inside an `anyhow::Error`, is a
//! 503 with `Retry-After` instead (docs/operations.md, "Start-up, outages and readiness").
//! A database error that only a client's value can cause (text Postgres
//! cannot store, a value too long for its column or its index) is a 400: the
//! backstop behind the checks of `text.rs`, `body.rs` and the parsers.

use axum::{
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use problem_details::ProblemDetails;
use serde::Serialize;
use utoipa::ToSchema;

pub use i9_common::models::FieldError;
use i9_common::models::WriteError;

/// The problem details body, as documented in the OpenAPI document.
#[derive(Serialize, ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    pub type_: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Present on validation errors (400 for queries, 422 for bodies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
    /// Present on `/problems/unresolved-verification` (409): the id of the
    /// E-Verify case not yet closed (`/v1/everify-cases/{caseId}`) that
    /// blocks a new I-9 (docs/api.md, "Errors").
    #[serde(rename = "caseId", skip_serializing_if = "Option::is_none")]
    pub case_id: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("bad request: {detail}")]
    BadRequest {
        detail: String,
        errors: Vec<FieldError>,
    },
    /// Missing, malformed, unknown, expired or revoked access token.
    #[error("unauthorized")]
    Unauthorized,
    #[error("insufficient scope: {0}")]
    InsufficientScope(&'static str),
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("not found")]
    NotFound,
    /// 410: the record existed and was purged at the end of its retention
    /// (docs/retention.md); the detail says when and under which rule.
    #[error("gone: {0}")]
    Gone(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("unsupported media type")]
    UnsupportedMediaType,
    /// A body in another media type than the one the route takes (named).
    #[error("unsupported media type: {0} expected")]
    UnsupportedMediaTypeOf(&'static str),
    /// The `Accept` allows no type the resource is answered in.
    #[error("not acceptable")]
    NotAcceptable,
    #[error("conflict: {0}")]
    Conflict(String),
    /// 409 `/problems/unresolved-verification`: the employee has an
    /// E-Verify case not yet closed, which blocks a new I-9 (docs/everify.md,
    /// "Unresolved verification records"); `caseId` names it.
    #[error("unresolved verification: case {case_id}")]
    UnresolvedVerification { case_id: i64, detail: String },
    #[error("validation failed")]
    Validation(Vec<FieldError>),
    #[error("database unavailable")]
    Unavailable,
    /// 429 with `Retry-After`: the caller must wait before trying again.
    #[error("too many requests: {detail}")]
    TooManyRequests {
        detail: String,
        retry_after: std::time::Duration,
    },
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<WriteError> for ApiError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Invalid(errors) => ApiError::Validation(errors),
            WriteError::Conflict(detail) => ApiError::Conflict(detail),
            WriteError::IllegalStep(step) => ApiError::Conflict(step.to_string()),
            WriteError::Forbidden(detail) => ApiError::Forbidden(detail),
            WriteError::NotFound => ApiError::NotFound,
            WriteError::Database(e) => e.into(),
            WriteError::Undecryptable(e) => ApiError::Internal(e.into()),
        }
    }
}

/// Why an employee cannot get a new I-9: an open I-9 is a plain 409, an
/// unresolved E-Verify case its own problem type with `caseId`.
impl From<i9_common::models::employee::I9Blocker> for ApiError {
    fn from(blocker: i9_common::models::employee::I9Blocker) -> Self {
        match blocker.case_id() {
            Some(case_id) => ApiError::UnresolvedVerification {
                case_id,
                detail: blocker.message(),
            },
            None => ApiError::Conflict(blocker.message()),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        ApiError::Internal(e.into()).classified()
    }
}

/// The SQLSTATEs that only a value a client sent can cause: 22001
/// string_data_right_truncation, 22021 character_not_in_repertoire (NUL or
/// invalid UTF-8), 22P05 untranslatable_character, 54000
/// program_limit_exceeded (a value too large to index).
pub const CLIENT_INPUT_SQLSTATES: &[&str] = &["22001", "22021", "22P05", "54000"];

pub type ApiResult<T> = Result<T, ApiError>;

#[derive(Serialize)]
struct Errors {
    errors: Vec<FieldError>,
}

/// The extension member of `/problems/unresolved-verification`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CaseId {
    case_id: i64,
}

impl ApiError {
    /// [`ApiError::Unavailable`] when an internal error's chain holds a
    /// database error that means "not available right now"; else unchanged.
    /// The cause is counted and logged here (`crate::overload`), since
    /// `Unavailable` carries none.
    pub fn or_unavailable(self) -> Self {
        match self {
            ApiError::Internal(e) => match unavailable_cause(&e) {
                Some(cause) => {
                    crate::overload::database_unavailable(cause);
                    ApiError::Unavailable
                }
                None => ApiError::Internal(e),
            },
            other => other,
        }
    }

    /// [`ApiError::BadRequest`] when an internal error's chain holds a
    /// database error of [`CLIENT_INPUT_SQLSTATES`]; else unchanged. Only the
    /// SQLSTATE is logged: the database's message may quote the value.
    pub fn or_bad_input(self) -> Self {
        match self {
            ApiError::Internal(e) => match client_input_sqlstate(&e) {
                Some(code) => {
                    tracing::warn!(sqlstate = %code, "the database refused a value of the request");
                    ApiError::BadRequest {
                        detail: "A value in the request cannot be stored: it is too long or holds characters that are not allowed.".into(),
                        errors: vec![],
                    }
                }
                None => ApiError::Internal(e),
            },
            other => other,
        }
    }

    /// An internal error caused by a write racing another: a unique
    /// violation no handler mapped to its own 409 (the other write won: 409),
    /// or a deadlock or serialization failure (transient: 503, retry).
    pub fn or_race(self) -> Self {
        match self {
            ApiError::Internal(e) => match sqlstate(&e).as_deref() {
                Some("23505") => {
                    tracing::warn!(sqlstate = "23505", "a write lost a race with another");
                    ApiError::Conflict(
                        "The request conflicts with another made at the same time; \
                         read the resource again before you retry."
                            .into(),
                    )
                }
                Some(code @ ("40001" | "40P01")) => {
                    tracing::warn!(sqlstate = %code, "a transaction was rolled back by a conflict");
                    ApiError::Unavailable
                }
                _ => ApiError::Internal(e),
            },
            other => other,
        }
    }

    /// [`Self::or_unavailable`], [`Self::or_bad_input`], then [`Self::or_race`].
    pub fn classified(self) -> Self {
        self.or_unavailable().or_bad_input().or_race()
    }

    pub fn bad_query(errors: Vec<FieldError>) -> Self {
        ApiError::BadRequest {
            detail: "The query string is not valid; see errors.".into(),
            errors,
        }
    }

    fn parts(&self) -> (StatusCode, &'static str, String) {
        match self {
            ApiError::BadRequest { detail, .. } => {
                (StatusCode::BAD_REQUEST, "bad-request", detail.clone())
            }
            ApiError::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "A valid bearer access token is required.".into(),
            ),
            ApiError::InsufficientScope(scope) => (
                StatusCode::FORBIDDEN,
                "insufficient-scope",
                format!("The access token lacks the `{scope}` scope."),
            ),
            ApiError::Forbidden(d) => (StatusCode::FORBIDDEN, "forbidden", d.clone()),
            ApiError::NotFound => (
                StatusCode::NOT_FOUND,
                "not-found",
                "No such resource.".into(),
            ),
            ApiError::Gone(d) => (StatusCode::GONE, "purged", d.clone()),
            ApiError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "This method is not allowed on this resource.".into(),
            ),
            ApiError::Conflict(d) => (StatusCode::CONFLICT, "conflict", d.clone()),
            ApiError::UnresolvedVerification { detail, .. } => (
                StatusCode::CONFLICT,
                "unresolved-verification",
                detail.clone(),
            ),
            ApiError::NotAcceptable => (
                StatusCode::NOT_ACCEPTABLE,
                "not-acceptable",
                "This list is answered as application/json or text/csv; send an Accept that allows one of them.".into(),
            ),
            ApiError::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "Send the body as application/json.".into(),
            ),
            ApiError::UnsupportedMediaTypeOf(media_type) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                format!("Send the body as {media_type} (Content-Type: {media_type})."),
            ),
            ApiError::Validation(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation-error",
                "The request is not valid; see errors.".into(),
            ),
            ApiError::TooManyRequests { detail, .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "too-many-requests",
                detail.clone(),
            ),
            ApiError::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "The database is not available right now; retry after the time in Retry-After."
                    .into(),
            ),
            ApiError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal-error",
                "An unexpected error occurred. Quote the x-request-id header when reporting it."
                    .into(),
            ),
        }
    }
}

/// The first database error in `e`'s chain that means "not available right now".
fn unavailable_cause(e: &anyhow::Error) -> Option<&sqlx::Error> {
    e.chain()
        .filter_map(|c| c.downcast_ref::<sqlx::Error>())
        .find(|c| i9_common::db::is_unavailable(c))
}

/// The SQLSTATE of the first database error in `e`'s chain that only a
/// client's value can cause.
/// The SQLSTATE of the first database error in `e`'s chain.
fn sqlstate(e: &anyhow::Error) -> Option<String> {
    e.chain()
        .filter_map(|c| c.downcast_ref::<sqlx::Error>())
        .find_map(|c| match c {
            sqlx::Error::Database(db) => db.code().map(|code| code.into_owned()),
            _ => None,
        })
}

fn client_input_sqlstate(e: &anyhow::Error) -> Option<String> {
    e.chain()
        .filter_map(|c| c.downcast_ref::<sqlx::Error>())
        .find_map(|c| match c {
            sqlx::Error::Database(db) => db
                .code()
                .filter(|code| CLIENT_INPUT_SQLSTATES.contains(&code.as_ref()))
                .map(|code| code.into_owned()),
            _ => None,
        })
}

pub fn problem(status: StatusCode, slug: &str, detail: impl Into<String>) -> ProblemDetails {
    ProblemDetails::from_status_code(status)
        .with_type(
            format!("/problems/{slug}")
                .parse()
                .unwrap_or_else(|_| axum::http::Uri::from_static("about:blank")),
        )
        .with_detail(detail.into())
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let this = self.classified();
        if let ApiError::Internal(e) = &this {
            // The chain of messages, not `Debug`: a database error's debug
            // form carries its detail, which quotes the values of the row.
            tracing::error!(error = %format!("{e:#}"), "internal error");
        }
        let (status, slug, detail) = this.parts();
        let retry_after = match &this {
            // Whole seconds, rounded up: never earlier than the wait.
            ApiError::TooManyRequests { retry_after, .. } => {
                Some(retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0))
            }
            _ => None,
        };
        let base = problem(status, slug, detail);
        let mut response = match this {
            ApiError::Validation(errors) | ApiError::BadRequest { errors, .. }
                if !errors.is_empty() =>
            {
                base.with_extensions(Errors { errors }).into_response()
            }
            ApiError::UnresolvedVerification { case_id, .. } => {
                base.with_extensions(CaseId { case_id }).into_response()
            }
            _ => base.into_response(),
        };
        match status {
            StatusCode::UNAUTHORIZED => {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(r#"Bearer realm="i9", error="invalid_token""#),
                );
            }
            StatusCode::FORBIDDEN if slug == "insufficient-scope" => {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(r#"Bearer realm="i9", error="insufficient_scope""#),
                );
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            StatusCode::TOO_MANY_REQUESTS => {
                let secs = retry_after.unwrap_or(1).max(1);
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            _ => {}
        }
        response
    }
}
