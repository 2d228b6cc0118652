//! `post_status_callback`: post one partner status event to the partner's
//! `integrationHrUrl`, signed as Standard Webhooks describes (`webhook-id`,
//! `webhook-timestamp`, `webhook-signature`: HMAC-SHA256 with the partner's
//! `whsec_` secret; while a replaced secret is in its overlap, one signature
//! per secret, `common/src/signing_secrets.rs`). A 2xx is delivery; 410 Gone stops the retries; anything
//! else is retried with backoff (the worker's callback policy). Every
//! attempt is recorded in `callback_attempts`.
//!
//! The destination must not be a private, loopback or link-local address
//! unless `ALLOW_PRIVATE_CALLBACKS` is true; the address checked is the one
//! connected to (no second DNS lookup), and redirects are not followed.
//!
//! An event is posted by one copy of its job at a time and never again once a
//! partner answered 2xx ([`super::claim`], keyed by the event id).
//!
//! Reads `partner_events`, `employees`, `oauth_clients`,
//! `previous_signing_secrets`; writes
//! `callback_attempts`, `partner_events.delivered_at` and `processed_jobs`.

use std::{
    net::{IpAddr, SocketAddr},
    time::{Duration, Instant},
};

use chrono::Utc;
use i9_common::signing_secrets;
use uuid::Uuid;

use super::{claim, JobError, JobResult};
use crate::Context;

pub const KIND: &str = "post_status_callback";

pub async fn run(ctx: &Context, event_id: Uuid) -> JobResult {
    let row: Option<(serde_json::Value, bool, Option<String>, Option<Vec<u8>>, i64)> = sqlx::query_as(
        "SELECT ev.payload, ev.delivered_at IS NOT NULL, c.integration_hr_url, c.signing_secret_ciphertext, c.id
         FROM partner_events ev
         JOIN employees e ON e.id = ev.employee_id
         JOIN oauth_clients c ON c.id = e.integration_client_id
         WHERE ev.id = $1",
    )
    .bind(event_id)
    .fetch_optional(&ctx.pool)
    .await?;
    let Some((payload, delivered, url, secret, client)) = row else {
        return Err(JobError::Fatal(anyhow::anyhow!(
            "partner event {event_id} does not exist"
        )));
    };
    if delivered {
        super::skipped(KIND, event_id);
        return Ok(());
    }
    let (Some(url), Some(secret)) = (url, secret) else {
        return Err(JobError::Fatal(anyhow::anyhow!(
            "the partner of event {event_id} has no callback URL or secret"
        )));
    };
    let secrets = signing_secrets::valid(&ctx.pool, &ctx.cipher, client, &secret).await;
    let body = serde_json::to_vec(&payload).map_err(|e| JobError::Fatal(e.into()))?;
    let timestamp = Utc::now().timestamp();
    let msg_id = event_id.to_string();
    let signature = secrets
        .and_then(|secrets| signing_secrets::signature_header(&secrets, &msg_id, timestamp, &body))
        .map_err(|e| match e {
            signing_secrets::SigningError::Database(e) => JobError::from(e),
            other => JobError::Fatal(anyhow::anyhow!("{other}")),
        })?;

    // One copy at a time posts an event, and never one that was delivered.
    if !claim::begin(&ctx.pool, event_id, KIND, claim::CALLBACK_HOLD).await? {
        return Ok(());
    }
    let started = Instant::now();
    let outcome = deliver(ctx, &url, &msg_id, timestamp, &signature, body).await;
    let elapsed = started.elapsed().as_millis().min(i32::MAX as u128) as i32;
    let (status, error) = match &outcome {
        Ok(code) => (Some(i32::from(*code)), None),
        Err(Attempt::Refused(e) | Attempt::Failed(e)) => (None, Some(e.clone())),
    };
    let delivered = matches!(outcome, Ok(code) if (200..300).contains(&code));
    // The attempt, and a delivery, are recorded together, retried while the
    // database is unavailable: a delivered event must not be posted again.
    let recorded = claim::until_recorded(claim::RECORD_PATIENCE, || async {
        let mut tx = ctx.pool.begin().await?;
        sqlx::query("INSERT INTO callback_attempts (event_id, http_status, duration_ms, error) VALUES ($1, $2, $3, $4)")
            .bind(event_id)
            .bind(status)
            .bind(elapsed)
            .bind(&error)
            .execute(&mut *tx)
            .await?;
        if delivered {
            sqlx::query("UPDATE partner_events SET delivered_at = now(), dead_at = NULL WHERE id = $1")
                .bind(event_id)
                .execute(&mut *tx)
                .await?;
            claim::done(&mut tx, event_id, KIND).await?;
        }
        tx.commit().await
    })
    .await;
    if delivered {
        if let Err(e) = recorded {
            tracing::error!(%event_id, error = %e, "the partner took the callback but the delivery could not be recorded; a later copy would post it again");
        }
        return Ok(());
    }
    claim::release(&ctx.pool, event_id).await;
    recorded?;
    match outcome {
        Ok(410) => Err(JobError::Fatal(anyhow::anyhow!(
            "the partner answered 410 Gone; not retried"
        ))),
        Ok(code) => Err(JobError::Retryable(anyhow::anyhow!(
            "the partner answered {code}"
        ))),
        Err(Attempt::Refused(e)) => Err(JobError::Fatal(anyhow::anyhow!(e))),
        Err(Attempt::Failed(e)) => Err(JobError::Retryable(anyhow::anyhow!(e))),
    }
}

enum Attempt {
    /// Never to be sent (a bad or forbidden destination).
    Refused(String),
    /// Worth trying again.
    Failed(String),
}

async fn deliver(
    ctx: &Context,
    url: &str,
    msg_id: &str,
    timestamp: i64,
    signature: &str,
    body: Vec<u8>,
) -> Result<u16, Attempt> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|_| Attempt::Refused("the callback URL is not a URL".into()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Attempt::Refused("the callback URL must be http(s)".into()));
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| Attempt::Refused("the callback URL has no host".into()))?
        .to_owned();
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|e| Attempt::Failed(format!("cannot resolve the callback host: {e}")))?
        .collect();
    let Some(addr) = addrs.first().copied() else {
        return Err(Attempt::Failed(
            "the callback host resolves to nothing".into(),
        ));
    };
    if !ctx.config.allow_private_callbacks && addrs.iter().any(|a| is_private(a.ip())) {
        return Err(Attempt::Refused(
            "refused: the callback URL resolves to a private, loopback or link-local address (ALLOW_PRIVATE_CALLBACKS is off)".into(),
        ));
    }
    // Connect to the address just checked, not to a second lookup's answer.
    let client = reqwest::Client::builder()
        .resolve(&host, addr)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(15))
        .build()
        .map_err(|e| Attempt::Failed(format!("HTTP client: {e}")))?;
    let response = client
        .post(parsed)
        .header("content-type", "application/json")
        .header("user-agent", "i9-records-callbacks/1")
        .header("webhook-id", msg_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body)
        .send()
        .await
        .map_err(|e| Attempt::Failed(format!("request failed: {}", e.without_url())))?;
    Ok(response.status().as_u16())
}

/// Addresses a callback may not reach unless private callbacks are allowed.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1])) // shared address space
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || v6.to_ipv4_mapped().is_some_and(|v4| is_private(IpAddr::V4(v4)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "151.101.1.1", "2606:4700::1111"] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }
}
