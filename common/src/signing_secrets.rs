//! Partner signing secrets and their rotation with an overlap
//! (docs/partners.md, "Signing secret rotation"; docs/operations.md,
//! "Rotating a partner's signing secret").
//!
//! A partner client's current `whsec_` secret is
//! `oauth_clients.signing_secret_ciphertext`. When it is replaced (`i9-admin
//! partners rotate-secret`, or `i9-admin seed --rotate-secrets` with another
//! `signingSecret`), the old one moves to `previous_signing_secrets` and keeps
//! signing until its overlap ends: meanwhile every callback carries one
//! signature per valid secret, space-separated in one `webhook-signature`
//! header as Standard Webhooks allows, so the partner verifies with whichever
//! secret it holds. A rotation ends every earlier overlap, so at most two
//! secrets sign. All of them stay encrypted under the data key; the commands
//! name them by the dates they were set ([`SecretName`]), never by value.

use std::time::Duration;

use base64::{engine::general_purpose::STANDARD, Engine as _};
use chrono::{DateTime, Utc};
use rand::RngCore;
use sqlx::PgConnection;

use crate::crypto::{token_hash, DataCipher, DecryptError, Purpose};

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
    #[error("a signing secret cannot be decrypted: {0}")]
    Undecryptable(#[from] DecryptError),
    #[error("the overlap is too long")]
    OverlapTooLong,
    #[error("signing failed: {0}")]
    Sign(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// A client's current signing secret (its ciphertext) and when it was set,
/// read with the database's clock.
struct CurrentSecret {
    signing_secret_ciphertext: Option<Vec<u8>>,
    signing_secret_set_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
}

/// A replaced secret, as a rotation takes it out of `previous_signing_secrets`.
struct PreviousSecret {
    secret_ciphertext: Vec<u8>,
    set_at: Option<DateTime<Utc>>,
    replaced_at: DateTime<Utc>,
    still_valid: bool,
}

/// A replaced secret whose overlap is ended.
struct EndedSecret {
    set_at: Option<DateTime<Utc>>,
    replaced_at: DateTime<Utc>,
    still_valid: bool,
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
    let previous = sqlx::query_scalar!(
        "SELECT secret_ciphertext FROM previous_signing_secrets
         WHERE oauth_client_id = $1 AND valid_until > now()
         ORDER BY replaced_at DESC, id DESC",
        client,
    )
    .fetch_all(db)
    .await?;
    std::iter::once(current)
        .chain(previous.iter().map(Vec::as_slice))
        .map(|ct| {
            cipher
                .decrypt(Purpose::SigningSecret, ct)
                .map_err(SigningError::Undecryptable)
                .and_then(|b| {
                    String::from_utf8(b)
                        .map_err(|_| SigningError::Undecryptable(DecryptError::Invalid))
                })
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

/// A signing secret named without being shown: by when it became current
/// (`oauth_clients.signing_secret_set_at`, kept as
/// `previous_signing_secrets.set_at`), or, for a secret set before those dates
/// were recorded, by when it was replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretName {
    pub set_at: Option<DateTime<Utc>>,
    pub replaced_at: DateTime<Utc>,
}

/// How a secret's dates are written: UTC, to the second.
fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

impl std::fmt::Display for SecretName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.set_at {
            Some(t) => write!(f, "the secret set on {}", when(t)),
            None => write!(
                f,
                "the secret replaced on {} (set before such dates were recorded)",
                when(self.replaced_at)
            ),
        }
    }
}

/// A replaced secret, and when it stops signing (`None`: now).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    pub secret: SecretName,
    pub until: Option<DateTime<Utc>>,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.until {
            Some(t) => write!(
                f,
                "{} also signs callbacks until {}, then stops",
                self.secret,
                when(t)
            ),
            None => write!(f, "{} no longer signs callbacks", self.secret),
        }
    }
}

fn same_secret(cipher: &DataCipher, ciphertext: &[u8], plain: &[u8]) -> bool {
    cipher
        .decrypt(Purpose::SigningSecret, ciphertext)
        .is_ok_and(|p| p == plain)
}

/// Make `new_ciphertext` client `client`'s current secret. At most one
/// replaced secret signs (docs/partners.md, "Signing secret rotation"): the
/// overlap of every earlier one ends now, and the one it replaces keeps
/// signing for `overlap` (zero: not at all). Returns each secret that stops
/// signing and when, the one just replaced first; nothing if the new secret is
/// already the current one.
pub async fn replace(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    client: i64,
    new_ciphertext: &[u8],
    overlap: Duration,
) -> Result<Vec<Stop>, SigningError> {
    let new_plain = cipher.decrypt(Purpose::SigningSecret, new_ciphertext)?;
    let CurrentSecret {
        signing_secret_ciphertext: old,
        signing_secret_set_at: set_at,
        now,
    } = sqlx::query_as!(
        CurrentSecret,
        r#"SELECT signing_secret_ciphertext, signing_secret_set_at, now() AS "now!"
         FROM oauth_clients WHERE id = $1 FOR UPDATE"#,
        client,
    )
    .fetch_one(&mut *conn)
    .await?;
    if old
        .as_deref()
        .is_some_and(|old| same_secret(cipher, old, &new_plain))
    {
        return Ok(Vec::new());
    }
    let until = chrono::Duration::from_std(overlap)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .ok_or(SigningError::OverlapTooLong)?;
    let mut earlier = sqlx::query_as!(
        PreviousSecret,
        r#"DELETE FROM previous_signing_secrets WHERE oauth_client_id = $1
         RETURNING secret_ciphertext, set_at, replaced_at, valid_until > now() AS "still_valid!""#,
        client,
    )
    .fetch_all(&mut *conn)
    .await?;
    earlier.sort_by_key(|e| std::cmp::Reverse(e.replaced_at));
    sqlx::query!(
        "UPDATE oauth_clients SET signing_secret_ciphertext = $2, signing_secret_set_at = now(),
             updated_at = now()
         WHERE id = $1",
        client,
        new_ciphertext,
    )
    .execute(&mut *conn)
    .await?;
    let mut stops = Vec::new();
    if let Some(old) = old {
        retire(&mut *conn, cipher, client, &old).await?;
        let secret = SecretName {
            set_at,
            replaced_at: now,
        };
        if overlap.is_zero() {
            stops.push(Stop {
                secret,
                until: None,
            });
        } else {
            sqlx::query!(
                "INSERT INTO previous_signing_secrets
                     (oauth_client_id, secret_ciphertext, set_at, replaced_at, valid_until)
                 VALUES ($1, $2, $3, now(), $4)",
                client,
                old,
                set_at,
                until,
            )
            .execute(&mut *conn)
            .await?;
            stops.push(Stop {
                secret,
                until: Some(until),
            });
        }
    }
    // An earlier secret equal to the new one signs on, as the current one.
    stops.extend(
        earlier
            .into_iter()
            .filter(|e| e.still_valid && !same_secret(cipher, &e.secret_ciphertext, &new_plain))
            .map(|e| Stop {
                secret: SecretName {
                    set_at: e.set_at,
                    replaced_at: e.replaced_at,
                },
                until: None,
            }),
    );
    Ok(stops)
}

/// Whether `secret` is one of client `client_id`'s replaced secrets: any
/// ever replaced (`retired_signing_secrets`), or, for one replaced before that
/// record existed, one still stored.
pub async fn is_replaced(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    client_id: &str,
    secret: &str,
) -> Result<bool, sqlx::Error> {
    let retired = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM retired_signing_secrets r
                        JOIN oauth_clients c ON c.id = r.oauth_client_id
                        WHERE c.client_id = $1 AND r.secret_sha256 = $2) AS "retired!""#,
        client_id,
        token_hash(secret),
    )
    .fetch_one(&mut *conn)
    .await?;
    if retired {
        return Ok(true);
    }
    // Replaced before `retired_signing_secrets` existed: only while stored.
    let replaced = sqlx::query_scalar!(
        "SELECT p.secret_ciphertext FROM previous_signing_secrets p
         JOIN oauth_clients c ON c.id = p.oauth_client_id WHERE c.client_id = $1",
        client_id,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(replaced
        .iter()
        .any(|ct| same_secret(cipher, ct, secret.as_bytes())))
}

/// Record a replaced secret (its ciphertext) for good, as its SHA-256
/// (migration `20261124008001`), so that it never becomes current again.
async fn retire(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    client: i64,
    ciphertext: &[u8],
) -> Result<(), SigningError> {
    let plain = cipher.decrypt(Purpose::SigningSecret, ciphertext)?;
    let plain =
        String::from_utf8(plain).map_err(|_| SigningError::Undecryptable(DecryptError::Invalid))?;
    sqlx::query!(
        "INSERT INTO retired_signing_secrets (oauth_client_id, secret_sha256) VALUES ($1, $2)
         ON CONFLICT DO NOTHING",
        client,
        token_hash(&plain),
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// End the overlap of client `client`'s replaced secrets now; returns those
/// that were still signing.
pub async fn end_overlap(
    conn: &mut PgConnection,
    client: i64,
) -> Result<Vec<SecretName>, sqlx::Error> {
    let mut ended = sqlx::query_as!(
        EndedSecret,
        r#"DELETE FROM previous_signing_secrets WHERE oauth_client_id = $1
         RETURNING set_at, replaced_at, valid_until > now() AS "still_valid!""#,
        client,
    )
    .fetch_all(&mut *conn)
    .await?;
    ended.sort_by_key(|e| std::cmp::Reverse(e.replaced_at));
    Ok(ended
        .into_iter()
        .filter(|e| e.still_valid)
        .map(|e| SecretName {
            set_at: e.set_at,
            replaced_at: e.replaced_at,
        })
        .collect())
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
