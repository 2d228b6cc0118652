//! Checking a login and its password, as the token endpoint's password grant
//! and the employee's sign-in page (`/account/sign-in`) both do, under one
//! rule (docs/api.md, "Throttling"): failed sign-ins are counted per username
//! and per client address (`crate::throttle`), a delayed one is refused before
//! any hashing, and verifications wait for a bounded turn (`crate::hashing`).

use std::{net::IpAddr, time::Duration};

use crate::{
    hashing::{Saturated, Turn},
    state::AppState,
    throttle::{Delay, Key, Kind},
};

/// The throttle keys of one sign-in.
pub struct Keys {
    /// The client's address, for the log.
    client: IpAddr,
    address: Key,
    /// The username, when a password is checked.
    username: Option<Key>,
}

/// Why a sign-in was not checked, or could not be.
#[derive(Debug)]
pub enum Refused {
    /// The username or address waits this long before its next attempt.
    Throttled(Duration),
    /// No verification turn came free in time.
    Busy(Saturated),
    Database(sqlx::Error),
    /// The verification task failed.
    Internal(anyhow::Error),
}

impl From<sqlx::Error> for Refused {
    fn from(e: sqlx::Error) -> Self {
        Self::Database(e)
    }
}

impl From<Saturated> for Refused {
    fn from(s: Saturated) -> Self {
        Self::Busy(s)
    }
}

/// What a checked password says of its login.
pub enum Checked {
    /// The right password of a user that is not retired.
    User(i64),
    /// The right password of a retired user.
    Retired,
    /// An unknown login or a wrong password (counted as a failure).
    Wrong,
}

impl Keys {
    pub fn new(state: &AppState, address: IpAddr, username: Option<&str>) -> Self {
        Self {
            client: address,
            address: state.throttle.address_key(address),
            username: username.map(|u| state.throttle.username_key(u)),
        }
    }

    fn all(&self) -> Vec<&Key> {
        std::iter::once(&self.address)
            .chain(self.username.as_ref())
            .collect()
    }

    /// Refused while any key is delayed.
    pub async fn not_delayed(&self, state: &AppState) -> Result<(), Refused> {
        match state.throttle.delayed(&self.all()).await? {
            Some(delay) => Err(throttled(delay)),
            None => Ok(()),
        }
    }

    /// Refused if this process has seen any key delayed (memory only: used
    /// before admission, and under a verification turn, which is never held
    /// across a database query that a flood may make wait).
    pub fn not_delayed_meanwhile(&self, state: &AppState) -> Result<(), Refused> {
        match state.throttle.remembered(&self.all()) {
            Some(delay) => Err(throttled(delay)),
            None => Ok(()),
        }
    }

    /// Count a failure against the address, and the username if `username`;
    /// a key that becomes delayed is logged (an address by itself, for
    /// operators; a username never: it may be a password typed into the
    /// wrong field).
    pub async fn count_failure(&self, state: &AppState, username: bool) -> Result<(), Refused> {
        let counted =
            std::iter::once(&self.address).chain(self.username.as_ref().filter(|_| username));
        for key in counted {
            let failure = state.throttle.count(key).await?;
            if failure.delay.is_zero() {
                continue;
            }
            match key.kind() {
                Kind::Address => tracing::warn!(
                    address = %self.client,
                    level = failure.level,
                    delay_secs = failure.delay.as_secs_f64(),
                    "sign-ins from this address delayed after repeated failures"
                ),
                Kind::Username => tracing::warn!(
                    level = failure.level,
                    delay_secs = failure.delay.as_secs_f64(),
                    "sign-ins of a username delayed after repeated failures"
                ),
                // Not a sign-in's key (api/src/ssn_writes.rs counts those).
                Kind::SsnWrite => {}
            }
        }
        Ok(())
    }
}

/// The refusal of a sign-in while `delay` runs, counted by its key's kind.
fn throttled(delay: Delay) -> Refused {
    crate::overload::sign_in_throttled(delay.kind);
    Refused::Throttled(delay.wait)
}

/// Check `password` for the login `username` (any letter case) under a
/// verification turn: an unknown login costs the same work as a known one.
/// A wrong one is counted against the address and the username; a right one
/// forgets the username's failures.
pub async fn check_password(
    state: &AppState,
    keys: &Keys,
    username: &str,
    password: &str,
) -> Result<Checked, Refused> {
    let user = sqlx::query!(
        "SELECT id, password_hash, retired FROM users WHERE lower(login) = lower($1)",
        username,
    )
    .fetch_optional(&state.pool)
    .await?;
    let turn: Turn = state.hashing.turn().await?;
    keys.not_delayed_meanwhile(state)?;
    let (user, hash) = match user {
        Some(u) => (Some((u.id, u.retired)), u.password_hash),
        None => (None, None),
    };
    let verified = turn
        .verify(password.to_owned(), hash)
        .await
        .map_err(|e| Refused::Internal(e.into()))?;
    match user {
        Some((user_id, false)) if verified => {
            if let Some(key) = &keys.username {
                state.throttle.clear(key).await?;
            }
            Ok(Checked::User(user_id))
        }
        Some((_, true)) if verified => Ok(Checked::Retired),
        _ => {
            keys.count_failure(state, true).await?;
            Ok(Checked::Wrong)
        }
    }
}
