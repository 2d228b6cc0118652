//! `POST /oauth2/access_token`: the OAuth 2.0 token endpoint (RFC 6749) with
//! the password and refresh_token grants.
//!
//! - Client secrets and passwords are verified against argon2id hashes.
//! - Tokens are opaque and stored only as SHA-256 hashes.
//! - A refresh returns a new refresh token; presenting a used one revokes the
//!   whole sign-in (every token descended from the same grant).
//! - Repeated failed sign-ins for one username answer 429 with Retry-After.
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
    crypto::{new_token, token_hash, verify_password, verify_password_dummy},
    domain::Scopes,
};
use oauth2::{basic::BasicErrorResponseType, StandardErrorResponse};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{error::ApiError, state::AppState};

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
    /// invalid_request, invalid_client, invalid_grant, unsupported_grant_type, invalid_scope or slow_down.
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
    username: String,
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
    Throttled { retry_after: i64 },
    Server(ApiError),
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
            OAuthError::Server(e) => return e.into_response(),
            OAuthError::Standard(status, kind, description) => {
                (status, StandardErrorResponse::new(kind, Some(description), None), None)
            }
            OAuthError::Throttled { retry_after } => (
                StatusCode::TOO_MANY_REQUESTS,
                StandardErrorResponse::new(
                    BasicErrorResponseType::Extension("slow_down".into()),
                    Some(format!("Too many failed sign-ins for this username; retry in {retry_after} seconds.")),
                    None,
                ),
                Some(retry_after),
            ),
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

/// Basic credentials are form-urlencoded before base64 (RFC 6749 section 2.3.1).
fn form_decode(s: &str) -> Option<String> {
    let pairs = crate::text::form_pairs(format!("v={s}").as_bytes()).ok()?;
    pairs.into_iter().next().map(|(_, v)| v)
}

struct Client {
    id: i64,
    scopes: Scopes,
}

#[utoipa::path(
    post, path = "/oauth2/access_token", tag = "authentication",
    request_body(content = TokenRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Tokens issued", body = TokenResponse),
        (status = 400, description = "invalid_request, invalid_grant, unsupported_grant_type or invalid_scope", body = OAuthErrorBody),
        (status = 401, description = "invalid_client", body = OAuthErrorBody),
        (status = 429, description = "Too many failed sign-ins; see Retry-After", body = OAuthErrorBody),
    )
)]
pub async fn token(
    State(state): State<AppState>,
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
    let username = param("username")
        .ok_or_else(|| invalid_request("username is required."))?
        .to_owned();
    let client = authenticate_client(&state, &client_id, &client_secret).await?;
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

    let issued = match grant_type {
        "password" => {
            let password =
                param("password").ok_or_else(|| invalid_request("password is required."))?;
            password_grant(
                &state,
                &client,
                &username,
                password,
                requested.unwrap_or(client.scopes),
            )
            .await?
        }
        _ => {
            let refresh = param("refresh_token")
                .ok_or_else(|| invalid_request("refresh_token is required."))?;
            refresh_grant(&state, &client, &username, refresh, requested).await?
        }
    };
    let mut response = Json(issued).into_response();
    no_store(&mut response);
    Ok(response)
}

async fn authenticate_client(
    state: &AppState,
    client_id: &str,
    secret: &str,
) -> Result<Client, OAuthError> {
    let row: Option<(i64, String, Vec<String>)> = sqlx::query_as(
        "SELECT id, secret_hash, scopes FROM oauth_clients WHERE client_id = $1 AND active",
    )
    .bind(client_id)
    .fetch_optional(&state.pool)
    .await?;
    let secret = secret.to_owned();
    let check = tokio::task::spawn_blocking(move || match row {
        Some((id, hash, scopes)) if verify_password(&secret, &hash) => Some(Client {
            id,
            scopes: Scopes::from_list(&scopes).unwrap_or_default(),
        }),
        Some(_) => None,
        None => {
            verify_password_dummy(&secret);
            None
        }
    })
    .await
    .map_err(|e| OAuthError::Server(ApiError::Internal(e.into())))?;
    check.ok_or_else(invalid_client)
}

async fn password_grant(
    state: &AppState,
    client: &Client,
    username: &str,
    password: &str,
    scopes: Scopes,
) -> Result<TokenResponse, OAuthError> {
    let window = state.config.sign_in_window.as_secs_f64();
    let (failures, oldest): (i64, Option<f64>) = sqlx::query_as(
        "SELECT count(*), extract(epoch FROM min(failed_at))::float8 FROM sign_in_failures
         WHERE lower(username) = lower($1) AND failed_at > now() - make_interval(secs => $2)",
    )
    .bind(username)
    .bind(window)
    .fetch_one(&state.pool)
    .await?;
    if failures >= state.config.sign_in_max_failures {
        let now = Utc::now().timestamp() as f64;
        let retry_after = (oldest.unwrap_or(now) + window - now)
            .ceil()
            .clamp(1.0, window) as i64;
        tracing::warn!("sign-in throttled after repeated failures");
        return Err(OAuthError::Throttled { retry_after });
    }

    let user: Option<(i64, Option<String>, bool)> = sqlx::query_as(
        "SELECT id, password_hash, retired FROM users WHERE lower(login) = lower($1)",
    )
    .bind(username)
    .fetch_optional(&state.pool)
    .await?;
    let password = password.to_owned();
    let verified = tokio::task::spawn_blocking(move || match user {
        Some((id, Some(hash), retired)) => {
            verify_password(&password, &hash).then_some((id, retired))
        }
        _ => {
            verify_password_dummy(&password);
            None
        }
    })
    .await
    .map_err(|e| OAuthError::Server(ApiError::Internal(e.into())))?;
    match verified {
        Some((user_id, false)) => {
            sqlx::query("DELETE FROM sign_in_failures WHERE lower(username) = lower($1)")
                .bind(username)
                .execute(&state.pool)
                .await?;
            let mut tx = state.pool.begin().await?;
            let grant = Uuid::new_v4();
            sqlx::query(
                "INSERT INTO oauth_grants (id, client_id, user_id, scopes) VALUES ($1, $2, $3, $4)",
            )
            .bind(grant)
            .bind(client.id)
            .bind(user_id)
            .bind(scopes.to_list())
            .execute(&mut *tx)
            .await?;
            let issued = issue(state, &mut tx, grant, scopes).await?;
            tx.commit().await?;
            Ok(issued)
        }
        Some((_, true)) => Err(invalid_grant("This account is retired.")),
        None => {
            sqlx::query("INSERT INTO sign_in_failures (username) VALUES (lower($1))")
                .bind(username)
                .execute(&state.pool)
                .await?;
            Err(invalid_grant("The username or password is wrong."))
        }
    }
}

async fn refresh_grant(
    state: &AppState,
    client: &Client,
    username: &str,
    refresh_token: &str,
    requested: Option<Scopes>,
) -> Result<TokenResponse, OAuthError> {
    let hash = token_hash(refresh_token);
    type Row = (Uuid, Vec<String>, bool, bool, i64, bool, bool, String);
    let row: Option<Row> = sqlx::query_as(
        "SELECT r.grant_id, r.scopes, r.used_at IS NOT NULL, r.expires_at <= now(), g.client_id,
                g.revoked_at IS NOT NULL, u.retired, u.login
         FROM refresh_tokens r JOIN oauth_grants g ON g.id = r.grant_id JOIN users u ON u.id = g.user_id
         WHERE r.token_hash = $1",
    )
    .bind(&hash)
    .fetch_optional(&state.pool)
    .await?;
    let Some((grant, scopes, used, expired, client_db_id, revoked, retired, login)) = row else {
        return Err(invalid_grant("The refresh token is not valid."));
    };
    if client_db_id != client.id || !login.eq_ignore_ascii_case(username) {
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
    let claimed = sqlx::query(
        "UPDATE refresh_tokens SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL",
    )
    .bind(&hash)
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
    sqlx::query("UPDATE oauth_grants SET revoked_at = now(), revoked_reason = $2 WHERE id = $1 AND revoked_at IS NULL")
        .bind(grant)
        .bind(reason)
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
    sqlx::query("INSERT INTO access_tokens (token_hash, grant_id, scopes, expires_at) VALUES ($1, $2, $3, $4)")
        .bind(token_hash(&access))
        .bind(grant)
        .bind(scopes.to_list())
        .bind(now + chrono::Duration::from_std(access_ttl).unwrap_or(chrono::Duration::hours(1)))
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO refresh_tokens (token_hash, grant_id, scopes, expires_at) VALUES ($1, $2, $3, $4)")
        .bind(token_hash(&refresh))
        .bind(grant)
        .bind(scopes.to_list())
        .bind(now + refresh_ttl)
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
