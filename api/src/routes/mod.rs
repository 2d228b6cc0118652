//! The HTTP routes: one module per resource.

pub mod account;
pub mod calendar;
pub mod eins;
pub mod employees;
pub mod everify;
pub mod groups;
pub mod health;
pub mod history;
pub mod i9_steps;
pub mod i9s;
pub mod inspection;
pub mod legal_holds;
pub mod oauth;
pub mod openapi;
pub mod pages;
pub mod partners;
pub mod roles;
pub mod section1;
pub mod section1_link;
pub mod status_change_reports;
pub mod supplement_b;
pub mod users;

use axum::{extract::FromRequestParts, http::request::Parts};
use i9_common::{
    crypto::Purpose,
    domain::{ssn_mask::mask_last4, Permission},
};

use crate::{auth::Caller, error::ApiError, state::AppState};

/// A numeric id from the path. Anything else names no resource: 404, given
/// by [`Id::get`] after the caller's scope and permission are checked, so a
/// caller without permission learns nothing from the shape of an id.
pub struct Id(Option<i64>);

impl Id {
    pub fn get(self) -> Result<i64, ApiError> {
        self.0.ok_or(ApiError::NotFound)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let raw = axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .ok()
            .map(|p| p.0);
        Ok(Id(raw
            .and_then(|r| r.parse::<i64>().ok())
            .filter(|id| *id > 0)))
    }
}

/// The SSN as the caller may see it: whole with permission 12, masked
/// otherwise. The caller records the audit entry for a whole one.
pub fn reveal_ssn(
    state: &AppState,
    caller: &Caller,
    purpose: Purpose,
    ciphertext: Option<&[u8]>,
    last4: Option<&str>,
) -> Result<Option<String>, ApiError> {
    match (ciphertext, last4) {
        (Some(ct), _) if caller.has(Permission::FullSsn) => {
            let ssn = state
                .cipher
                .decrypt_ssn(purpose, ct)
                .map_err(|e| ApiError::Internal(e.into()))?;
            Ok(Some(ssn.as_str().to_owned()))
        }
        (_, Some(l4)) => Ok(Some(mask_last4(l4))),
        _ => Ok(None),
    }
}
