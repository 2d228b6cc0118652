//! The RabbitMQ topology, declared idempotently by every process at start:
//! a direct exchange for jobs, a durable quorum queue per job kind with a
//! delivery limit, a dead-letter exchange and queue, and (declared by the
//! workers) the delay queues where failed jobs wait before their next attempt
//! (docs/operations.md, "Retries").

use anyhow::Context;
use secrecy::{ExposeSecret, SecretString};
use std::time::Duration;

use lapin::{
    options::{
        BasicPublishOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions,
        QueueDeclareOptions, QueueDeleteOptions,
    },
    types::{AMQPValue, FieldTable},
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ExchangeKind,
};

use crate::jobs::JobKind;

/// Deliveries of one job before RabbitMQ dead-letters it.
pub const DELIVERY_LIMIT: i64 = 10;

/// The header that counts a job's attempts across retries (1 on the first).
pub const ATTEMPT_HEADER: &str = "i9-attempt";
/// The attempt header of releases before the retry fix, still carried by
/// jobs that were waiting in the old delay queues during an upgrade.
pub const LEGACY_ATTEMPT_HEADER: &str = "x-i9-attempt";
/// The header that routes a waiting job to the delay queue of its nominal
/// wait, in milliseconds. Its name must not start with `x-`: a headers
/// exchange ignores every such header when it matches, which once sent each
/// retry to every delay queue at once.
pub const DELAY_HEADER: &str = "i9-delay-ms";

/// Headers of a job the worker dead-lettered (docs/operations.md, "Failed jobs").
pub const DEAD_KIND_HEADER: &str = "i9-kind";
pub const DEAD_ATTEMPT_HEADER: &str = ATTEMPT_HEADER;
pub const DEAD_ERROR_HEADER: &str = "i9-error";
pub const DEAD_AT_HEADER: &str = "i9-dead-at";
pub const DEAD_REASON_HEADER: &str = "i9-reason";

/// The delay queues of releases before the retry fix (`<prefix>.retry.<n>s`
/// behind the headers exchange `<prefix>.retry`): removed at start-up, the
/// queues once they are empty.
const LEGACY_RETRY_BUCKETS_SECS: [u64; 8] = [1, 5, 15, 60, 300, 900, 1800, 3600];

/// The longest prefix of a [`Topology`]: an AMQP name (exchange, queue,
/// routing key) is at most 255 bytes, and the longest name derived from the
/// prefix (a delay queue, `<prefix>.delay.<n>ms`) adds well under 55.
pub const MAX_PREFIX_BYTES: usize = 200;

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

    /// The topology of `AMQP_PREFIX` (checked against [`MAX_PREFIX_BYTES`]
    /// as the configuration was read, `common/src/config.rs`).
    pub fn from_config(config: &crate::Config) -> Self {
        Self::new(config.amqp_prefix.clone())
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

    /// The headers exchange that routes a waiting job to the delay queue of
    /// its nominal wait ([`DELAY_HEADER`]).
    pub fn delay_exchange(&self) -> String {
        format!("{}.delay", self.prefix)
    }

    /// The queue where jobs wait about `nominal` (each for its own jittered
    /// expiry) before going back to their own queue: `<prefix>.delay.5s`.
    pub fn delay_queue(&self, nominal: Duration) -> String {
        let ms = nominal.as_millis();
        if ms.is_multiple_of(1000) {
            format!("{}.delay.{}s", self.prefix, ms / 1000)
        } else {
            format!("{}.delay.{ms}ms", self.prefix)
        }
    }

    /// Every queue this topology declares with these waits (tests delete them).
    pub fn all_queues(&self, waits: &[Duration]) -> Vec<String> {
        let mut q: Vec<String> = JobKind::ALL.iter().map(|k| self.queue(*k)).collect();
        q.extend(waits.iter().map(|w| self.delay_queue(*w)));
        q.push(self.dead_letter_queue());
        q
    }

    pub fn all_exchanges(&self) -> Vec<String> {
        vec![
            self.jobs_exchange(),
            self.delay_exchange(),
            self.dead_letter_exchange(),
        ]
    }

    /// Declare the jobs exchange, a queue per job kind, and the dead-letter
    /// exchange and queue. Idempotent; every process does it at start.
    pub async fn declare(&self, channel: &Channel) -> anyhow::Result<()> {
        channel
            .exchange_declare(
                self.dead_letter_exchange().into(),
                ExchangeKind::Fanout,
                durable_exchange(),
                FieldTable::default(),
            )
            .await
            .context("declaring the dead-letter exchange")?;
        channel
            .queue_declare(self.dead_letter_queue().into(), durable_queue(), quorum())
            .await
            .context("declaring the dead-letter queue")?;
        channel
            .queue_bind(
                self.dead_letter_queue().into(),
                self.dead_letter_exchange().into(),
                "".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await?;

        channel
            .exchange_declare(
                self.jobs_exchange().into(),
                ExchangeKind::Direct,
                durable_exchange(),
                FieldTable::default(),
            )
            .await
            .context("declaring the jobs exchange")?;
        for kind in JobKind::ALL {
            let mut args = quorum();
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
                .queue_declare(queue.as_str().into(), durable_queue(), args)
                .await
                .with_context(|| format!("declaring queue {queue}"))?;
            channel
                .queue_bind(
                    queue.as_str().into(),
                    self.jobs_exchange().into(),
                    kind.name().into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await?;
        }
        Ok(())
    }

    /// Declare the delay exchange and one delay queue per nominal wait.
    ///
    /// A job waits in exactly one queue: the binding matches [`DELAY_HEADER`]
    /// to the queue's wait. Each job carries its own expiry (its jittered
    /// wait, at most 1.5 × nominal); the queue's TTL of twice the nominal wait
    /// only bounds a job published without one. On expiry RabbitMQ
    /// dead-letters the job, at least once, back to the jobs exchange with
    /// its routing key (its kind).
    pub async fn declare_delays(
        &self,
        channel: &Channel,
        waits: &[Duration],
    ) -> anyhow::Result<()> {
        channel
            .exchange_declare(
                self.delay_exchange().into(),
                ExchangeKind::Headers,
                durable_exchange(),
                FieldTable::default(),
            )
            .await
            .context("declaring the delay exchange")?;
        for wait in waits {
            let ms = wait.as_millis().max(1);
            let mut args = quorum();
            args.insert(
                "x-message-ttl".into(),
                AMQPValue::LongLongInt(i64::try_from(ms * 2).unwrap_or(i64::MAX)),
            );
            args.insert(
                "x-dead-letter-exchange".into(),
                AMQPValue::LongString(self.jobs_exchange().as_str().into()),
            );
            // Dead-letter at least once (not the quorum default, at most once),
            // which RabbitMQ allows only with reject-publish overflow.
            args.insert(
                "x-dead-letter-strategy".into(),
                AMQPValue::LongString("at-least-once".into()),
            );
            args.insert(
                "x-overflow".into(),
                AMQPValue::LongString("reject-publish".into()),
            );
            let queue = self.delay_queue(*wait);
            channel
                .queue_declare(queue.as_str().into(), durable_queue(), args)
                .await
                .with_context(|| format!("declaring queue {queue}"))?;
            let mut binding = FieldTable::default();
            binding.insert("x-match".into(), AMQPValue::LongString("all".into()));
            binding.insert(
                DELAY_HEADER.into(),
                AMQPValue::LongString(ms.to_string().as_str().into()),
            );
            channel
                .queue_bind(
                    queue.as_str().into(),
                    self.delay_exchange().into(),
                    "".into(),
                    QueueBindOptions::default(),
                    binding,
                )
                .await?;
        }
        Ok(())
    }

    /// The header value that routes a job to the delay queue of `nominal`.
    pub fn delay_header(nominal: Duration) -> AMQPValue {
        AMQPValue::LongString(nominal.as_millis().max(1).to_string().as_str().into())
    }

    /// Remove the retry topology of releases before the retry fix, whose
    /// bindings matched every delay at once: first the exchange
    /// `<prefix>.retry` (its bindings go with it, so nothing reaches the old
    /// delay queues any more), then each old delay queue that is empty (a
    /// quorum queue cannot be deleted "if empty", so it is counted first).
    /// Jobs still waiting in an old queue go back to their own queue when
    /// they expire, as before, and the queue goes at a later start. Each step
    /// runs on a channel of its own: RabbitMQ closes the channel of a refused
    /// operation.
    pub async fn remove_legacy(&self, connection: &Connection) {
        let exchange = format!("{}.retry", self.prefix);
        if let Ok(ch) = connection.create_channel().await {
            if let Err(e) = ch
                .exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default())
                .await
            {
                tracing::warn!(error = %e, %exchange, "could not remove the old retry exchange");
            }
            let _ = ch.close(200, "done".into()).await;
        }
        for secs in LEGACY_RETRY_BUCKETS_SECS {
            let queue = format!("{}.retry.{secs}s", self.prefix);
            let Ok(ch) = connection.create_channel().await else {
                return;
            };
            match inspect_queue(&ch, &queue).await {
                Err(_) => continue, // not there (the channel is closed by the broker)
                Ok(q) if q.message_count() > 0 || q.consumer_count() > 0 => {
                    tracing::info!(%queue, waiting = q.message_count(), "an old delay queue still holds jobs; they return to their queues as they expire, and the queue is removed at a later start");
                }
                Ok(_) => {
                    if let Err(e) = ch
                        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                        .await
                    {
                        tracing::warn!(error = %e, %queue, "could not remove an old delay queue");
                    }
                }
            }
            let _ = ch.close(200, "done".into()).await;
        }
    }

    /// Delete every queue and exchange of this topology (test clean-up).
    pub async fn delete(&self, channel: &Channel, waits: &[Duration]) -> anyhow::Result<()> {
        for q in self.all_queues(waits) {
            channel
                .queue_delete(q.into(), QueueDeleteOptions::default())
                .await?;
        }
        for e in self.all_exchanges() {
            channel
                .exchange_delete(e.into(), ExchangeDeleteOptions::default())
                .await?;
        }
        Ok(())
    }
}

fn durable_exchange() -> ExchangeDeclareOptions {
    ExchangeDeclareOptions {
        durable: true,
        ..Default::default()
    }
}

/// How many messages queue `name` holds ready and how many consumers it has,
/// by a passive declare (which creates nothing). A queue that does not exist
/// is an error, and the broker closes the channel.
pub async fn inspect_queue(channel: &Channel, name: &str) -> Result<lapin::Queue, lapin::Error> {
    let passive = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    channel
        .queue_declare(name.into(), passive, FieldTable::default())
        .await
}

fn durable_queue() -> QueueDeclareOptions {
    QueueDeclareOptions {
        durable: true,
        ..Default::default()
    }
}

fn quorum() -> FieldTable {
    let mut args = FieldTable::default();
    args.insert(
        "x-queue-type".into(),
        AMQPValue::LongString("quorum".into()),
    );
    args
}

/// A connection on the current tokio runtime (lapin's `tokio` feature), with
/// lapin's own reconnection off: the relay, the consumers and `i9-admin jobs`
/// supervise their connections themselves.
/// A connection to RabbitMQ at `AMQP_URL`: the one place its credentials are read.
pub async fn connect(url: &SecretString) -> anyhow::Result<Connection> {
    Connection::connect(url.expose_secret(), ConnectionProperties::default())
        .await
        .context("connecting to RabbitMQ (AMQP_URL)")
}

/// Settle a delivery (`acker.ack`, `nack` or `reject`). lapin answers
/// `Ok(false)` when it sent nothing: the delivery's channel is closed (the
/// broker hands the delivery out again) or the delivery was settled already.
/// Either is an error here, as lapin 2 reported it.
pub async fn settle(
    op: impl std::future::Future<Output = lapin::Result<bool>>,
) -> anyhow::Result<()> {
    match op.await {
        Ok(true) => Ok(()),
        Ok(false) => Err(anyhow::anyhow!(
            "not sent: the delivery's channel is closed, or it was settled already"
        )),
        Err(e) => Err(e.into()),
    }
}

/// Publish with `mandatory` on a channel in confirm mode and wait for the
/// broker's confirm: unroutable, refused or unconfirmed within `timeout` is
/// an error.
pub async fn publish_confirmed(
    channel: &Channel,
    exchange: &str,
    routing_key: &str,
    body: &[u8],
    props: BasicProperties,
    timeout: Duration,
) -> anyhow::Result<()> {
    let confirm = tokio::time::timeout(
        timeout,
        channel.basic_publish(
            exchange.into(),
            routing_key.into(),
            BasicPublishOptions {
                mandatory: true,
                ..Default::default()
            },
            body,
            props,
        ),
    )
    .await
    .map_err(|_| anyhow::anyhow!("publishing to {exchange} timed out"))?
    .with_context(|| format!("publishing to {exchange}"))?;
    match tokio::time::timeout(timeout, confirm).await {
        Ok(Ok(Confirmation::Ack(None))) => Ok(()),
        Ok(Ok(Confirmation::Ack(Some(_)))) => Err(anyhow::anyhow!(
            "{exchange} has no queue for {routing_key} (is the topology declared?)"
        )),
        Ok(Ok(Confirmation::Nack(_))) => Err(anyhow::anyhow!("the broker refused the message")),
        Ok(Ok(Confirmation::NotRequested)) => {
            Err(anyhow::anyhow!("the channel has no publisher confirms"))
        }
        Ok(Err(e)) => Err(anyhow::Error::new(e).context("waiting for the broker's confirm")),
        Err(_) => Err(anyhow::anyhow!(
            "the broker's confirm from {exchange} timed out"
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: panics are failures
    use super::*;
    use crate::retry::RetryPolicy;

    #[test]
    fn every_name_of_the_longest_prefix_fits_in_amqp_and_a_longer_one_is_refused() {
        let read = |prefix: String| {
            let vars = std::collections::HashMap::from([
                ("APP_ENV".to_owned(), "development".to_owned()),
                ("AMQP_PREFIX".to_owned(), prefix),
            ]);
            crate::config::read(crate::config::Binary::Admin, &vars)
                .map(|s| Topology::from_config(&s.config))
        };
        let longest = read("p".repeat(MAX_PREFIX_BYTES)).unwrap();
        let mut waits = RetryPolicy::JOBS.waits();
        waits.extend(RetryPolicy::CALLBACKS.waits());
        waits.push(Duration::from_millis(86_399_999));
        let mut names = longest.all_queues(&waits);
        names.extend(longest.all_exchanges());
        names.extend(LEGACY_RETRY_BUCKETS_SECS.map(|s| format!("{}.retry.{s}s", longest.prefix)));
        assert!(names.len() > JobKind::ALL.len() + 3);
        for name in &names {
            assert!(name.len() <= 255, "{name} is {} bytes", name.len());
        }
        let e = read("p".repeat(MAX_PREFIX_BYTES + 1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "AMQP_PREFIX is 201 bytes long; at most 200 fit (an AMQP name is at most 255 bytes)"
        );
    }
}
