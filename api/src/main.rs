//! `i9-api`: the HTTP service.

use anyhow::Context;
use i9_api::Application;
use i9_common::{db, telemetry, Config};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init("info,i9_api=info,tower_http=info,sqlx=warn");
    let config = Config::from_env()?;
    let pool = db::connect_lazy(&config)?;
    let addr = config.bind_addr;
    let app = Application::build(config, pool)
        .await
        .with_context(|| format!("binding {addr}"))?;
    tracing::info!(%addr, "i9-api listening");
    app.run(shutdown_signal()).await?;
    tracing::info!("i9-api stopped");
    Ok(())
}

/// SIGTERM or Ctrl-C: stop accepting, finish in-flight requests.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = terminate => {} }
}
