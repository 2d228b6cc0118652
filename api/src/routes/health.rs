//! `/healthz` (process alive), `/readyz` (Postgres and RabbitMQ reachable),
//! `/metrics` (Prometheus text). None needs a token.

use std::time::Duration;

use axum::{extract::State, http::StatusCode, response::IntoResponse, Json};
use serde::Serialize;
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

#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, body = Health)))]
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

#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, description = "Postgres and RabbitMQ reachable", body = Readiness),
    (status = 503, description = "A dependency is unreachable", body = Readiness),
))]
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let limit = Duration::from_secs(3);
    let postgres = async {
        tokio::time::timeout(limit, sqlx::query("SELECT 1").execute(&state.pool))
            .await
            .is_ok_and(|r| r.is_ok())
    };
    let rabbitmq = async {
        match tokio::time::timeout(limit, i9_common::amqp::connect(&state.config.amqp_url)).await {
            Ok(Ok(conn)) => {
                let _ = conn.close(200, "readiness probe").await;
                true
            }
            _ => false,
        }
    };
    let (pg, mq) = tokio::join!(postgres, rabbitmq);
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

#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        state.metrics.render(),
    )
}
