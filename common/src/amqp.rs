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
        Ok(())
    }
}

pub async fn connect(url: &str) -> anyhow::Result<Connection> {
    let props = ConnectionProperties::default()
        .with_executor(tokio_executor_trait::Tokio::current())
        .with_reactor(tokio_reactor_trait::Tokio);
    Connection::connect(url, props)
        .await
        .context("connecting to RabbitMQ (AMQP_URL)")
}
