//! `i9-api`: the HTTP service.

use anyhow::Context;
use i9_api::Application;
use i9_common::{amqp::Topology, db, relay, telemetry, Config};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init("info,i9_api=info,tower_http=info,sqlx=warn");
    let config = Config::from_env()?;
    let pool = db::connect_lazy(&config)?;
    let addr = config.bind_addr;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // Every API process relays the outbox it writes (several relays share it safely).
    let relay = (std::env::var("API_NO_RELAY").is_err()).then(|| {
        tokio::spawn(relay::run(
            pool.clone(),
            relay::RelayConfig::new(config.amqp_url.clone(), Topology::from_env()),
            stop_rx,
        ))
    });
    let app = Application::build(config, pool)
        .await
        .with_context(|| format!("binding {addr}"))?;
    tracing::info!(%addr, "i9-api listening");
    // SIGTERM or Ctrl-C: stop accepting, finish in-flight requests.
    app.run(i9_common::shutdown::signal()).await?;
    let _ = stop_tx.send(true);
    if let Some(r) = relay {
        let _ = r.await;
    }
    tracing::info!("i9-api stopped");
    Ok(())
}
