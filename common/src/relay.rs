//! The outbox relay: publishes committed jobs from `job_outbox` to RabbitMQ
//! and marks them published.
//!
//! - Wakes after the commit of a write of its own process that recorded a job
//!   ([`crate::outbox::waking_relays`]), on `NOTIFY i9_outbox` (sent after
//!   the commit by a process without a relay), and polls as a fallback, so a
//!   lost wake-up delays a job by at most the poll interval.
//! - Claims rows with `FOR UPDATE SKIP LOCKED`: several relays (one per API
//!   and worker process) share the work and never publish a row at the same time.
//! - Publishes with publisher confirms and `mandatory`: a row is marked only
//!   after the broker acked it, and a nack, a returned (unroutable) message or
//!   a confirm that does not arrive in time counts as a failure. A row whose
//!   publish was confirmed but whose mark failed is published again later;
//!   handlers are idempotent by job id.
//! - Publishes a job's trace context and request id (`job_outbox.trace`) as
//!   the message's headers `traceparent`, `tracestate` and `x-request-id`
//!   (docs/operations.md, "Logs").
//! - Supervises its own broker connection: when RabbitMQ goes away, writes
//!   keep committing to the outbox, and the relay reconnects with backoff and
//!   drains the backlog when the broker returns. The backoff starts again
//!   from its minimum only once a link has worked (published a job, or stayed
//!   up for [`LINK_PROVEN_AFTER`]): a link that opens and fails at once keeps
//!   backing off.

use std::time::Duration;

use anyhow::{anyhow, Context};
use lapin::{
    options::{BasicPublishOptions, ConfirmSelectOptions},
    types::{AMQPValue, FieldTable, ShortString},
    BasicProperties, Channel, Confirmation, Connection,
};
use secrecy::SecretString;
use sqlx::{postgres::PgListener, types::Json, PgPool};
use tokio::sync::watch;
use uuid::Uuid;

use crate::{
    amqp::Topology,
    outbox::{self, NOTIFY_CHANNEL},
    trace,
};

const MIN_BACKOFF: Duration = Duration::from_millis(200);
/// A link up this long without a failure has worked.
const LINK_PROVEN_AFTER: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct RelayConfig {
    pub amqp_url: SecretString,
    pub topology: Topology,
    /// Rows claimed per round.
    pub batch: i64,
    /// Fallback poll when no notification arrives.
    pub poll: Duration,
    /// Limit on one publish and on waiting for its confirm.
    pub publish_timeout: Duration,
    /// Longest wait between reconnection attempts.
    pub max_backoff: Duration,
}

impl RelayConfig {
    pub fn new(amqp_url: impl Into<SecretString>, topology: Topology) -> Self {
        Self {
            amqp_url: amqp_url.into(),
            topology,
            batch: 200,
            poll: Duration::from_secs(2),
            publish_timeout: Duration::from_secs(10),
            max_backoff: Duration::from_secs(10),
        }
    }
}

/// A confirmed-publish channel and the connection that carries it.
struct Link {
    _connection: Connection,
    channel: Channel,
    opened: std::time::Instant,
}

impl Link {
    async fn open(config: &RelayConfig) -> anyhow::Result<Self> {
        let connection = tokio::time::timeout(
            config.publish_timeout,
            crate::amqp::connect(&config.amqp_url),
        )
        .await
        .map_err(|_| anyhow!("timed out connecting to RabbitMQ"))??;
        let channel = connection.create_channel().await?;
        config.topology.declare(&channel).await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        Ok(Self {
            _connection: connection,
            channel,
            opened: std::time::Instant::now(),
        })
    }

    fn usable(&self) -> bool {
        self.channel.status().connected()
    }
}

/// Run until `shutdown` turns true.
pub async fn run(pool: PgPool, config: RelayConfig, mut shutdown: watch::Receiver<bool>) {
    let mut link: Option<Link> = None;
    let mut backoff = MIN_BACKOFF;
    // Woken after the commits of this process's writes (outbox::waking_relays),
    // and by a NOTIFY from a process without a relay of its own.
    let mut local = outbox::LocalRelay::register();
    let mut listener = listen(&pool).await;
    loop {
        if *shutdown.borrow() {
            break;
        }
        // A wake-up from now on starts another round after this one.
        local.wakes.borrow_and_update();
        if link.as_ref().is_some_and(|l| !l.usable()) {
            tracing::warn!(
                ?backoff,
                "outbox relay lost its RabbitMQ connection; reconnecting"
            );
            link = None;
            if sleep_or_shutdown(backoff, &mut shutdown).await {
                break;
            }
            backoff = (backoff * 2).min(config.max_backoff);
        }
        if link.is_none() {
            match Link::open(&config).await {
                Ok(l) => {
                    if backoff > MIN_BACKOFF {
                        tracing::info!("outbox relay reconnected to RabbitMQ");
                    }
                    // The backoff resets only once this link has worked (below).
                    link = Some(l);
                }
                Err(e) => {
                    tracing::warn!(error = %e, ?backoff, "outbox relay cannot reach RabbitMQ; jobs wait in the outbox");
                    link = None;
                    if sleep_or_shutdown(backoff, &mut shutdown).await {
                        break;
                    }
                    backoff = (backoff * 2).min(config.max_backoff);
                    continue;
                }
            }
        }
        let Some(l) = &link else { continue };
        let result = publish_batch(&pool, &l.channel, &config).await;
        if result.as_ref().is_ok_and(|n| *n > 0) || l.opened.elapsed() >= LINK_PROVEN_AFTER {
            backoff = MIN_BACKOFF;
        }
        match result {
            Ok(n) if n as i64 >= config.batch => continue,
            Ok(_) => {
                // Idle: wait for a notification, the poll interval, or shutdown.
                tokio::select! {
                    _ = local.wakes.changed() => {}
                    _ = wait_notification(&mut listener, &pool) => {}
                    _ = tokio::time::sleep(config.poll) => {}
                    _ = shutdown.changed() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "outbox relay: publishing failed; reconnecting");
                link = None;
                if sleep_or_shutdown(backoff, &mut shutdown).await {
                    break;
                }
                backoff = (backoff * 2).min(config.max_backoff);
            }
        }
    }
    tracing::info!("outbox relay stopped");
}

async fn listen(pool: &PgPool) -> Option<PgListener> {
    let mut l = PgListener::connect_with(pool).await.ok()?;
    l.listen(NOTIFY_CHANNEL).await.ok()?;
    Some(l)
}

async fn wait_notification(listener: &mut Option<PgListener>, pool: &PgPool) {
    match listener {
        Some(l) => {
            if l.recv().await.is_err() {
                // The listener reconnects on its next use; meanwhile polling covers.
                *listener = None;
            }
        }
        None => {
            *listener = listen(pool).await;
            std::future::pending::<()>().await
        }
    }
}

/// True when shutdown was requested during the sleep.
async fn sleep_or_shutdown(d: Duration, shutdown: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => *shutdown.borrow(),
        _ = shutdown.changed() => true,
    }
}

/// An unpublished outbox row, as the relay reads it.
struct OutboxRow {
    id: i64,
    job_id: Uuid,
    kind: String,
    payload: serde_json::Value,
    created_at: chrono::DateTime<chrono::Utc>,
    trace: Option<Json<trace::Fields>>,
}

/// A job's trace context and request id as message headers of the same
/// names (`traceparent`, `tracestate`, `x-request-id`; `crate::trace`).
fn trace_headers(fields: &trace::Fields) -> FieldTable {
    let mut headers = FieldTable::default();
    for name in [trace::TRACEPARENT, trace::TRACESTATE, trace::REQUEST_ID] {
        if let Some(value) = fields.get(name) {
            headers.insert(name.into(), AMQPValue::LongString(value.as_str().into()));
        }
    }
    headers
}

/// Publish one batch of unpublished jobs; returns how many were confirmed.
async fn publish_batch(
    pool: &PgPool,
    channel: &Channel,
    config: &RelayConfig,
) -> anyhow::Result<usize> {
    let mut tx = pool.begin().await?;
    let rows = sqlx::query_as!(
        OutboxRow,
        r#"SELECT id, job_id, kind, payload, created_at, trace AS "trace: Json<trace::Fields>"
         FROM job_outbox WHERE published_at IS NULL
         ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"#,
        config.batch,
    )
    .fetch_all(&mut *tx)
    .await?;
    if rows.is_empty() {
        return Ok(0);
    }
    let exchange = config.topology.jobs_exchange();
    let mut pending = Vec::with_capacity(rows.len());
    let mut failed: Vec<(i64, String)> = Vec::new();
    for OutboxRow {
        id,
        job_id,
        kind,
        payload,
        created_at,
        trace,
    } in &rows
    {
        let body = serde_json::to_vec(payload)?;
        let mut props = BasicProperties::default()
            .with_delivery_mode(2)
            .with_content_type("application/json".into())
            .with_message_id(job_id.to_string().into())
            // When the job was enqueued (seconds), for the worker's
            // enqueue-to-done latency (docs/operations.md, "Metrics").
            .with_timestamp(u64::try_from(created_at.timestamp()).unwrap_or_default());
        if let Some(Json(fields)) = trace {
            props = props.with_headers(trace_headers(fields));
        }
        // A kind no AMQP routing key can carry (over 255 bytes) fails its row
        // here: a `ShortString` from it would panic.
        let Ok(routing_key) = ShortString::try_new(kind.as_str()) else {
            failed.push((*id, "its kind is too long for a routing key".into()));
            continue;
        };
        let publish = channel.basic_publish(
            exchange.as_str().into(),
            routing_key,
            BasicPublishOptions {
                mandatory: true,
                ..Default::default()
            },
            &body,
            props,
        );
        match tokio::time::timeout(config.publish_timeout, publish).await {
            Ok(Ok(confirm)) => pending.push((*id, confirm)),
            Ok(Err(e)) => failed.push((*id, format!("publish failed: {e}"))),
            Err(_) => failed.push((*id, "publish timed out".into())),
        }
    }
    let mut confirmed = Vec::with_capacity(pending.len());
    for (id, confirm) in pending {
        match tokio::time::timeout(config.publish_timeout, confirm).await {
            Ok(Ok(Confirmation::Ack(None))) => confirmed.push(id),
            Ok(Ok(Confirmation::Ack(Some(_)))) => failed.push((
                id,
                "returned by the broker: no queue is bound for this kind".into(),
            )),
            Ok(Ok(Confirmation::Nack(_))) => failed.push((id, "nacked by the broker".into())),
            Ok(Ok(Confirmation::NotRequested)) => {
                failed.push((id, "publisher confirms are off".into()))
            }
            Ok(Err(e)) => failed.push((id, format!("confirm failed: {e}"))),
            Err(_) => failed.push((id, "no confirm within the timeout".into())),
        }
    }
    // The fault suite's crash window (`failpoints` builds only; FAILPOINTS=relay-before-mark=return):
    // confirmed by the broker, not yet marked. The process dies at once, as with SIGKILL.
    #[cfg(feature = "failpoints")]
    {
        static ARMED: std::sync::Once = std::sync::Once::new();
        ARMED.call_once(|| std::mem::forget(fail::FailScenario::setup()));
        fail::fail_point!("relay-before-mark", |_| std::process::abort());
    }
    sqlx::query!(
        "UPDATE job_outbox SET published_at = now(), attempts = attempts + 1 WHERE id = ANY($1)",
        &confirmed,
    )
    .execute(&mut *tx)
    .await?;
    for (id, error) in &failed {
        sqlx::query!(
            "UPDATE job_outbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1",
            id,
            error,
        )
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await.context("marking published jobs")?;
    tracing::debug!(
        ok = confirmed.len(),
        failed = failed.len(),
        "outbox batch relayed"
    );
    if let Some((_, first)) = failed.first() {
        return Err(anyhow!(
            "{} of {} jobs not confirmed ({first})",
            failed.len(),
            rows.len()
        ));
    }
    Ok(confirmed.len())
}
