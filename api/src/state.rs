//! What every handler shares.

use std::sync::Arc;

use i9_common::{crypto::DataCipher, Config};
use metrics_exporter_prometheus::PrometheusHandle;
use sqlx::PgPool;

#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    pub config: Arc<Config>,
    pub cipher: DataCipher,
    pub metrics: PrometheusHandle,
    pub auth_cache: crate::auth::cache::AuthCache,
    /// The bound on password and client-secret verifications.
    pub hashing: crate::hashing::Hashing,
    /// Sign-in throttling per username and client address.
    pub throttle: crate::throttle::Throttle,
    /// The RabbitMQ connection `/readyz` checks on.
    pub broker: Arc<crate::routes::health::BrokerCheck>,
}
