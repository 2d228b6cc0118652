//! `Idempotency-Key` on POST: the first request with a key claims it in the
//! write's own transaction; the same key with the same request within 24 hours
//! replays its result without writing again; with a different request it is a
//! 422.
//!
//! The record keeps what identifies the result (status, `Location`, the id of
//! the resource, the I-9 request whose Section 1 link the answer carried),
//! never the response itself: a replay is rendered afresh, under the caller's
//! rights at the time of the replay (docs/api.md, "Writing employees"). So no
//! personal data or live link token is kept here (SECURITY.md, "Where the data is").
//! Records older than 24 hours are never replayed, and the worker purges them.

use axum::{
    body::Bytes,
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use i9_common::{config::IDEMPOTENCY_WINDOW, crypto::DataCipher};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::error::{ApiError, FieldError};

pub const HEADER: &str = "idempotency-key";

/// The key of a request, if it sent one.
pub fn key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let mut values = headers.get_all(HEADER).iter();
    let Some(v) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        // Which of two keys would a retry name? Neither is taken.
        return Err(ApiError::BadRequest {
            detail: "The Idempotency-Key header is given more than once.".into(),
            errors: vec![FieldError::new(
                "Idempotency-Key",
                "repeated",
                "Send one Idempotency-Key header.",
            )],
        });
    }
    match v.to_str() {
        Ok(s) if !s.trim().is_empty() && s.len() <= 255 => Ok(Some(s.trim().to_owned())),
        _ => Err(ApiError::BadRequest {
            detail: "The Idempotency-Key header is not valid.".into(),
            errors: vec![FieldError::new(
                "Idempotency-Key",
                "invalid_format",
                "1 to 255 ASCII characters: visible ones, with spaces or tabs only between them.",
            )],
        }),
    }
}

/// What a create produced, as kept for its replays.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// The employee created (or re-hired).
    pub resource_id: i64,
    /// The I-9 request whose Section 1 link the answer carried (its token is
    /// kept encrypted in `i9_requests`).
    pub section1_request: Option<Uuid>,
}

/// An earlier request with the same key and body finished: answer as it did.
#[derive(Debug)]
pub struct Replay {
    status: StatusCode,
    location: Option<String>,
    pub outcome: Outcome,
}

impl Replay {
    /// The replayed answer: the first one's status and `Location`, `body`
    /// rendered now, and `idempotent-replayed: true`.
    pub fn respond<T: serde::Serialize>(self, body: &T) -> Result<Response, ApiError> {
        let mut r = json_response(self.status, body)?;
        if let Some(loc) = self.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
            r.headers_mut().insert(header::LOCATION, loc);
        }
        r.headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
        Ok(r)
    }
}

fn json_response<T: serde::Serialize>(status: StatusCode, body: &T) -> Result<Response, ApiError> {
    let body = Bytes::from(serde_json::to_vec(body).map_err(|e| ApiError::Internal(e.into()))?);
    Ok((status, [(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// An `idempotency_keys` row: the request's fingerprint, and the answer once
/// recorded.
struct IdempotencyRecord {
    request_hash: Vec<u8>,
    response_status: Option<i16>,
    response_headers: Option<serde_json::Value>,
    resource_id: Option<i64>,
    section1_request_id: Option<Uuid>,
}

/// Claim `key` for this request inside `tx`. `Ok(None)`: go ahead and write.
/// `Ok(Some(replay))`: an earlier request with the same key and body
/// finished; render its result. A concurrent request with the same key waits
/// on the row lock until the first commits or rolls back.
pub async fn claim(
    tx: &mut PgConnection,
    cipher: &DataCipher,
    user_id: i64,
    key: &str,
    path: &str,
    body: &[u8],
) -> Result<Option<Replay>, ApiError> {
    // The same request is the same JSON, however it is spaced or its members
    // ordered: a client retrying from other code gets its replay. Keyed: the
    // body may hold an SSN and a date of birth.
    let canonical = canonical_json(body);
    let request = [path.as_bytes(), b"\n", canonical.as_deref().unwrap_or(body)].concat();
    let hash = cipher.request_fingerprint(&request);
    // Records made before requests were compared as JSON: their raw bytes.
    let raw = [path.as_bytes(), b"\n", body].concat();
    // One statement claims the key: a new one is inserted; one whose record
    // is older than the window is taken over (its record reset), as if it
    // had been purged; a live one is left alone (no row affected) and read
    // below. A concurrent claim of the same key waits for this transaction.
    let inserted = sqlx::query!(
        "INSERT INTO idempotency_keys (user_id, idempotency_key, request_path, request_hash)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (user_id, idempotency_key) DO UPDATE
           SET request_path = EXCLUDED.request_path, request_hash = EXCLUDED.request_hash,
               response_status = NULL, response_headers = NULL, resource_id = NULL,
               section1_request_id = NULL, created_at = now()
           WHERE idempotency_keys.created_at < now() - make_interval(secs => $5)",
        user_id,
        key,
        path,
        &hash,
        IDEMPOTENCY_WINDOW.as_secs_f64(),
    )
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() == 1 {
        return Ok(None);
    }
    let IdempotencyRecord {
        request_hash: stored_hash,
        response_status: status,
        response_headers: headers,
        resource_id,
        section1_request_id: section1_request,
    } = sqlx::query_as!(
        IdempotencyRecord,
        "SELECT request_hash, response_status, response_headers, resource_id, section1_request_id
         FROM idempotency_keys WHERE user_id = $1 AND idempotency_key = $2",
        user_id,
        key,
    )
    .fetch_one(&mut *tx)
    .await?;
    if !cipher.request_fingerprint_matches(&stored_hash, &request)
        && !cipher.request_fingerprint_matches(&stored_hash, &raw)
    {
        return Err(ApiError::Validation(vec![FieldError::new(
            "Idempotency-Key",
            "reused",
            "This key was used with a different request in the last 24 hours.",
        )]));
    }
    match (status, resource_id) {
        (Some(status), Some(resource_id)) => Ok(Some(Replay {
            status: StatusCode::from_u16(status as u16).unwrap_or(StatusCode::OK),
            location: headers.and_then(|h| h["location"].as_str().map(str::to_owned)),
            outcome: Outcome {
                resource_id,
                section1_request,
            },
        })),
        // Claimed by a request that committed without its outcome: cannot
        // happen (it is saved in the same transaction), but never write twice.
        _ => Err(ApiError::Conflict(
            "A request with this Idempotency-Key is still in progress.".into(),
        )),
    }
}

/// Finish a create: keep its outcome for `key` (if any) in the write's
/// transaction, commit it, and answer 201 with `Location` and `value`.
pub async fn created<T: serde::Serialize>(
    tx: Option<sqlx::Transaction<'_, sqlx::Postgres>>,
    user_id: i64,
    key: Option<&str>,
    outcome: Outcome,
    location: String,
    value: &T,
) -> Result<Response, ApiError> {
    let mut response = json_response(StatusCode::CREATED, value)?;
    if let Some(mut tx) = tx {
        if let Some(key) = key {
            save(
                &mut tx,
                user_id,
                key,
                StatusCode::CREATED,
                &location,
                outcome,
            )
            .await?;
        }
        tx.commit().await?;
    }
    if let Ok(v) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    Ok(response)
}

/// Store the outcome of the request that claimed `key`, in its transaction.
async fn save(
    tx: &mut PgConnection,
    user_id: i64,
    key: &str,
    status: StatusCode,
    location: &str,
    outcome: Outcome,
) -> Result<(), ApiError> {
    sqlx::query!(
        "UPDATE idempotency_keys SET response_status = $3, response_headers = $4,
                resource_id = $5, section1_request_id = $6
         WHERE user_id = $1 AND idempotency_key = $2",
        user_id,
        key,
        status.as_u16() as i16,
        serde_json::json!({ "location": location }),
        outcome.resource_id,
        outcome.section1_request,
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// `body` as JSON written one way: members in key order, no white space.
/// `None` when it is not JSON (the write refuses it before this matters).
fn canonical_json(body: &[u8]) -> Option<Vec<u8>> {
    fn write(value: &serde_json::Value, out: &mut Vec<u8>) -> serde_json::Result<()> {
        match value {
            serde_json::Value::Object(members) => {
                let mut members: Vec<_> = members.iter().collect();
                members.sort_by(|a, b| a.0.cmp(b.0));
                out.push(b'{');
                for (i, (name, value)) in members.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut *out, name)?;
                    out.push(b':');
                    write(value, out)?;
                }
                out.push(b'}');
            }
            serde_json::Value::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(item, out)?;
                }
                out.push(b']');
            }
            scalar => serde_json::to_writer(&mut *out, scalar)?,
        }
        Ok(())
    }
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let mut out = Vec::with_capacity(body.len());
    write(&value, &mut out).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::canonical_json;

    #[test]
    fn the_same_json_is_written_one_way() {
        let a = canonical_json(br#"{"lastName":"Ivy","firstName":"Ana","n":[1,{"b":2,"a":1}]}"#);
        let b = canonical_json(
            b"{ \"firstName\" : \"Ana\",\n  \"n\": [1, {\"a\": 1, \"b\": 2}], \"lastName\": \"Ivy\" }",
        );
        assert_eq!(a, b);
        assert_eq!(
            a.unwrap(),
            br#"{"firstName":"Ana","lastName":"Ivy","n":[1,{"a":1,"b":2}]}"#
        );
        assert_ne!(
            canonical_json(br#"{"a":"1"}"#),
            canonical_json(br#"{"a":1}"#),
            "another value is another request"
        );
        assert_eq!(canonical_json(b"not json"), None);
    }
}
