//! Writes that carry a social security number, by callers who may not see
//! numbers whole (docs/api.md, "Social security numbers").
//!
//! A caller without permission 12 sees `***-**-1234`. Whether a write with a
//! number succeeds or answers 409 (the number is taken) would let it find the
//! whole number by trying the ~89,000 possible first five digits, one write
//! at a time. So:
//! - each write carrying an SSN (`POST`/`PATCH /v1/employees`, the partner
//!   operation) by such a caller counts against that caller and the number's
//!   last four digits; after [`ThrottleLimit::free_failures`] of them not yet
//!   forgotten, such writes wait (429 with `Retry-After`), with growing delays
//!   (`api/src/throttle.rs`). Hiring is not slowed: it rarely repeats four
//!   last digits within the hour;
//! - every refusal for a taken number is audited (`ssn.conflict`), whoever
//!   the caller;
//! - the writes check everything else first, so that no request that would
//!   fail anyway tells whether the number is taken (`routes/employees/write.rs`).
//!
//! [`ThrottleLimit::free_failures`]: i9_common::config::ThrottleLimit

use i9_common::domain::{Permission, Ssn};

use crate::{
    auth::Caller,
    error::{ApiError, ApiResult},
    state::AppState,
};

/// Count a write carrying `ssn` by `caller`, or refuse it with 429 while the
/// caller's writes of numbers ending in the same four digits are delayed.
/// Callers with permission 12 are not counted: they may read numbers whole.
pub async fn admit(state: &AppState, caller: &Caller, ssn: Option<&Ssn>) -> ApiResult<()> {
    let Some(ssn) = ssn else {
        return Ok(());
    };
    if caller.has(Permission::FullSsn) {
        return Ok(());
    }
    let key = state.throttle.ssn_write_key(caller.user_id, ssn.last4());
    if let Some(delay) = state.throttle.delayed(&[&key]).await? {
        crate::overload::ssn_write_throttled();
        tracing::warn!(
            user_id = caller.user_id,
            "writes of social security numbers with the same last four digits are delayed"
        );
        return Err(ApiError::TooManyRequests {
            detail: "Too many writes of social security numbers ending in these four digits; \
                     retry after the time in Retry-After."
                .into(),
            retry_after: delay.wait,
        });
    }
    state.throttle.count(&key).await?;
    Ok(())
}

/// The refusal of a write whose SSN `holder` already has, audited.
pub async fn conflict(state: &AppState, caller: &Caller, holder: i64) -> ApiResult<()> {
    crate::audit::record_ssn_conflict(&state.pool, caller, holder).await?;
    Ok(())
}
