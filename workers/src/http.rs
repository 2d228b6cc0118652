//! The worker's HTTP endpoint (`WORKER_HTTP_ADDR`; docs/operations.md,
//! "Metrics" and "Kubernetes"): `/healthz`, its liveness (200 while the
//! process runs and holds its RabbitMQ connection, 503 once that connection
//! is lost and until it is back), and `/metrics`, Prometheus text. Neither
//! needs a token: keep the port inside the cluster.

use std::{
    fmt,
    sync::{Arc, Mutex},
};

use axum::{
    extract::State,
    http::{header, StatusCode},
    response::IntoResponse,
    routing::get,
    Router,
};
use lapin::ConnectionStatus;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;

/// Whether the worker's RabbitMQ connection is up: the status of the
/// connection its consumers use, read live at each probe.
#[derive(Clone, Default)]
pub struct WorkerHealth {
    connection: Arc<Mutex<Option<ConnectionStatus>>>,
}

impl fmt::Debug for WorkerHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerHealth")
            .field("broker_connected", &self.broker_connected())
            .finish()
    }
}

impl WorkerHealth {
    /// The consumers now use the connection of `status`.
    pub fn connected(&self, status: ConnectionStatus) {
        if let Ok(mut c) = self.connection.lock() {
            *c = Some(status);
        }
    }

    /// True while the consumers' connection is up.
    pub fn broker_connected(&self) -> bool {
        self.connection
            .lock()
            .map(|c| c.as_ref().is_some_and(ConnectionStatus::connected))
            .unwrap_or(false)
    }
}

#[derive(Clone)]
struct HttpState {
    health: WorkerHealth,
    metrics: PrometheusHandle,
}

pub fn router(health: WorkerHealth, metrics: PrometheusHandle) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(render_metrics))
        .with_state(HttpState { health, metrics })
}

async fn healthz(State(s): State<HttpState>) -> impl IntoResponse {
    let up = s.health.broker_connected();
    crate::metrics::broker_connected(up);
    let json = [(header::CONTENT_TYPE, "application/json")];
    if up {
        (StatusCode::OK, json, r#"{"status":"ok","rabbitmq":"ok"}"#)
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            json,
            r#"{"status":"unavailable","rabbitmq":"unavailable"}"#,
        )
    }
}

async fn render_metrics(State(s): State<HttpState>) -> impl IntoResponse {
    crate::metrics::broker_connected(s.health.broker_connected());
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        s.metrics.render(),
    )
}

/// Serve `/healthz` and `/metrics` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, health: WorkerHealth, metrics: PrometheusHandle) {
    if let Err(e) = axum::serve(listener, router(health, metrics)).await {
        tracing::error!(error = %e, "the worker's HTTP endpoint stopped");
    }
}
