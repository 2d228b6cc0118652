//! The RabbitMQ topology, declared idempotently by every process at start:
//! a direct exchange for jobs, a durable quorum queue per job kind with a
//! delivery limit, and a dead-letter exchange and queue.

use anyhow::Context;
use lapin::{
    options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions},
    types::{AMQPValue, FieldTable},
    Channel, Connection, ConnectionProperties, ExchangeKind,
};

use crate::jobs::JobKind;

/// Deliveries of one job before RabbitMQ dead-letters it.
pub const DELIVERY_LIMIT: i64 = 10;

/// Delays a retried job can wait, each its own queue with a message TTL
/// (one TTL per queue, so no message waits behind a longer one). A retry
/// waits in the smallest bucket not shorter than its computed delay.
pub const RETRY_BUCKETS_SECS: [u64; 8] = [1, 5, 15, 60, 300, 900, 1800, 3600];

/// The header that counts a job's attempts across retries.
pub const ATTEMPT_HEADER: &str = "x-i9-attempt";
pub const BUCKET_HEADER: &str = "x-i9-retry-bucket";

/// Names of the exchanges and queues. A prefix keeps test runs (and several
/// deployments on one broker) apart.
#[derive(Debug, Clone)]
pub struct Topology {
    prefix: String,
}

impl Topology {
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }

    pub fn from_env() -> Self {
        Self::new(std::env::var("AMQP_PREFIX").unwrap_or_else(|_| "i9".to_owned()))
    }

    pub fn jobs_exchange(&self) -> String {
        format!("{}.jobs", self.prefix)
    }

    pub fn dead_letter_exchange(&self) -> String {
        format!("{}.dlx", self.prefix)
    }

    pub fn dead_letter_queue(&self) -> String {
        format!("{}.dead", self.prefix)
    }

    pub fn queue(&self, kind: JobKind) -> String {
        format!("{}.{}", self.prefix, kind.name())
    }

    /// A headers exchange that routes a failed job to the retry queue of its delay.
    pub fn retry_exchange(&self) -> String {
        format!("{}.retry", self.prefix)
    }

    /// The queue where jobs wait `secs` before going back to their own queue.
    pub fn retry_queue(&self, secs: u64) -> String {
        format!("{}.retry.{secs}s", self.prefix)
    }

    /// Every queue and exchange this topology declares (tests delete them).
    pub fn all_queues(&self) -> Vec<String> {
        let mut q: Vec<String> = JobKind::ALL.iter().map(|k| self.queue(*k)).collect();
        q.extend(RETRY_BUCKETS_SECS.iter().map(|s| self.retry_queue(*s)));
        q.push(self.dead_letter_queue());
        q
    }

    pub fn all_exchanges(&self) -> Vec<String> {
        vec![
            self.jobs_exchange(),
            self.retry_exchange(),
            self.dead_letter_exchange(),
        ]
    }

    pub async fn declare(&self, channel: &Channel) -> anyhow::Result<()> {
        let durable_exchange = ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        };
        let durable_queue = QueueDeclareOptions {
            durable: true,
            ..Default::default()
        };
        channel
            .exchange_declare(
                &self.dead_letter_exchange(),
                ExchangeKind::Fanout,
                durable_exchange,
                FieldTable::default(),
            )
            .await
            .context("declaring the dead-letter exchange")?;
        let mut quorum = FieldTable::default();
        quorum.insert(
            "x-queue-type".into(),
            AMQPValue::LongString("quorum".into()),
        );
        channel
            .queue_declare(&self.dead_letter_queue(), durable_queue, quorum.clone())
            .await
            .context("declaring the dead-letter queue")?;
        channel
            .queue_bind(
                &self.dead_letter_queue(),
                &self.dead_letter_exchange(),
                "",
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await?;

        channel
            .exchange_declare(
                &self.jobs_exchange(),
                ExchangeKind::Direct,
                durable_exchange,
                FieldTable::default(),
            )
            .await
            .context("declaring the jobs exchange")?;
        for kind in JobKind::ALL {
            let mut args = quorum.clone();
            args.insert(
                "x-dead-letter-exchange".into(),
                AMQPValue::LongString(self.dead_letter_exchange().as_str().into()),
            );
            args.insert(
                "x-delivery-limit".into(),
                AMQPValue::LongLongInt(DELIVERY_LIMIT),
            );
            let queue = self.queue(kind);
            channel
                .queue_declare(&queue, durable_queue, args)
                .await
                .with_context(|| format!("declaring queue {queue}"))?;
            channel
                .queue_bind(
                    &queue,
                    &self.jobs_exchange(),
                    kind.name(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await?;
        }

        // Retries: jobs wait in a bucket queue until their TTL expires, then
        // are dead-lettered back to the jobs exchange with their own routing key.
        channel
            .exchange_declare(
                &self.retry_exchange(),
                ExchangeKind::Headers,
                durable_exchange,
                FieldTable::default(),
            )
            .await
            .context("declaring the retry exchange")?;
        for secs in RETRY_BUCKETS_SECS {
            let mut args = quorum.clone();
            args.insert(
                "x-message-ttl".into(),
                AMQPValue::LongLongInt((secs * 1000) as i64),
            );
            args.insert(
                "x-dead-letter-exchange".into(),
                AMQPValue::LongString(self.jobs_exchange().as_str().into()),
            );
            let queue = self.retry_queue(secs);
            channel
                .queue_declare(&queue, durable_queue, args)
                .await
                .with_context(|| format!("declaring queue {queue}"))?;
            let mut binding = FieldTable::default();
            binding.insert("x-match".into(), AMQPValue::LongString("all".into()));
            binding.insert(
                BUCKET_HEADER.into(),
                AMQPValue::LongString(format!("{secs}").as_str().into()),
            );
            channel
                .queue_bind(
                    &queue,
                    &self.retry_exchange(),
                    "",
                    QueueBindOptions::default(),
                    binding,
                )
                .await?;
        }
        Ok(())
    }

    /// Delete every queue and exchange of this topology (test clean-up).
    pub async fn delete(&self, channel: &Channel) -> anyhow::Result<()> {
        for q in self.all_queues() {
            channel
                .queue_delete(&q, lapin::options::QueueDeleteOptions::default())
                .await?;
        }
        for e in self.all_exchanges() {
            channel
                .exchange_delete(&e, lapin::options::ExchangeDeleteOptions::default())
                .await?;
        }
        Ok(())
    }
}

/// The bucket for a delay: the smallest not shorter than `delay`, or the largest.
pub fn retry_bucket(delay: std::time::Duration) -> u64 {
    let secs = delay.as_secs_f64().ceil() as u64;
    RETRY_BUCKETS_SECS
        .into_iter()
        .find(|b| *b >= secs)
        .unwrap_or(RETRY_BUCKETS_SECS[RETRY_BUCKETS_SECS.len() - 1])
}

pub async fn connect(url: &str) -> anyhow::Result<Connection> {
    let props = ConnectionProperties::default()
        .with_executor(tokio_executor_trait::Tokio::current())
        .with_reactor(tokio_reactor_trait::Tokio);
    Connection::connect(url, props)
        .await
        .context("connecting to RabbitMQ (AMQP_URL)")
}

/// Headers of a job the worker dead-lettered (docs/operations.md, "Failed jobs").
pub const DEAD_KIND_HEADER: &str = "i9-kind";
pub const DEAD_ATTEMPT_HEADER: &str = "i9-attempt";
pub const DEAD_ERROR_HEADER: &str = "i9-error";
pub const DEAD_AT_HEADER: &str = "i9-dead-at";
pub const DEAD_REASON_HEADER: &str = "i9-reason";
