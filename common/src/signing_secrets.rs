//! Partner signing secrets and their rotation with an overlap
//! (docs/partners.md, "Signing secret rotation"; docs/operations.md, "Keys
//! and rotation").
//!
//! A partner client's current `whsec_` secret is
//! `oauth_clients.signing_secret_ciphertext`. When it is replaced (`i9-admin
//! partners rotate-secret`, or `i9-admin seed` with another `signingSecret`),
//! the old one moves to `previous_signing_secrets` and keeps signing until its
//! overlap ends: meanwhile every callback carries one signature per valid
//! secret, space-separated in one `webhook-signature` header as Standard
//! Webhooks allows, so the partner verifies with whichever secret it holds.
//! All of them stay encrypted under the data key.

use std::time::Duration;

use base64::{engine::general_purpose::STANDARD, Engine as _};
use chrono::{DateTime, Utc};
use rand::RngCore;
use sqlx::PgConnection;

use crate::crypto::{DataCipher, Purpose};

/// How long a replaced secret keeps signing, unless the operator says
/// otherwise: a week covers a partner's change process and a weekend.
pub const DEFAULT_OVERLAP: Duration = Duration::from_secs(7 * 24 * 3600);

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("whsec_{}", STANDARD.encode(bytes))
}

#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    #[error("a signing secret cannot be decrypted")]
    Undecryptable,
    #[error("signing failed: {0}")]
    Sign(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// The secrets a callback for client `client` (`oauth_clients.id`) is signed
/// with: `current` (its ciphertext), then every replaced one whose overlap
/// has not ended, newest first.
pub async fn valid(
    db: impl sqlx::PgExecutor<'_>,
    cipher: &DataCipher,
    client: i64,
    current: &[u8],
) -> Result<Vec<String>, SigningError> {
    let previous: Vec<Vec<u8>> = sqlx::query_scalar(
        "SELECT secret_ciphertext FROM previous_signing_secrets
         WHERE oauth_client_id = $1 AND valid_until > now()
         ORDER BY replaced_at DESC, id DESC",
    )
    .bind(client)
    .fetch_all(db)
    .await?;
    std::iter::once(current)
        .chain(previous.iter().map(Vec::as_slice))
        .map(|ct| {
            cipher
                .decrypt(Purpose::SigningSecret, ct)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or(SigningError::Undecryptable)
        })
        .collect()
}

/// The `webhook-signature` header: `v1,<signature>` for each secret,
/// space-separated (Standard Webhooks).
pub fn signature_header(
    secrets: &[String],
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
) -> Result<String, SigningError> {
    let signatures = secrets
        .iter()
        .map(|secret| {
            standardwebhooks::Webhook::new(secret)
                .and_then(|wh| wh.sign(msg_id, timestamp, body))
                .map_err(|e| SigningError::Sign(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(signatures.join(" "))
}

/// Make `new_ciphertext` client `client`'s current secret; the one it
/// replaces keeps signing for `overlap` (zero: not at all). Returns when the
/// replaced one stops, if it signs at all. Replaced secrets equal to the new
/// one are dropped (a return to an earlier secret signs once), and so are
/// those whose overlap has ended.
pub async fn replace(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    client: i64,
    new_ciphertext: &[u8],
    overlap: Duration,
) -> Result<Option<DateTime<Utc>>, SigningError> {
    let old: Option<Option<Vec<u8>>> = sqlx::query_scalar(
        "SELECT signing_secret_ciphertext FROM oauth_clients WHERE id = $1 FOR UPDATE",
    )
    .bind(client)
    .fetch_optional(&mut *conn)
    .await?;
    let new_plain = cipher
        .decrypt(Purpose::SigningSecret, new_ciphertext)
        .map_err(|_| SigningError::Undecryptable)?;
    sqlx::query(
        "UPDATE oauth_clients SET signing_secret_ciphertext = $2, updated_at = now() WHERE id = $1",
    )
    .bind(client)
    .bind(new_ciphertext)
    .execute(&mut *conn)
    .await?;
    let until = Utc::now() + chrono::Duration::from_std(overlap).unwrap_or(chrono::Duration::MAX);
    let mut stops = None;
    if let Some(old) = old.flatten() {
        let same = cipher
            .decrypt(Purpose::SigningSecret, &old)
            .is_ok_and(|p| p == new_plain);
        if !same && !overlap.is_zero() {
            sqlx::query(
                "INSERT INTO previous_signing_secrets (oauth_client_id, secret_ciphertext, valid_until)
                 VALUES ($1, $2, $3)",
            )
            .bind(client)
            .bind(old)
            .bind(until)
            .execute(&mut *conn)
            .await?;
            stops = Some(until);
        }
    }
    let previous: Vec<(i64, Vec<u8>, bool)> = sqlx::query_as(
        "SELECT id, secret_ciphertext, valid_until > now() FROM previous_signing_secrets
         WHERE oauth_client_id = $1",
    )
    .bind(client)
    .fetch_all(&mut *conn)
    .await?;
    let drop: Vec<i64> = previous
        .into_iter()
        .filter(|(_, ct, valid)| {
            !valid
                || cipher
                    .decrypt(Purpose::SigningSecret, ct)
                    .is_ok_and(|p| p == new_plain)
        })
        .map(|(id, _, _)| id)
        .collect();
    sqlx::query("DELETE FROM previous_signing_secrets WHERE id = ANY($1)")
        .bind(&drop)
        .execute(&mut *conn)
        .await?;
    Ok(stops)
}

/// End the overlap of client `client`'s replaced secrets now; returns how many stopped.
pub async fn end_overlap(conn: &mut PgConnection, client: i64) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query("DELETE FROM previous_signing_secrets WHERE oauth_client_id = $1")
            .bind(client)
            .execute(&mut *conn)
            .await?
            .rows_affected(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_secret_is_a_valid_whsec_of_32_random_bytes() {
        let s = generate();
        assert_eq!(
            crate::seed::decode_signing_secret(&s).map(|b| b.len()),
            Some(32)
        );
        assert_ne!(s, generate());
    }

    #[test]
    fn the_header_carries_one_signature_per_secret_each_verifying() {
        let (a, b) = (generate(), generate());
        let header =
            signature_header(&[a.clone(), b.clone()], "msg_1", 1_700_000_000, b"{}").unwrap();
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.starts_with("v1,")));
        for secret in [a, b] {
            let wh = standardwebhooks::Webhook::new(&secret).unwrap();
            let own = wh.sign("msg_1", 1_700_000_000, b"{}").unwrap();
            assert!(parts.contains(&own.as_str()));
        }
    }
}
