//! Consuming jobs: a supervised RabbitMQ connection, one channel and consumer
//! per job kind served, manual acks with a prefetch limit, and the settling of
//! each delivery: done (ack), retried later (one copy parked in the delay
//! queue of its wait, then ack), or dead-lettered (published to the
//! dead-letter exchange with why, then ack). On shutdown the consumers are
//! cancelled and the jobs in hand finish. docs/operations.md ("Retries",
//! "Failed jobs") describes the schedule and the dead-letter queue.

use std::time::Duration;

use anyhow::{anyhow, Context as _};
use futures_util::StreamExt;
use i9_common::{
    amqp::{self, Topology, ATTEMPT_HEADER, DELAY_HEADER, LEGACY_ATTEMPT_HEADER},
    dead_letters::{self, DeadLetter, DeadReason},
    jobs::{Envelope, JobKind},
    outbox,
    retry::RetryPolicy,
    trace,
};
use lapin::{
    message::Delivery,
    options::{
        BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicQosOptions,
        BasicRejectOptions, ConfirmSelectOptions,
    },
    types::{AMQPValue, FieldTable, ShortString},
    BasicProperties, Channel, Connection,
};
use tokio::sync::watch;
use tracing::Instrument as _;

use crate::{
    http::WorkerHealth,
    jobs::{self, JobError},
    metrics::{self as worker_metrics},
    Context,
};
use i9_common::metrics::JobOutcome;

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub kinds: Vec<JobKind>,
    pub topology: Topology,
    /// Unacknowledged deliveries per kind, and so jobs run at once per kind.
    pub prefetch: u16,
    pub retry: RetryPolicy,
    /// The retry policy of partner status callbacks (about a day).
    pub callback_retry: RetryPolicy,
    /// Limit on acks, rejects and the publishes that park or dead-letter a job.
    pub io_timeout: Duration,
    /// How often to look for job kinds that no worker consumes.
    pub consumer_check: Duration,
    /// How often the queues' depths are read into the metrics.
    pub sample_every: Duration,
    /// Where `/healthz` reads whether the broker connection is up.
    pub health: WorkerHealth,
}

impl WorkerConfig {
    pub fn new(kinds: Vec<JobKind>, topology: Topology) -> Self {
        Self {
            kinds,
            topology,
            prefetch: 8,
            retry: RetryPolicy::JOBS,
            callback_retry: RetryPolicy::CALLBACKS,
            io_timeout: Duration::from_secs(10),
            consumer_check: Duration::from_secs(60),
            sample_every: crate::metrics::SAMPLE_EVERY,
            health: WorkerHealth::default(),
        }
    }

    pub fn policy(&self, kind: JobKind) -> &RetryPolicy {
        if kind == JobKind::PostStatusCallback {
            &self.callback_retry
        } else {
            &self.retry
        }
    }

    /// The nominal waits of every policy this worker follows: its delay queues.
    pub fn waits(&self) -> Vec<Duration> {
        let mut waits: Vec<Duration> = self
            .kinds
            .iter()
            .flat_map(|k| self.policy(*k).waits())
            .collect();
        waits.sort();
        waits.dedup();
        waits
    }
}

/// Serve jobs until `shutdown` turns true; then finish the jobs in hand.
pub async fn run(
    ctx: Context,
    config: WorkerConfig,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    worker_metrics::describe(&config.kinds);
    let mut backoff = Duration::from_millis(200);
    loop {
        worker_metrics::broker_connected(false);
        if *shutdown.borrow() {
            return Ok(());
        }
        let connection = match amqp::connect(&ctx.config.amqp_url).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, ?backoff, "worker cannot reach RabbitMQ; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.changed() => return Ok(()),
                }
                backoff = (backoff * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        let mut tasks = match start_consumers(&ctx, &config, &connection, &shutdown).await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), ?backoff, "worker setup failed; reconnecting");
                let _ = connection.close(200, "setup failed".into()).await;
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.changed() => return Ok(()),
                }
                backoff = (backoff * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        backoff = Duration::from_millis(200);
        config.health.connected(connection.status().clone());
        worker_metrics::broker_connected(true);
        tracing::info!(kinds = ?config.kinds.iter().map(|k| k.name()).collect::<Vec<_>>(), "worker consuming");
        let watchdog = match connection.create_channel().await {
            Ok(ch) => Some(tokio::spawn(warn_unconsumed(
                ch,
                config.topology.clone(),
                config.consumer_check,
            ))),
            Err(_) => None,
        };
        let sampler = match connection.create_channel().await {
            Ok(ch) => Some(tokio::spawn(worker_metrics::sample_queues(
                ch,
                config.topology.clone(),
                config.sample_every,
            ))),
            Err(_) => None,
        };
        // Each consumer ends on shutdown (after draining) or when its channel
        // fails. On a failure, close the connection so that every consumer
        // ends, and let the jobs in hand finish: a job that has taken effect
        // records it, and its redelivery is then skipped.
        let mut failed = false;
        while let Some(result) = tasks.join_next().await {
            let error = match result {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => format!("{e:#}"),
                Err(e) => format!("consumer task failed: {e}"),
            };
            if !failed {
                tracing::warn!(%error, "consumer stopped; reconnecting once the jobs in hand finish");
                failed = true;
                let _ = connection.close(320, "reconnecting".into()).await;
            }
        }
        for task in [watchdog, sampler].into_iter().flatten() {
            task.abort();
        }
        worker_metrics::broker_connected(false);
        let _ = connection.close(200, "worker stopping".into()).await;
        if !failed {
            return Ok(());
        }
    }
}

async fn start_consumers(
    ctx: &Context,
    config: &WorkerConfig,
    connection: &Connection,
    shutdown: &watch::Receiver<bool>,
) -> anyhow::Result<tokio::task::JoinSet<anyhow::Result<()>>> {
    let ch = connection.create_channel().await?;
    config.topology.declare(&ch).await?;
    config.topology.declare_delays(&ch, &config.waits()).await?;
    let _ = ch.close(200, "declared".into()).await;
    config.topology.remove_legacy(connection).await;
    let mut tasks = tokio::task::JoinSet::new();
    for kind in &config.kinds {
        let channel = connection.create_channel().await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        channel
            .basic_qos(config.prefetch, BasicQosOptions::default())
            .await?;
        tasks.spawn(consume(
            ctx.clone(),
            config.clone(),
            channel,
            *kind,
            shutdown.clone(),
        ));
    }
    Ok(tasks)
}

/// Warn, every `every` (a minute), about each job kind whose queue no worker
/// consumes, with how many of its jobs wait: they would wait there for ever
/// (e.g. a `WORKER_KINDS` that leaves one out, or its worker stopped).
async fn warn_unconsumed(channel: Channel, topology: Topology, every: Duration) {
    // Let the other workers of a deployment start first.
    tokio::time::sleep(Duration::from_secs(5).min(every)).await;
    let mut watch = UnconsumedWatch::default();
    loop {
        for kind in JobKind::ALL {
            let queue = topology.queue(kind);
            let Ok(q) = i9_common::amqp::inspect_queue(&channel, &queue).await else {
                return; // the connection is going; the next one checks again
            };
            match watch.observe(kind, q.consumer_count(), q.message_count()) {
                Some(Unconsumed::Waiting(waiting)) => tracing::warn!(
                    kind = kind.name(),
                    %queue,
                    waiting,
                    "no worker consumes job kind {}: {waiting} job(s) wait in {queue} until one \
                     does (WORKER_KINDS of the workers)",
                    kind.name(),
                ),
                Some(Unconsumed::Consumed) => {
                    tracing::info!(kind = kind.name(), "a worker consumes this job kind again")
                }
                None => {}
            }
        }
        tokio::time::sleep(every).await;
    }
}

/// What one check of a job kind's queue calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unconsumed {
    /// No consumer: warn, with the jobs waiting (at every check while it lasts).
    Waiting(u32),
    /// A consumer again after a warning.
    Consumed,
}

/// The kinds found without a consumer, from one check to the next.
#[derive(Debug, Default)]
struct UnconsumedWatch {
    warned: std::collections::HashSet<JobKind>,
}

impl UnconsumedWatch {
    fn observe(&mut self, kind: JobKind, consumers: u32, waiting: u32) -> Option<Unconsumed> {
        if consumers == 0 {
            self.warned.insert(kind);
            Some(Unconsumed::Waiting(waiting))
        } else if self.warned.remove(&kind) {
            Some(Unconsumed::Consumed)
        } else {
            None
        }
    }
}

async fn consume(
    ctx: Context,
    config: WorkerConfig,
    channel: Channel,
    kind: JobKind,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let queue = config.topology.queue(kind);
    let consumer = channel
        .basic_consume(
            queue.as_str().into(),
            format!("{}-{}", kind.name(), uuid::Uuid::new_v4().simple()).into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .with_context(|| format!("consuming {queue}"))?;
    let tag = consumer.tag();
    // On shutdown, cancel the consumer: the broker stops delivering, the
    // stream ends, and the jobs in hand finish before this returns.
    let canceller = {
        let channel = channel.clone();
        async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
            let _ = channel
                .basic_cancel(tag, BasicCancelOptions::default())
                .await;
        }
    };
    let work = consumer
        .map(|delivery| {
            let ctx = ctx.clone();
            let config = config.clone();
            let channel = channel.clone();
            async move {
                match delivery {
                    Ok(d) => process(&ctx, &config, &channel, kind, d).await,
                    Err(e) => Err(anyhow!(e)),
                }
            }
        })
        .buffer_unordered(config.prefetch.max(1) as usize)
        .fold(
            Ok(()),
            |acc: anyhow::Result<()>, r| async move { acc.and(r) },
        );
    tokio::select! {
        r = work => r,
        _ = async { canceller.await; std::future::pending::<()>().await } => Ok(()),
    }
}

/// The attempt a delivery carries: 1 for a job fresh from the outbox.
fn attempt_of(d: &Delivery) -> u32 {
    let headers = d.properties.headers().as_ref();
    [ATTEMPT_HEADER, LEGACY_ATTEMPT_HEADER]
        .iter()
        .find_map(|name| headers.and_then(|h| h.inner().get(*name)).cloned())
        .and_then(|v| match v {
            AMQPValue::LongLongInt(n) => u32::try_from(n).ok(),
            AMQPValue::LongInt(n) => u32::try_from(n).ok(),
            AMQPValue::LongUInt(n) => Some(n),
            _ => None,
        })
        .unwrap_or(1)
        .max(1)
}

/// What to do with a delivery once its handler has run.
enum Settle {
    Done,
    Retry {
        error: anyhow::Error,
    },
    /// Another copy holds the job's claim: wait for it to lapse, and try
    /// again with the same attempt number.
    Wait {
        lapses_in: Duration,
    },
    Dead {
        reason: DeadReason,
        error: anyhow::Error,
    },
}

/// The trace context and request id a delivery carries (headers
/// `traceparent`, `tracestate`, `x-request-id`; `i9_common::trace`).
fn trace_fields(d: &Delivery) -> trace::Fields {
    let mut fields = trace::Fields::new();
    let Some(headers) = d.properties.headers() else {
        return fields;
    };
    for name in [trace::TRACEPARENT, trace::TRACESTATE, trace::REQUEST_ID] {
        if let Some(AMQPValue::LongString(v)) = headers.inner().get(name) {
            if let Ok(v) = std::str::from_utf8(v.as_bytes()) {
                fields.insert(name.to_owned(), v.to_owned());
            }
        }
    }
    fields
}

/// Handle one delivery and settle it, in a span of its own: the job's kind,
/// id and attempt, its request id, and its trace id (the trace its message
/// carries, continued; docs/operations.md, "Logs"), on every line the job
/// logs.
async fn process(
    ctx: &Context,
    config: &WorkerConfig,
    channel: &Channel,
    kind: JobKind,
    d: Delivery,
) -> anyhow::Result<()> {
    let attempt = attempt_of(&d);
    let env = Envelope::decode(&d.data);
    let span = tracing::info_span!(
        "job",
        otel.name = kind.name(),
        otel.kind = "consumer",
        kind = kind.name(),
        job_id = tracing::field::Empty,
        attempt,
        trace_id = tracing::field::Empty,
        request_id = tracing::field::Empty,
    );
    if let Ok(env) = &env {
        span.record("job_id", tracing::field::display(env.job_id));
    }
    trace::continue_trace(&span, &trace_fields(&d));
    // The jobs this one records are published once it has committed.
    outbox::waking_relays(
        &ctx.pool,
        run_and_settle(ctx, config, channel, kind, d, attempt, env).instrument(span),
    )
    .await
}

/// Run the job of a delivery and settle it: ack, park for a retry, or dead-letter.
async fn run_and_settle(
    ctx: &Context,
    config: &WorkerConfig,
    channel: &Channel,
    kind: JobKind,
    d: Delivery,
    attempt: u32,
    env: Result<Envelope, i9_common::jobs::DecodeError>,
) -> anyhow::Result<()> {
    let policy = config.policy(kind);
    let started = std::time::Instant::now();
    let outcome = match &env {
        Err(e) => Err(JobError::Fatal(anyhow!("{e}"))),
        Ok(env) if env.job.kind() != kind => Err(JobError::Fatal(anyhow!(
            "a {} job on the {} queue",
            env.job.kind().name(),
            kind.name()
        ))),
        Ok(env) => jobs::handle(ctx, env).await,
    };
    let took = started.elapsed();
    let job_id = env
        .as_ref()
        .map(|e| e.job_id.to_string())
        .unwrap_or_default();
    let settle = match outcome {
        Ok(()) => Settle::Done,
        Err(JobError::Fatal(error)) => Settle::Dead {
            reason: DeadReason::Fatal,
            error,
        },
        Err(JobError::Retryable(error)) if policy.exhausted(attempt) => Settle::Dead {
            reason: DeadReason::Exhausted,
            error,
        },
        Err(JobError::Retryable(error)) => Settle::Retry { error },
        Err(JobError::Busy { lapses_in }) => Settle::Wait { lapses_in },
    };
    if let (Settle::Dead { .. }, Ok(env)) = (&settle, &env) {
        jobs::on_dead_letter(ctx, env).await;
    }
    let io = config.io_timeout;
    let parked = match &settle {
        Settle::Done => Ok(()),
        Settle::Retry { error } => {
            let wait = policy.delay(attempt);
            let nominal = policy.nominal(attempt);
            tracing::warn!(kind = kind.name(), %job_id, attempt, retry_in_ms = wait.as_millis() as u64, error = %format!("{error:#}"), "job failed; will retry");
            park(channel, config, kind, &d, attempt + 1, nominal, wait).await
        }
        Settle::Wait { lapses_in } => {
            // The shortest wait of the policy that covers the claim, and the
            // claim's own remaining time (plus a little) as the copy's expiry.
            let waits = policy.waits();
            let nominal = waits
                .iter()
                .copied()
                .find(|w| *w >= *lapses_in)
                .or(waits.last().copied())
                .unwrap_or(policy.base);
            let wait = (*lapses_in + Duration::from_millis(500)).min(nominal * 2);
            tracing::info!(kind = kind.name(), %job_id, attempt, retry_in_ms = wait.as_millis() as u64, "another copy of this job is under way (or its worker died); trying again when its claim lapses");
            park(channel, config, kind, &d, attempt, nominal, wait).await
        }
        Settle::Dead { reason, error } => {
            let error = format!("{error:#}");
            tracing::error!(kind = kind.name(), %job_id, attempt, reason = reason.as_str(), %error, "job failed for good; dead-lettering it");
            let dead = DeadLetter {
                job_id: env.as_ref().ok().map(|e| e.job_id),
                kind,
                attempt,
                error: &error,
                reason: *reason,
            };
            dead_letters::publish_traced(
                channel,
                &config.topology,
                &d.data,
                &dead,
                d.properties.headers().as_ref(),
                io,
            )
            .await
        }
    };
    let settled = match (&settle, &parked) {
        (_, Err(_)) => JobOutcome::Requeued,
        (Settle::Done, Ok(())) => JobOutcome::Done,
        (Settle::Retry { .. }, Ok(())) => JobOutcome::Retried,
        (Settle::Wait { .. }, Ok(())) => JobOutcome::Waited,
        (Settle::Dead { .. }, Ok(())) => JobOutcome::DeadLettered,
    };
    worker_metrics::job_settled(kind, settled, took);
    if let (JobOutcome::Done, Some(enqueued)) = (settled, d.properties.timestamp()) {
        worker_metrics::job_done_since(kind, *enqueued);
    }
    match parked {
        Ok(()) => timed(
            "ack",
            tokio::time::timeout(io, amqp::settle(d.acker.ack(BasicAckOptions::default()))).await,
        ),
        Err(err) => {
            // Could not park it: hand it back (RabbitMQ's delivery limit bounds
            // this, and dead-letters it past the limit).
            tracing::warn!(kind = kind.name(), %job_id, error = %format!("{err:#}"), "could not park the job; requeueing it");
            timed(
                "reject",
                tokio::time::timeout(
                    io,
                    amqp::settle(d.acker.reject(BasicRejectOptions { requeue: true })),
                )
                .await,
            )
        }
    }
}

fn timed(
    what: &'static str,
    r: Result<anyhow::Result<()>, tokio::time::error::Elapsed>,
) -> anyhow::Result<()> {
    match r {
        Ok(r) => r.map_err(|e| anyhow!("{what}: {e}")),
        Err(_) => Err(anyhow!("{what} timed out")),
    }
}

/// The delivery's own headers without RabbitMQ's (`x-death` and the like):
/// the attempt, and the trace context and request id, which a parked copy
/// keeps (`x-request-id` is ours).
fn own_headers(d: &Delivery) -> FieldTable {
    let mut headers = FieldTable::default();
    if let Some(h) = d.properties.headers() {
        for (name, value) in h.inner() {
            if !name.as_str().starts_with("x-") || name.as_str() == trace::REQUEST_ID {
                headers.insert(name.clone(), value.clone());
            }
        }
    }
    headers
}

/// Park one copy of the delivery in the delay queue of `nominal`, expiring
/// after `wait`, to come back as attempt `attempt`.
async fn park(
    channel: &Channel,
    config: &WorkerConfig,
    kind: JobKind,
    d: &Delivery,
    attempt: u32,
    nominal: Duration,
    wait: Duration,
) -> anyhow::Result<()> {
    let props = job_properties(d, retry_headers(d, attempt, nominal))
        .with_expiration(ShortString::from(wait.as_millis().max(1).to_string()));
    amqp::publish_confirmed(
        channel,
        &config.topology.delay_exchange(),
        kind.name(),
        &d.data,
        props,
        config.io_timeout,
    )
    .await
}

/// The headers of a parked copy: the attempt it will be, and its delay queue.
fn retry_headers(d: &Delivery, attempt: u32, nominal: Duration) -> FieldTable {
    let mut headers = own_headers(d);
    headers.insert(
        ATTEMPT_HEADER.into(),
        AMQPValue::LongLongInt(i64::from(attempt)),
    );
    headers.insert(DELAY_HEADER.into(), Topology::delay_header(nominal));
    headers
}

fn job_properties(d: &Delivery, headers: FieldTable) -> BasicProperties {
    let mut props = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_headers(headers);
    if let Some(id) = d.properties.message_id() {
        props = props.with_message_id(id.clone());
    }
    // The job's enqueue time (the relay's), for its latency to done.
    if let Some(enqueued) = d.properties.timestamp() {
        props = props.with_timestamp(*enqueued);
    }
    props
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_without_a_consumer_is_warned_about_at_every_check_until_one_comes() {
        let mut watch = UnconsumedWatch::default();
        let kind = JobKind::PostStatusCallback;
        // Three checks (three minutes) without a consumer: three warnings,
        // each with the jobs waiting then.
        let warnings: Vec<_> = [1, 3, 7]
            .into_iter()
            .map(|waiting| watch.observe(kind, 0, waiting))
            .collect();
        assert_eq!(warnings, [1, 3, 7].map(|w| Some(Unconsumed::Waiting(w))));
        // Another kind, consumed all along, is never mentioned.
        assert_eq!(watch.observe(JobKind::CreateI9, 2, 0), None);
        // A consumer comes: said once, then nothing.
        assert_eq!(watch.observe(kind, 1, 0), Some(Unconsumed::Consumed));
        assert_eq!(watch.observe(kind, 1, 0), None);
        // An empty queue without a consumer is still worth a line: its next job would wait.
        assert_eq!(watch.observe(kind, 0, 0), Some(Unconsumed::Waiting(0)));
    }
}
