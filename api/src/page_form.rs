//! The forms of the employee pages (docs/api.md, "Web pages for employees"),
//! read with axum's [`Form`] into a typed struct, strictly: a body that is
//! not a readable form of that page is refused whole, never read as empty
//! fields. Refused are a body that is not
//! `application/x-www-form-urlencoded`, one that is not UTF-8 once
//! percent-decoded (the form decoder under [`Form`] would read such bytes as
//! U+FFFD; [`crate::text`] is the rule), a field sent twice, a field the page
//! does not have, and a body over [`crate::BODY_LIMIT`]. The page answers
//! with its "the form could not be read" page, in its language; fields that
//! are merely missing or invalid are its own per-field errors.

use axum::{
    body::{Body, Bytes},
    extract::{FromRequest, Request},
    http::StatusCode,
    response::{IntoResponse, Response},
    Form,
};
use serde::de::DeserializeOwned;

use crate::text::{decode_form, Reason};

/// A page's form, read whole.
pub struct PageForm<T>(pub T);

/// Why a page's form could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// Not form-encoded, not UTF-8, a field repeated or not the page's.
    Malformed,
    /// Over [`crate::BODY_LIMIT`].
    TooLarge,
}

impl Unreadable {
    /// The status of the page that says so.
    pub fn status(self) -> StatusCode {
        match self {
            Self::Malformed => StatusCode::BAD_REQUEST,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        }
    }
}

/// Handlers take `Result<PageForm<T>, Unreadable>` and answer in their
/// page's language; this English page is for one that does not.
impl IntoResponse for Unreadable {
    fn into_response(self) -> Response {
        crate::routes::pages::unreadable_form(self, "en")
    }
}

impl<T, S> FromRequest<S> for PageForm<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Unreadable;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        let bytes = Bytes::from_request(Request::from_parts(parts.clone(), body), state)
            .await
            .map_err(|e| {
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    Unreadable::TooLarge
                } else {
                    Unreadable::Malformed
                }
            })?;
        let (_, unreadable) = decode_form(&bytes);
        if unreadable.iter().any(|u| u.reason == Reason::NotUtf8) {
            return Err(Unreadable::Malformed);
        }
        // NUL is readable here: the page names the field that holds it.
        let Form(value) =
            Form::<T>::from_request(Request::from_parts(parts, Body::from(bytes)), state)
                .await
                .map_err(|_| Unreadable::Malformed)?;
        Ok(Self(value))
    }
}
