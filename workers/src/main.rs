//! `i9-worker`: consumes jobs from RabbitMQ.
//!
//! For now it connects, declares the queue topology and waits: the job
//! handlers (I-9 creation, emails, partner callbacks) arrive with the write
//! side. It keeps its broker connection supervised, reconnecting with
//! exponential backoff after the broker goes away, and stops on SIGTERM.

use std::{collections::BTreeSet, time::Duration};

use anyhow::bail;
use backon::{ExponentialBuilder, Retryable};
use clap::Parser;
use i9_common::{amqp, jobs::JobKind, telemetry, Config};

#[derive(Parser, Debug)]
#[command(
    name = "i9-worker",
    about = "Consumes the service's jobs from RabbitMQ"
)]
struct Args {
    /// Job kinds to serve, comma-separated (default: every kind).
    /// Kinds: create_i9, send_login_email, send_remote_hire_email, post_status_callback.
    #[arg(long, env = "WORKER_KINDS", value_delimiter = ',')]
    kinds: Vec<String>,
}

fn parse_kinds(names: &[String]) -> anyhow::Result<BTreeSet<&'static str>> {
    if names.is_empty() {
        return Ok(JobKind::ALL.iter().map(|k| k.name()).collect());
    }
    let mut kinds = BTreeSet::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        match JobKind::parse(n) {
            Some(k) => {
                kinds.insert(k.name());
            }
            None => bail!(
                "unknown job kind {n:?}; kinds are: {}",
                JobKind::ALL.map(|k| k.name()).join(", ")
            ),
        }
    }
    Ok(kinds)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init("info");
    let args = Args::parse();
    let config = Config::from_env()?;
    let kinds = parse_kinds(&args.kinds)?;
    let topology = amqp::Topology::from_env();
    tracing::info!(kinds = ?kinds, "i9-worker starting");

    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let connect = || async {
            let conn = amqp::connect(&config.amqp_url).await?;
            let channel = conn.create_channel().await?;
            topology.declare(&channel).await?;
            anyhow::Ok((conn, channel))
        };
        let attempt = connect
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(500))
                    .with_max_delay(Duration::from_secs(30))
                    .with_jitter()
                    .without_max_times(),
            )
            .notify(|e, wait| tracing::warn!(error = %e, ?wait, "RabbitMQ unavailable; retrying"));
        let (conn, _channel) = tokio::select! {
            r = attempt => r?,
            _ = &mut shutdown => break,
        };
        tracing::info!("connected to RabbitMQ; topology declared; no job handlers are enabled yet");
        let (lost_tx, lost_rx) = tokio::sync::oneshot::channel();
        let lost_tx = std::sync::Mutex::new(Some(lost_tx));
        conn.on_error(move |e| {
            tracing::warn!(error = %e, "RabbitMQ connection lost");
            if let Some(tx) = lost_tx.lock().ok().and_then(|mut g| g.take()) {
                let _ = tx.send(());
            }
        });
        tokio::select! {
            _ = lost_rx => continue,
            _ = &mut shutdown => {
                let _ = conn.close(200, "worker shutting down").await;
                break;
            }
        }
    }
    tracing::info!("i9-worker stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = terminate => {} }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_default_to_all_and_reject_unknown() {
        assert_eq!(parse_kinds(&[]).unwrap().len(), 4);
        assert_eq!(parse_kinds(&["create_i9".into()]).unwrap().len(), 1);
        assert!(parse_kinds(&["nope".into()]).is_err());
    }
}
