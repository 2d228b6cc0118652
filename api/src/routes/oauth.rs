//! `POST /oauth2/access_token`: the OAuth 2.0 token endpoint (RFC 6749) with
//! the password and refresh_token grants.
//!
//! - Client secrets and passwords are verified against argon2id hashes.
//! - Tokens are opaque and stored only as SHA-256 hashes.
//! - A refresh returns a new refresh token; presenting a used one revokes the
//!   whole sign-in (every token descended from the same grant).
//! - Failed sign-ins are throttled per username and per client address with
//!   growing delays (`crate::throttle`): a delayed one answers 429 with
//!   Retry-After before any hashing. Failed client authentication counts
//!   against the address.
//! - Verifications run under a bound (`crate::hashing`): when every turn
//!   stays taken, 503 with Retry-After. A verified client secret is
//!   remembered for a few seconds (`crate::auth::cache`).
//! - Errors use the RFC 6749 section 5.2 body.

use std::collections::HashMap;

use axum::{
    body::Bytes,
    extract::State,
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use base64::{engine::general_purpose::STANDARD, Engine as _};
use chrono::Utc;
use i9_common::{
    crypto::{new_token, token_hash},
    domain::Scopes,
};
use oauth2::{basic::BasicErrorResponseType, StandardErrorResponse};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::time::Duration;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    auth::cache::VerifiedClient,
    client_address::ClientAddress,
    error::ApiError,
    hashing::Saturated,
    sign_in::{check_password, Checked, Keys, Refused},
    state::AppState,
};

/// The token endpoint's route, as metrics and logs name it.
pub const TOKEN_ROUTE: &str = "/oauth2/access_token";

/// A successful token response.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenResponse {
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Lifetime of the access token in seconds.
    pub expires_in: u64,
    pub refresh_token: String,
    /// `read`, `write` or `read+write`.
    pub scope: String,
}

/// An RFC 6749 error body.
#[derive(Debug, Serialize, ToSchema)]
pub struct OAuthErrorBody {
    /// invalid_request, invalid_client, invalid_grant, unsupported_grant_type, invalid_scope,
    /// slow_down (429) or temporarily_unavailable (503).
    pub error: String,
    pub error_description: Option<String>,
}

/// Form fields of a token request.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct TokenRequest {
    /// `password` or `refresh_token`.
    grant_type: String,
    client_id: String,
    client_secret: String,
    /// Password grant; optional on refresh, where it must match when sent.
    username: Option<String>,
    /// Password grant only.
    password: Option<String>,
    /// Refresh grant only.
    refresh_token: Option<String>,
    /// `read`, `write` or `read+write`; defaults to every scope of the client.
    scope: Option<String>,
}

#[derive(Debug)]
pub enum OAuthError {
    Standard(StatusCode, BasicErrorResponseType, String),
    /// A username or address is delayed.
    Throttled {
        retry_after: Duration,
    },
    /// No verification turn came free in time.
    Saturated {
        retry_after: Duration,
    },
    Server(ApiError),
}

impl From<Saturated> for OAuthError {
    /// A token request shed (busy), counted and logged (`crate::overload`).
    fn from(s: Saturated) -> Self {
        crate::overload::shed(TOKEN_ROUTE);
        OAuthError::Saturated {
            retry_after: s.retry_after,
        }
    }
}

impl From<sqlx::Error> for OAuthError {
    fn from(e: sqlx::Error) -> Self {
        OAuthError::Server(e.into())
    }
}

fn invalid_request(d: impl Into<String>) -> OAuthError {
    OAuthError::Standard(
        StatusCode::BAD_REQUEST,
        BasicErrorResponseType::InvalidRequest,
        d.into(),
    )
}

fn invalid_grant(d: impl Into<String>) -> OAuthError {
    OAuthError::Standard(
        StatusCode::BAD_REQUEST,
        BasicErrorResponseType::InvalidGrant,
        d.into(),
    )
}

fn invalid_client() -> OAuthError {
    OAuthError::Standard(
        StatusCode::UNAUTHORIZED,
        BasicErrorResponseType::InvalidClient,
        "Client authentication failed.".into(),
    )
}

fn invalid_scope(d: impl Into<String>) -> OAuthError {
    OAuthError::Standard(
        StatusCode::BAD_REQUEST,
        BasicErrorResponseType::InvalidScope,
        d.into(),
    )
}

fn no_store(response: &mut Response) {
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let (status, body, retry) = match self {
            // Every answer of the token endpoint is no-store (RFC 6749,
            // 5.1 and 5.2), a 503 of an exhausted pool included.
            OAuthError::Server(e) => {
                let mut response = e.into_response();
                no_store(&mut response);
                return response;
            }
            OAuthError::Standard(status, kind, description) => (
                status,
                StandardErrorResponse::new(kind, Some(description), None),
                None,
            ),
            OAuthError::Throttled { retry_after } => {
                let secs = whole_seconds(retry_after);
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    StandardErrorResponse::new(
                        BasicErrorResponseType::Extension("slow_down".into()),
                        Some(format!("Too many failed sign-ins; retry after {secs} s.")),
                        None,
                    ),
                    Some(secs),
                )
            }
            OAuthError::Saturated { retry_after } => {
                let secs = whole_seconds(retry_after);
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    StandardErrorResponse::new(
                        BasicErrorResponseType::Extension("temporarily_unavailable".into()),
                        Some(format!("The token endpoint is busy; retry after {secs} s.")),
                        None,
                    ),
                    Some(secs),
                )
            }
        };
        let mut response = (status, Json(body)).into_response();
        no_store(&mut response);
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"Basic realm="i9""#),
            );
        }
        if let Some(secs) = retry {
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        response
    }
}

/// `Retry-After` is in whole seconds: round up, at least 1.
fn whole_seconds(d: Duration) -> u64 {
    (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
}

/// Basic credentials are form-urlencoded before base64 (RFC 6749 section 2.3.1).
fn form_decode(s: &str) -> Option<String> {
    let pairs = crate::text::form_pairs(format!("v={s}").as_bytes()).ok()?;
    pairs.into_iter().next().map(|(_, v)| v)
}

impl From<Refused> for OAuthError {
    fn from(r: Refused) -> Self {
        match r {
            Refused::Throttled(retry_after) => OAuthError::Throttled { retry_after },
            Refused::Busy(s) => s.into(),
            Refused::Database(e) => e.into(),
            Refused::Internal(e) => OAuthError::Server(ApiError::Internal(e)),
        }
    }
}

#[utoipa::path(
    post, path = "/oauth2/access_token", operation_id = "token", tag = "authentication",
    request_body(content = TokenRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Tokens issued", body = TokenResponse),
        (status = 400, description = "invalid_request, invalid_grant, unsupported_grant_type or invalid_scope", body = OAuthErrorBody),
        (status = 401, description = "invalid_client", body = OAuthErrorBody),
        (status = 429, description = "slow_down: too many failed sign-ins from this address or for this username; see Retry-After", body = OAuthErrorBody),
        (status = 503, description = "temporarily_unavailable: the endpoint is saturated (password checks); see Retry-After", body = OAuthErrorBody),
    )
)]
pub async fn token(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';').next().is_some_and(|m| {
                m.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
        });
    if !is_form {
        return Err(invalid_request(
            "The body must be application/x-www-form-urlencoded.",
        ));
    }
    let pairs = crate::text::form_pairs(&body).map_err(|bad| {
        invalid_request(match bad[0].plain_name() {
            Some(name) => format!("Parameter {name} is not UTF-8 text without NUL."),
            None => "A parameter is not UTF-8 text without NUL.".into(),
        })
    })?;
    let mut form = HashMap::new();
    for (k, v) in pairs {
        if form.insert(k.clone(), v).is_some() {
            return Err(invalid_request(format!("Parameter {k} is repeated.")));
        }
    }
    let param = |name: &str| form.get(name).map(String::as_str).filter(|v| !v.is_empty());

    let grant_type =
        param("grant_type").ok_or_else(|| invalid_request("grant_type is required."))?;
    if grant_type != "password" && grant_type != "refresh_token" {
        return Err(OAuthError::Standard(
            StatusCode::BAD_REQUEST,
            BasicErrorResponseType::UnsupportedGrantType,
            "Supported grants: password, refresh_token.".into(),
        ));
    }

    // Client credentials from the body, or HTTP Basic (RFC 6749 section 2.3.1).
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .and_then(|(_, b)| STANDARD.decode(b.trim()).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| {
            let (id, secret) = s.split_once(':')?;
            Some((form_decode(id)?, form_decode(secret)?))
        });
    let (client_id, client_secret) = match (param("client_id"), param("client_secret"), &basic) {
        (_, _, Some((id, secret))) => (id.clone(), secret.clone()),
        (Some(id), Some(secret), None) => (id.to_owned(), secret.to_owned()),
        (None, _, None) => return Err(invalid_request("client_id is required.")),
        (Some(_), None, None) => return Err(invalid_request("client_secret is required.")),
    };
    let username = param("username");
    let password = if grant_type == "password" {
        if username.is_none() {
            return Err(invalid_request("username is required."));
        }
        Some(param("password").ok_or_else(|| invalid_request("password is required."))?)
    } else {
        None
    };
    let keys = Keys::new(&state, address, password.and(username));
    // A delayed address or username costs no hashing; one this process
    // knows of not even a database query.
    keys.not_delayed_meanwhile(&state)?;
    let _admitted = state.hashing.admit()?;
    keys.not_delayed(&state).await?;
    let client = authenticate_client(&state, &keys, &client_id, &client_secret).await?;
    let requested = match param("scope") {
        None => None,
        Some(s) => Some(
            Scopes::parse(s)
                .ok_or_else(|| invalid_scope("Scopes are read, write or read+write."))?,
        ),
    };
    if let Some(r) = requested {
        if !r.is_subset_of(client.scopes) {
            return Err(invalid_scope(format!(
                "This client may have at most: {}.",
                client.scopes
            )));
        }
    }

    let issued = match (password, username) {
        (Some(password), Some(username)) => {
            password_grant(
                &state,
                &keys,
                &client,
                username,
                password,
                requested.unwrap_or(client.scopes),
            )
            .await?
        }
        _ => {
            let refresh = param("refresh_token")
                .ok_or_else(|| invalid_request("refresh_token is required."))?;
            refresh_grant(&state, &client, username, refresh, requested).await?
        }
    };
    let mut response = Json(issued).into_response();
    no_store(&mut response);
    Ok(response)
}

/// The cache key of a verified client secret: SHA-256 of both, length-prefixed.
fn client_cache_key(client_id: &str, secret: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((client_id.len() as u64).to_be_bytes());
    h.update(client_id.as_bytes());
    h.update(secret.as_bytes());
    h.finalize().into()
}

async fn authenticate_client(
    state: &AppState,
    keys: &Keys,
    client_id: &str,
    secret: &str,
) -> Result<VerifiedClient, OAuthError> {
    let cache_key = client_cache_key(client_id, secret);
    if let Some(client) = state.auth_cache.client(&cache_key) {
        return Ok(client);
    }
    let generation = state.auth_cache.generation();
    let row = sqlx::query_as!(
        ClientRow,
        "SELECT id, secret_hash, scopes FROM oauth_clients WHERE client_id = $1 AND active",
        client_id,
    )
    .fetch_optional(&state.pool)
    .await?;
    let turn = state.hashing.turn().await?;
    keys.not_delayed_meanwhile(state)?;
    let (client, hash) = match row {
        Some(ClientRow {
            id,
            secret_hash,
            scopes,
        }) => (
            Some(VerifiedClient {
                id,
                scopes: Scopes::from_list(&scopes).unwrap_or_default(),
            }),
            Some(secret_hash),
        ),
        None => (None, None),
    };
    let verified = turn
        .verify(secret.to_owned(), hash)
        .await
        .map_err(|e| OAuthError::Server(ApiError::Internal(e.into())))?;
    match client {
        Some(client) if verified => {
            state.auth_cache.put_client(cache_key, client, generation);
            Ok(client)
        }
        _ => {
            keys.count_failure(state, false).await?;
            Err(invalid_client())
        }
    }
}

async fn password_grant(
    state: &AppState,
    keys: &Keys,
    client: &VerifiedClient,
    username: &str,
    password: &str,
    scopes: Scopes,
) -> Result<TokenResponse, OAuthError> {
    match check_password(state, keys, username, password).await? {
        Checked::User(user_id) => {
            let mut tx = state.pool.begin().await?;
            let grant = Uuid::new_v4();
            sqlx::query!(
                "INSERT INTO oauth_grants (id, client_id, user_id, scopes) VALUES ($1, $2, $3, $4)",
                grant,
                client.id,
                user_id,
                &scopes.to_list(),
            )
            .execute(&mut *tx)
            .await?;
            let issued = issue(state, &mut tx, grant, scopes).await?;
            tx.commit().await?;
            Ok(issued)
        }
        Checked::Retired => Err(invalid_grant("This account is retired.")),
        Checked::Wrong => Err(invalid_grant("The username or password is wrong.")),
    }
}

async fn refresh_grant(
    state: &AppState,
    client: &VerifiedClient,
    username: Option<&str>,
    refresh_token: &str,
    requested: Option<Scopes>,
) -> Result<TokenResponse, OAuthError> {
    let hash = token_hash(refresh_token);
    let row = sqlx::query_as!(
        RefreshRow,
        r#"SELECT r.grant_id, r.scopes, r.used_at IS NOT NULL AS "used!",
                r.expires_at <= now() AS "expired!", g.client_id,
                g.revoked_at IS NOT NULL AS "revoked!", u.retired, u.login
         FROM refresh_tokens r JOIN oauth_grants g ON g.id = r.grant_id JOIN users u ON u.id = g.user_id
         WHERE r.token_hash = $1"#,
        &hash,
    )
    .fetch_optional(&state.pool)
    .await?;
    let Some(RefreshRow {
        grant_id: grant,
        scopes,
        used,
        expired,
        client_id: client_db_id,
        revoked,
        retired,
        login,
    }) = row
    else {
        return Err(invalid_grant("The refresh token is not valid."));
    };
    // A standard OAuth client sends no username on refresh; one that does
    // must send the token's.
    if client_db_id != client.id || username.is_some_and(|u| !login.eq_ignore_ascii_case(u)) {
        return Err(invalid_grant(
            "The refresh token was not issued to this client and username.",
        ));
    }
    if revoked {
        return Err(invalid_grant("The refresh token has been revoked."));
    }
    if used {
        revoke_grant(state, grant, "refresh token reuse").await?;
        return Err(invalid_grant(
            "The refresh token was already used; every token of this sign-in is now revoked.",
        ));
    }
    if expired {
        return Err(invalid_grant("The refresh token has expired."));
    }
    if retired {
        return Err(invalid_grant("This account is retired."));
    }
    // Never more than the client is registered for today.
    let granted = Scopes::from_list(&scopes).unwrap_or_default();
    let granted = Scopes {
        read: granted.read && client.scopes.read,
        write: granted.write && client.scopes.write,
    };
    if granted == Scopes::default() {
        return Err(invalid_grant(
            "The client no longer holds any scope of this sign-in.",
        ));
    }
    let scopes = match requested {
        Some(r) if !r.is_subset_of(granted) => {
            return Err(invalid_scope("A refresh cannot widen the scope."))
        }
        Some(r) => r,
        None => granted,
    };
    let mut tx = state.pool.begin().await?;
    let claimed = sqlx::query!(
        "UPDATE refresh_tokens SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL",
        &hash,
    )
    .execute(&mut *tx)
    .await?;
    if claimed.rows_affected() == 0 {
        // Another request used it a moment ago: that is reuse too.
        drop(tx);
        revoke_grant(state, grant, "refresh token reuse").await?;
        return Err(invalid_grant(
            "The refresh token was already used; every token of this sign-in is now revoked.",
        ));
    }
    let issued = issue(state, &mut tx, grant, scopes).await?;
    tx.commit().await?;
    Ok(issued)
}

async fn revoke_grant(state: &AppState, grant: Uuid, reason: &str) -> Result<(), sqlx::Error> {
    tracing::warn!(%grant, reason, "revoking every token of a sign-in");
    sqlx::query!(
        "UPDATE oauth_grants SET revoked_at = now(), revoked_reason = $2 WHERE id = $1 AND revoked_at IS NULL",
        grant,
        reason,
    )
    .execute(&state.pool)
    .await?;
    // This process forgets the sign-in's tokens now; the others on the trigger's NOTIFY.
    state.auth_cache.clear();
    Ok(())
}

async fn issue(
    state: &AppState,
    tx: &mut sqlx::PgConnection,
    grant: Uuid,
    scopes: Scopes,
) -> Result<TokenResponse, sqlx::Error> {
    let access = new_token("i9at_");
    let refresh = new_token("i9rt_");
    let now = Utc::now();
    let access_ttl = state.config.access_token_ttl;
    let refresh_ttl = chrono::Duration::from_std(state.config.refresh_token_ttl)
        .unwrap_or(chrono::Duration::days(14));
    sqlx::query!(
        "INSERT INTO access_tokens (token_hash, grant_id, scopes, expires_at) VALUES ($1, $2, $3, $4)",
        token_hash(&access),
        grant,
        &scopes.to_list(),
        now + chrono::Duration::from_std(access_ttl).unwrap_or(chrono::Duration::hours(1)),
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        "INSERT INTO refresh_tokens (token_hash, grant_id, scopes, expires_at) VALUES ($1, $2, $3, $4)",
        token_hash(&refresh),
        grant,
        &scopes.to_list(),
        now + refresh_ttl,
    )
    .execute(&mut *tx)
    .await?;
    Ok(TokenResponse {
        access_token: access,
        token_type: "Bearer",
        expires_in: access_ttl.as_secs(),
        refresh_token: refresh,
        scope: scopes.to_string(),
    })
}

/// An active OAuth client: its secret's hash and the scopes it may have.
struct ClientRow {
    id: i64,
    secret_hash: String,
    scopes: Vec<String>,
}

/// A refresh token, its state, and its sign-in's client and user.
struct RefreshRow {
    grant_id: Uuid,
    scopes: Vec<String>,
    used: bool,
    expired: bool,
    client_id: i64,
    revoked: bool,
    retired: bool,
    login: String,
}
