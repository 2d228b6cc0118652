//! `i9-worker`: consumes the service's jobs from RabbitMQ.
//!
//! - [`consumer`]: connection supervision, acks, retries, dead-lettering, drain.
//! - [`jobs`]: one handler per job kind.
//! - [`mailer`]: outgoing mail (SMTP or `.eml` files).

pub mod callback_client;
pub mod consumer;
pub mod everify;
pub mod http;
pub mod jobs;
pub mod mailer;
pub mod metrics;
pub mod outbox_watch;
pub mod purge;
pub mod reminders;
pub mod retention;
pub mod wording;

use std::sync::Arc;

use i9_common::{crypto::DataCipher, Config};
use sqlx::PgPool;

/// What every job handler may use.
#[derive(Clone, Debug)]
pub struct Context {
    pub pool: PgPool,
    pub cipher: DataCipher,
    pub config: Arc<Config>,
    pub mailer: mailer::Mailer,
    /// What answers E-Verify cases (`EVERIFY_ADAPTER`; docs/everify.md, "The adapter").
    pub program: Arc<dyn i9_common::everify::VerificationProgram>,
}

impl Context {
    pub fn new(config: Config, pool: PgPool) -> anyhow::Result<Self> {
        let mailer = mailer::Mailer::from_config(&config)?;
        Ok(Self::with_mailer(config, pool, mailer))
    }

    /// With a mailer built beforehand (`i9-worker` checks the mail settings
    /// before it waits for its dependencies).
    pub fn with_mailer(config: Config, pool: PgPool, mailer: mailer::Mailer) -> Self {
        Self {
            cipher: DataCipher::from_config(&config),
            program: i9_common::everify::program(
                config.everify_adapter,
                config.everify_sim,
                pool.clone(),
            ),
            pool,
            config: Arc::new(config),
            mailer,
        }
    }
}
