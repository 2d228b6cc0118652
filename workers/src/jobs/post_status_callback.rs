//! `post_status_callback`: post one partner status event to the partner's
//! `integrationHrUrl`, signed as Standard Webhooks describes (`webhook-id`,
//! `webhook-timestamp`, `webhook-signature`: HMAC-SHA256 with the partner's
//! `whsec_` secret; while a replaced secret is in its overlap, one signature
//! per secret, `common/src/signing_secrets.rs`). A 2xx is delivery; 410 Gone stops the retries; anything
//! else is retried with backoff (the worker's callback policy). Every
//! attempt is recorded in `callback_attempts`. Each post carries a W3C
//! `traceparent`, a child of the job's span, outside the signature.
//!
//! The destination is guarded by [`crate::callback_client`]: https to a
//! public address unless `ALLOW_PRIVATE_CALLBACKS` is true, the address
//! checked is the one connected to, no proxy, no redirects.
//!
//! An event is posted by one copy of its job at a time and never again once a
//! partner answered 2xx ([`super::claim`], keyed by the event id).
//!
//! Reads `partner_events`, `employees`, `oauth_clients`,
//! `previous_signing_secrets`; writes
//! `callback_attempts`, `partner_events.delivered_at` and `processed_jobs`.

use std::time::Instant;

use chrono::Utc;
use i9_common::{signing_secrets, trace};
use tracing::Instrument as _;
use uuid::Uuid;

use super::{claim, JobError, JobResult};
use crate::{
    callback_client::{self, Attempt},
    Context,
};

pub const KIND: &str = "post_status_callback";

/// A partner event, whether it was delivered, and where and with what its
/// partner's callbacks are sent.
struct EventRow {
    payload: serde_json::Value,
    delivered: bool,
    integration_hr_url: Option<String>,
    signing_secret_ciphertext: Option<Vec<u8>>,
    client_id: i64,
    /// The partner's client id, the label of its callback metrics.
    partner: String,
}

pub async fn run(ctx: &Context, event_id: Uuid) -> JobResult {
    let row = sqlx::query_as!(
        EventRow,
        r#"SELECT ev.payload, ev.delivered_at IS NOT NULL AS "delivered!", c.integration_hr_url,
                c.signing_secret_ciphertext, c.id AS client_id, c.client_id AS partner
         FROM partner_events ev
         JOIN employees e ON e.id = ev.employee_id
         JOIN oauth_clients c ON c.id = e.integration_client_id
         WHERE ev.id = $1"#,
        event_id,
    )
    .fetch_optional(&ctx.pool)
    .await?;
    let Some(EventRow {
        payload,
        delivered,
        integration_hr_url: url,
        signing_secret_ciphertext: secret,
        client_id: client,
        partner,
    }) = row
    else {
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
            signing_secrets::SigningError::Undecryptable(e) => JobError::from(e).context(format!(
                "a signing secret of the partner of event {event_id}"
            )),
            other => JobError::Fatal(anyhow::anyhow!("{other}")),
        })?;

    // One copy at a time posts an event, and never one that was delivered.
    if !claim::begin(&ctx.pool, event_id, KIND, claim::CALLBACK_HOLD).await? {
        return Ok(());
    }
    let started = Instant::now();
    let outcome = deliver(ctx, &url, &msg_id, timestamp, &signature, body).await;
    let took = started.elapsed();
    crate::metrics::callback_attempted(&partner, outcome_label(&outcome), took);
    let elapsed = took.as_millis().min(i32::MAX as u128) as i32;
    let (status, error) = match &outcome {
        Ok(code) => (Some(i32::from(*code)), None),
        Err(Attempt::Refused(e) | Attempt::Failed(e)) => (None, Some(e.clone())),
    };
    let delivered = matches!(outcome, Ok(code) if (200..300).contains(&code));
    // The attempt, and a delivery, are recorded together, retried while the
    // database is unavailable: a delivered event must not be posted again.
    let recorded = claim::until_recorded(claim::RECORD_PATIENCE, || async {
        let mut tx = ctx.pool.begin().await?;
        sqlx::query!(
            "INSERT INTO callback_attempts (event_id, http_status, duration_ms, error) VALUES ($1, $2, $3, $4)",
            event_id,
            status,
            elapsed,
            error.as_deref(),
        )
        .execute(&mut *tx)
        .await?;
        if delivered {
            sqlx::query!(
                "UPDATE partner_events SET delivered_at = now(), dead_at = NULL WHERE id = $1",
                event_id,
            )
            .execute(&mut *tx)
            .await?;
            claim::done(&mut tx, event_id, KIND).await?;
        }
        tx.commit().await
    })
    .await;
    if delivered {
        match recorded {
            Ok(()) => tracing::info!(
                %event_id,
                status = status.unwrap_or_default(),
                duration_ms = elapsed,
                "callback delivered"
            ),
            Err(e) => {
                tracing::error!(%event_id, error = %e, "the partner took the callback but the delivery could not be recorded; a later copy would post it again")
            }
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

/// The `outcome` label of a callback attempt (docs/operations.md, "Metrics"):
/// the status class of the partner's answer (`2xx`, `3xx`, `4xx`, `410`,
/// `5xx`), or `timeout` (no answer within the limit), `unreachable` (no
/// connection), `refused` (a destination never to be sent to), `failed`.
fn outcome_label(outcome: &Result<u16, Attempt>) -> &'static str {
    match outcome {
        Ok(code) => i9_common::metrics::status_class(*code),
        Err(Attempt::Refused(_)) => "refused",
        Err(Attempt::Failed(e)) if e.starts_with(callback_client::TIMED_OUT) => "timeout",
        Err(Attempt::Failed(e)) if e.starts_with(callback_client::CANNOT_CONNECT) => "unreachable",
        Err(Attempt::Failed(_)) => "failed",
    }
}

async fn deliver(
    ctx: &Context,
    url: &str,
    msg_id: &str,
    timestamp: i64,
    signature: &str,
    body: Vec<u8>,
) -> Result<u16, Attempt> {
    let (parsed, client) =
        callback_client::connect(url, ctx.config.allow_private_callbacks).await?;
    // The post is a span of its own, a child of the job's: its
    // `traceparent` lets the partner join the trace (docs/partners.md,
    // "Status callbacks"). Not signed: it says nothing of the event.
    let span = tracing::info_span!("callback", otel.kind = "client");
    let mut request = client
        .post(parsed)
        .header("content-type", "application/json")
        .header("user-agent", "i9-records-callbacks/1")
        .header("webhook-id", msg_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature);
    if let Some(traceparent) = trace::traceparent_of(&span) {
        request = request.header(trace::TRACEPARENT, traceparent);
    }
    let response = request
        .body(body)
        .send()
        .instrument(span)
        .await
        .map_err(|e| Attempt::Failed(callback_client::describe(&e.without_url(), url)))?;
    Ok(response.status().as_u16())
}
