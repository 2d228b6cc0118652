//! `i9-worker`: consumes jobs (I-9 creation, emails) from RabbitMQ, and runs
//! an outbox relay beside them. Several workers, each serving some job kinds,
//! may run at once. SIGTERM stops consuming and drains the jobs in hand.

use std::collections::BTreeSet;

use anyhow::bail;
use clap::Parser;
use i9_common::{amqp::Topology, db, jobs::JobKind, relay, telemetry, Config};
use i9_workers::{
    consumer::{self, WorkerConfig},
    Context,
};

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
    /// Jobs run at once per kind (the prefetch limit).
    #[arg(long, env = "WORKER_PREFETCH", default_value_t = 8)]
    prefetch: u16,
    /// Attempts of a partner status callback before it is dead-lettered
    /// (5 s, doubling, capped at 1 h between them: 30 is about a day).
    #[arg(long, env = "CALLBACK_MAX_ATTEMPTS", default_value_t = 30)]
    callback_max_attempts: u32,
    /// Do not run an outbox relay in this process.
    #[arg(long, env = "WORKER_NO_RELAY")]
    no_relay: bool,
}

fn parse_kinds(names: &[String]) -> anyhow::Result<Vec<JobKind>> {
    if names.iter().all(|n| n.trim().is_empty()) {
        return Ok(JobKind::ALL.to_vec());
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
    Ok(kinds.into_iter().filter_map(JobKind::parse).collect())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init("info,sqlx=warn,lapin=warn");
    let args = Args::parse();
    let config = Config::from_env()?;
    let kinds = parse_kinds(&args.kinds)?;
    let topology = Topology::from_env();
    let pool = db::connect_lazy(&config)?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);

    let relay = (!args.no_relay).then(|| {
        tokio::spawn(relay::run(
            pool.clone(),
            relay::RelayConfig::new(config.amqp_url.clone(), topology.clone()),
            stop_rx.clone(),
        ))
    });
    let mut worker_config = WorkerConfig::new(kinds, topology);
    worker_config.prefetch = args.prefetch.max(1);
    worker_config.callback_retry.max_attempts = args.callback_max_attempts.max(1);
    let ctx = Context::new(config, pool)?;
    let worker = tokio::spawn(consumer::run(ctx, worker_config, stop_rx));

    i9_common::shutdown::signal().await;
    tracing::info!("stopping: finishing the jobs in hand");
    let _ = stop_tx.send(true);
    worker.await??;
    if let Some(r) = relay {
        r.await?;
    }
    tracing::info!("i9-worker stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_default_to_all_and_reject_unknown() {
        assert_eq!(parse_kinds(&[]).unwrap().len(), 4);
        assert_eq!(
            parse_kinds(&["create_i9".into()]).unwrap(),
            [JobKind::CreateI9]
        );
        assert!(parse_kinds(&["nope".into()]).is_err());
    }
}
