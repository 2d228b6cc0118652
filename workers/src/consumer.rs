//! Consuming jobs: a supervised RabbitMQ connection, one channel and consumer
//! per job kind served, manual acks with a prefetch limit, retries through the
//! delay queues, dead-lettering of fatal and exhausted jobs, and a drain of
//! in-flight jobs on shutdown.

use std::time::Duration;

use anyhow::{anyhow, Context as _};
use futures_util::StreamExt;
use i9_common::{
    amqp::{self, retry_bucket, Topology, ATTEMPT_HEADER, BUCKET_HEADER},
    jobs::{Envelope, JobKind},
    retry::RetryPolicy,
};
use lapin::{
    message::Delivery,
    options::{
        BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicPublishOptions,
        BasicQosOptions, BasicRejectOptions, ConfirmSelectOptions,
    },
    publisher_confirm::Confirmation,
    types::{AMQPValue, FieldTable},
    BasicProperties, Channel,
};
use tokio::sync::watch;

use crate::{
    jobs::{self, JobError},
    Context,
};

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub kinds: Vec<JobKind>,
    pub topology: Topology,
    /// Unacknowledged deliveries per kind, and so jobs run at once per kind.
    pub prefetch: u16,
    pub retry: RetryPolicy,
    /// The retry policy of partner status callbacks (about a day).
    pub callback_retry: RetryPolicy,
    /// Limit on acks, rejects and retry publishes.
    pub io_timeout: Duration,
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
        }
    }
}

/// Serve jobs until `shutdown` turns true; then finish the jobs in hand.
pub async fn run(
    ctx: Context,
    config: WorkerConfig,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let mut backoff = Duration::from_millis(200);
    loop {
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
        backoff = Duration::from_millis(200);
        let setup = async {
            let ch = connection.create_channel().await?;
            config.topology.declare(&ch).await?;
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
            anyhow::Ok(tasks)
        };
        let mut tasks = match setup.await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, "worker setup failed; reconnecting");
                continue;
            }
        };
        tracing::info!(kinds = ?config.kinds.iter().map(|k| k.name()).collect::<Vec<_>>(), "worker consuming");
        // Each consumer ends on shutdown (after draining) or when the connection fails.
        let mut failed = false;
        while let Some(result) = tasks.join_next().await {
            match result {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "consumer stopped; reconnecting");
                    failed = true;
                    break;
                }
                Err(e) => {
                    tracing::error!(error = %e, "consumer task failed");
                    failed = true;
                    break;
                }
            }
        }
        tasks.abort_all();
        let _ = connection.close(200, "worker stopping").await;
        if !failed {
            return Ok(());
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
            &queue,
            &format!("{}-{}", kind.name(), uuid::Uuid::new_v4().simple()),
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
                .basic_cancel(tag.as_str(), BasicCancelOptions::default())
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

fn attempt_of(d: &Delivery) -> u32 {
    d.properties
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(ATTEMPT_HEADER).cloned())
        .and_then(|v| match v {
            AMQPValue::LongLongInt(n) => u32::try_from(n).ok(),
            AMQPValue::LongInt(n) => u32::try_from(n).ok(),
            AMQPValue::LongUInt(n) => Some(n),
            _ => None,
        })
        .unwrap_or(1)
}

/// Handle one delivery and settle it: ack, retry later, or dead-letter.
async fn process(
    ctx: &Context,
    config: &WorkerConfig,
    channel: &Channel,
    kind: JobKind,
    d: Delivery,
) -> anyhow::Result<()> {
    let attempt = attempt_of(&d);
    let env = Envelope::decode(&d.data);
    let outcome = match &env {
        Err(e) => Err(JobError::Fatal(anyhow!("{e}"))),
        Ok(env) if env.job.kind() != kind => Err(JobError::Fatal(anyhow!(
            "a {} job on the {} queue",
            env.job.kind().name(),
            kind.name()
        ))),
        Ok(env) => jobs::handle(ctx, env).await,
    };
    let policy = if kind == JobKind::PostStatusCallback {
        &config.callback_retry
    } else {
        &config.retry
    };
    let dead = matches!(&outcome, Err(JobError::Fatal(_)))
        || (matches!(&outcome, Err(JobError::Retryable(_))) && policy.exhausted(attempt));
    if dead {
        if let Ok(env) = &env {
            jobs::on_dead_letter(ctx, env).await;
        }
    }
    let io = config.io_timeout;
    let timed = |what: &'static str| {
        move |r: Result<Result<(), lapin::Error>, tokio::time::error::Elapsed>| match r {
            Ok(r) => r.map_err(|e| anyhow!("{what}: {e}")),
            Err(_) => Err(anyhow!("{what} timed out")),
        }
    };
    match outcome {
        Ok(()) => {
            timed("ack")(tokio::time::timeout(io, d.acker.ack(BasicAckOptions::default())).await)
        }
        Err(JobError::Fatal(e)) => {
            tracing::error!(kind = kind.name(), error = %format!("{e:#}"), "job failed for good; dead-lettering it");
            timed("reject")(
                tokio::time::timeout(io, d.acker.reject(BasicRejectOptions { requeue: false }))
                    .await,
            )
        }
        Err(JobError::Retryable(e)) if policy.exhausted(attempt) => {
            tracing::error!(kind = kind.name(), attempt, error = %format!("{e:#}"), "job failed on its last attempt; dead-lettering it");
            timed("reject")(
                tokio::time::timeout(io, d.acker.reject(BasicRejectOptions { requeue: false }))
                    .await,
            )
        }
        Err(JobError::Retryable(e)) => {
            let delay = policy.delay(attempt);
            let bucket = retry_bucket(delay);
            tracing::warn!(kind = kind.name(), attempt, retry_in_secs = bucket, error = %format!("{e:#}"), "job failed; will retry");
            match schedule_retry(channel, &config.topology, &d, attempt + 1, bucket, io).await {
                Ok(()) => timed("ack")(
                    tokio::time::timeout(io, d.acker.ack(BasicAckOptions::default())).await,
                ),
                Err(err) => {
                    // Could not park it: hand it back; the delivery limit bounds this.
                    tracing::warn!(error = %err, "could not schedule the retry; requeueing");
                    timed("reject")(
                        tokio::time::timeout(
                            io,
                            d.acker.reject(BasicRejectOptions { requeue: true }),
                        )
                        .await,
                    )
                }
            }
        }
    }
}

async fn schedule_retry(
    channel: &Channel,
    topology: &Topology,
    d: &Delivery,
    next_attempt: u32,
    bucket: u64,
    io: Duration,
) -> anyhow::Result<()> {
    let mut headers = d.properties.headers().clone().unwrap_or_default();
    headers.insert(
        ATTEMPT_HEADER.into(),
        AMQPValue::LongLongInt(i64::from(next_attempt)),
    );
    headers.insert(
        BUCKET_HEADER.into(),
        AMQPValue::LongString(bucket.to_string().as_str().into()),
    );
    let props = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_headers(headers);
    let props = match d.properties.message_id() {
        Some(id) => props.with_message_id(id.clone()),
        None => props,
    };
    let confirm = tokio::time::timeout(
        io,
        channel.basic_publish(
            &topology.retry_exchange(),
            d.routing_key.as_str(),
            BasicPublishOptions {
                mandatory: true,
                ..Default::default()
            },
            &d.data,
            props,
        ),
    )
    .await
    .map_err(|_| anyhow!("retry publish timed out"))??;
    match tokio::time::timeout(io, confirm).await {
        Ok(Ok(Confirmation::Ack(None))) => Ok(()),
        Ok(Ok(other)) => Err(anyhow!("retry publish not accepted: {other:?}")),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err(anyhow!("retry confirm timed out")),
    }
}
