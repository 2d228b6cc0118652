//! `Idempotency-Key` on POST: the first response to a key is stored in the
//! write's own transaction and replayed for 24 hours; the same key with a
//! different body is a 422.

use axum::{
    body::Bytes,
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use sha2::{Digest, Sha256};
use sqlx::PgConnection;

use crate::error::{ApiError, FieldError};

pub const HEADER: &str = "idempotency-key";

/// The key of a request, if it sent one.
pub fn key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get(HEADER) else {
        return Ok(None);
    };
    match v.to_str() {
        Ok(s) if !s.trim().is_empty() && s.len() <= 255 => Ok(Some(s.trim().to_owned())),
        _ => Err(ApiError::BadRequest {
            detail: "The Idempotency-Key header is not valid.".into(),
            errors: vec![FieldError::new(
                "Idempotency-Key",
                "invalid_format",
                "1 to 255 visible ASCII characters.",
            )],
        }),
    }
}

/// A stored response.
pub struct Saved {
    status: u16,
    location: Option<String>,
    body: Vec<u8>,
}

impl IntoResponse for Saved {
    fn into_response(self) -> Response {
        let mut r = (
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK),
            [(header::CONTENT_TYPE, "application/json")],
            self.body,
        )
            .into_response();
        if let Some(loc) = self.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
            r.headers_mut().insert(header::LOCATION, loc);
        }
        r.headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
        r
    }
}

/// Claim `key` for this request inside `tx`. `Ok(None)`: go ahead and write.
/// `Ok(Some(saved))`: an earlier request with the same key and body finished;
/// answer with its response. A concurrent request with the same key waits on
/// the row lock until the first commits or rolls back.
pub async fn claim(
    tx: &mut PgConnection,
    user_id: i64,
    key: &str,
    path: &str,
    body: &[u8],
) -> Result<Option<Saved>, ApiError> {
    let hash = Sha256::new()
        .chain_update(path.as_bytes())
        .chain_update(b"\n")
        .chain_update(body)
        .finalize()
        .to_vec();
    sqlx::query(
        "DELETE FROM idempotency_keys WHERE user_id = $1 AND idempotency_key = $2 AND created_at < now() - interval '24 hours'",
    )
    .bind(user_id)
    .bind(key)
    .execute(&mut *tx)
    .await?;
    let inserted = sqlx::query(
        "INSERT INTO idempotency_keys (user_id, idempotency_key, request_path, request_hash)
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
    )
    .bind(user_id)
    .bind(key)
    .bind(path)
    .bind(&hash)
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() == 1 {
        return Ok(None);
    }
    let (stored_hash, status, headers, saved_body): (
        Vec<u8>,
        Option<i16>,
        Option<serde_json::Value>,
        Option<Vec<u8>>,
    ) = sqlx::query_as(
        "SELECT request_hash, response_status, response_headers, response_body
             FROM idempotency_keys WHERE user_id = $1 AND idempotency_key = $2",
    )
    .bind(user_id)
    .bind(key)
    .fetch_one(&mut *tx)
    .await?;
    if stored_hash != hash {
        return Err(ApiError::Validation(vec![FieldError::new(
            "Idempotency-Key",
            "reused",
            "This key was used with a different request in the last 24 hours.",
        )]));
    }
    match (status, saved_body) {
        (Some(status), Some(body)) => Ok(Some(Saved {
            status: status as u16,
            location: headers.and_then(|h| h["location"].as_str().map(str::to_owned)),
            body,
        })),
        // Claimed by a request that committed without a response: cannot happen
        // (the response is saved in the same transaction), but never write twice.
        _ => Err(ApiError::Conflict(
            "A request with this Idempotency-Key is still in progress.".into(),
        )),
    }
}

/// Finish a create: keep the answer for `key` (if any) in the write's
/// transaction, commit it, and answer 201 with `Location`.
pub async fn created<T: serde::Serialize>(
    tx: Option<sqlx::Transaction<'_, sqlx::Postgres>>,
    user_id: i64,
    key: Option<&str>,
    location: String,
    value: &T,
) -> Result<Response, ApiError> {
    let body = Bytes::from(serde_json::to_vec(value).map_err(|e| ApiError::Internal(e.into()))?);
    if let Some(mut tx) = tx {
        if let Some(key) = key {
            save(
                &mut tx,
                user_id,
                key,
                StatusCode::CREATED,
                Some(&location),
                &body,
            )
            .await?;
        }
        tx.commit().await?;
    }
    let mut response = (
        StatusCode::CREATED,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    Ok(response)
}

/// Store the response of the request that claimed `key`, in its transaction.
pub async fn save(
    tx: &mut PgConnection,
    user_id: i64,
    key: &str,
    status: StatusCode,
    location: Option<&str>,
    body: &Bytes,
) -> Result<(), ApiError> {
    sqlx::query(
        "UPDATE idempotency_keys SET response_status = $3, response_headers = $4, response_body = $5
         WHERE user_id = $1 AND idempotency_key = $2",
    )
    .bind(user_id)
    .bind(key)
    .bind(status.as_u16() as i16)
    .bind(serde_json::json!({ "location": location }))
    .bind(body.as_ref())
    .execute(&mut *tx)
    .await?;
    Ok(())
}
