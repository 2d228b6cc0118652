//! What a write operation answers when it does not happen.

use serde::Serialize;

/// One invalid field of a request: its name as the client wrote it, a stable
/// code and a message. Never the value (it may be a social security number).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct FieldError {
    /// The field or query parameter, as the client wrote it.
    pub field: String,
    /// A stable machine-readable code, e.g. `required`, `too_long`, `invalid_format`.
    pub code: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            code,
            message: message.into(),
        }
    }
}

/// Why a write did not happen. The transaction it ran in must be dropped
/// (rolled back): an operation that fails may have written part of its work.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Fields that break a rule; every one found, named.
    #[error("{} invalid field(s)", .0.len())]
    Invalid(Vec<FieldError>),
    /// The record's state, or another record, does not allow the write.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The caller may not place the record there.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// A lifecycle step the I-9's status does not allow (docs/api.md, "The
    /// I-9 lifecycle"); nothing was written.
    #[error(transparent)]
    IllegalStep(#[from] crate::domain::IllegalStep),
    /// The record does not exist (or the caller may not know it does).
    #[error("not found")]
    NotFound,
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// A stored value (an SSN the write copies) does not decrypt under the
    /// key ring (docs/operations.md, "Keys and rotation").
    #[error(transparent)]
    Undecryptable(#[from] crate::crypto::DecryptError),
}

impl WriteError {
    pub fn invalid(
        field: impl Into<String>,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self::Invalid(vec![FieldError::new(field, code, message)])
    }
}
