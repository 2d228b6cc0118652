//! `/healthz` (process alive), `/readyz` (Postgres and RabbitMQ reachable),
//! `/metrics` (Prometheus text). None needs a token.
//!
//! A readiness probe must stay cheap however often it is called: RabbitMQ is
//! checked on one connection kept by the process ([`BrokerCheck`]), and
//! concurrent probes share one check (docs/operations.md, "Start-up, outages and readiness").

use std::time::{Duration, Instant};

use axum::{extract::State, http::StatusCode, response::IntoResponse, Json};
use lapin::{
    options::ExchangeDeclareOptions, types::FieldTable, Channel, Connection, ExchangeKind,
};
use secrecy::SecretString;
use serde::Serialize;
use tokio::sync::Mutex;
use utoipa::ToSchema;

use crate::state::AppState;

#[derive(Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

#[derive(Serialize, ToSchema)]
pub struct Readiness {
    /// `ok` or `unavailable`.
    pub status: &'static str,
    pub postgres: &'static str,
    pub rabbitmq: &'static str,
}

#[utoipa::path(get, path = "/healthz", operation_id = "healthz", tag = "operations", responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

fn word(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "unavailable"
    }
}

/// Each dependency's check is bounded by this.
const CHECK_LIMIT: Duration = Duration::from_secs(3);
/// The broker's connect and round trip, within [`CHECK_LIMIT`]: a check that
/// runs out of time ends itself (dropping a link that hangs) before the probe
/// gives up on it.
const ROUND_TRIP_LIMIT: Duration = Duration::from_millis(2500);
/// A broker check's answer is reused by the probes that arrive within this.
const BROKER_RESULT_TTL: Duration = Duration::from_secs(1);
/// Declared passively as the round trip: every RabbitMQ virtual host has it,
/// whether or not a relay or worker has declared our topology yet.
const PROBE_EXCHANGE: &str = "amq.direct";

/// RabbitMQ reachability on one lazily opened connection and channel, reopened
/// only when broken. One check runs at a time; probes that arrive meanwhile
/// wait for it, and its answer serves every probe for [`BROKER_RESULT_TTL`].
pub struct BrokerCheck {
    amqp_url: SecretString,
    state: Mutex<BrokerState>,
}

#[derive(Default)]
struct BrokerState {
    link: Option<(Connection, Channel)>,
    last: Option<(Instant, bool)>,
}

impl BrokerCheck {
    pub fn new(amqp_url: impl Into<SecretString>) -> Self {
        Self {
            amqp_url: amqp_url.into(),
            state: Mutex::new(BrokerState::default()),
        }
    }

    /// True when RabbitMQ answered a round trip. Bounded by [`CHECK_LIMIT`]
    /// (waiting for another probe's check included).
    pub async fn ready(&self) -> bool {
        tokio::time::timeout(CHECK_LIMIT, self.check())
            .await
            .unwrap_or(false)
    }

    async fn check(&self) -> bool {
        let mut state = self.state.lock().await;
        if let Some((at, ok)) = state.last {
            if at.elapsed() < BROKER_RESULT_TTL {
                return ok;
            }
        }
        // Stale until this check ends: if it is cut short by the time limit, the
        // next probe checks again instead of reusing an old answer.
        state.last = None;
        let ok = self.round_trip(&mut state.link).await;
        state.last = Some((Instant::now(), ok));
        ok
    }

    /// Open the link if it is missing or broken, then one round trip on it,
    /// within [`ROUND_TRIP_LIMIT`]. A link that fails or does not answer in
    /// time is dropped (which closes what is left of it), so the next check
    /// reopens it.
    async fn round_trip(&self, link: &mut Option<(Connection, Channel)>) -> bool {
        let deadline = tokio::time::Instant::now() + ROUND_TRIP_LIMIT;
        if link
            .as_ref()
            .is_some_and(|(c, ch)| !c.status().connected() || !ch.status().connected())
        {
            *link = None;
        }
        if link.is_none() {
            match tokio::time::timeout_at(deadline, open(&self.amqp_url)).await {
                Ok(Ok(l)) => *link = Some(l),
                Ok(Err(e)) => {
                    tracing::warn!(error = format!("{e:#}"), "readiness: cannot reach RabbitMQ");
                    return false;
                }
                Err(_) => {
                    tracing::warn!("readiness: RabbitMQ did not accept a connection in time");
                    return false;
                }
            }
        }
        let Some((_, channel)) = link.as_ref() else {
            return false;
        };
        let declare = channel.exchange_declare(
            PROBE_EXCHANGE.into(),
            ExchangeKind::Direct,
            ExchangeDeclareOptions {
                passive: true,
                ..Default::default()
            },
            FieldTable::default(),
        );
        match tokio::time::timeout_at(deadline, declare).await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "readiness: RabbitMQ refused the round trip");
                *link = None;
                false
            }
            Err(_) => {
                tracing::warn!("readiness: RabbitMQ did not answer in time");
                *link = None;
                false
            }
        }
    }
}

async fn open(url: &SecretString) -> anyhow::Result<(Connection, Channel)> {
    let connection = i9_common::amqp::connect(url).await?;
    let channel = connection.create_channel().await?;
    Ok((connection, channel))
}

#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "operations", responses(
    (status = 200, description = "Postgres and RabbitMQ reachable", body = Readiness),
    (status = 503, description = "A dependency is unreachable", body = Readiness),
))]
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let postgres = async {
        tokio::time::timeout(
            CHECK_LIMIT,
            sqlx::query!("SELECT 1 AS one").fetch_one(&state.pool),
        )
        .await
        .is_ok_and(|r| r.is_ok())
    };
    let (pg, mq) = tokio::join!(postgres, state.broker.ready());
    let status = if pg && mq {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(Readiness {
            status: word(pg && mq),
            postgres: word(pg),
            rabbitmq: word(mq),
        }),
    )
}

#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "operations", responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        state.metrics.render(),
    )
}
