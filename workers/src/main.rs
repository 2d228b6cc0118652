//! `i9-worker`: consumes jobs (I-9 creation, emails) from RabbitMQ, and runs
//! an outbox relay beside them. Several workers, each serving some job kinds,
//! may run at once. SIGTERM stops consuming and drains the jobs in hand.

use std::{process::ExitCode, sync::Arc, time::Duration};

use clap::Parser;
use i9_common::{
    amqp::Topology,
    config::{env_help, Binary, WorkerSettings},
    production, relay, startup, telemetry, Config,
};
use i9_workers::{
    consumer::{self, WorkerConfig},
    everify,
    http::{self, WorkerHealth},
    mailer::Mailer,
    outbox_watch, purge, reminders, Context,
};

/// Each option stands for the variable it names, and wins over it; both are
/// read, and checked, in `common/src/config.rs`.
#[derive(Parser, Debug)]
#[command(
    name = "i9-worker",
    version,
    about = "Consumes the service's jobs from RabbitMQ",
    long_about = "Consumes the service's jobs from RabbitMQ (I-9 creation, emails, partner \
                  status callbacks) and relays the outbox; every worker also purges expired rows and \
                  sends the expiring-document reminders (each once). At start waits up to \
                  STARTUP_TIMEOUT_SECS for Postgres and RabbitMQ and checks the keys against \
                  the data, and exits non-zero when either fails. SIGTERM stops consuming and \
                  finishes the jobs in hand.",
    after_help = env_help(Binary::Worker)
)]
struct Args {
    /// Job kinds to serve, comma-separated (WORKER_KINDS; default: every kind).
    /// Kinds: create_i9, send_login_email, send_remote_hire_email, post_status_callback,
    /// send_reminder_email, send_revocation_email, submit_everify_case.
    #[arg(long)]
    kinds: Option<String>,
    /// Jobs run at once per kind, the prefetch limit (WORKER_PREFETCH).
    #[arg(long)]
    prefetch: Option<String>,
    /// Attempts of a job (I-9 creation, emails) before it is dead-lettered
    /// (JOB_MAX_ATTEMPTS).
    #[arg(long)]
    job_max_attempts: Option<String>,
    /// Seconds before a job's first retry; each later wait doubles (JOB_RETRY_BASE_SECS).
    #[arg(long)]
    job_retry_base_secs: Option<String>,
    /// Longest wait between two attempts of a job, in seconds (JOB_RETRY_CAP_SECS).
    #[arg(long)]
    job_retry_cap_secs: Option<String>,
    /// Attempts of a partner status callback before it is dead-lettered
    /// (CALLBACK_MAX_ATTEMPTS).
    #[arg(long)]
    callback_max_attempts: Option<String>,
    /// Seconds before a callback's first retry; each later wait doubles
    /// (CALLBACK_RETRY_BASE_SECS).
    #[arg(long)]
    callback_retry_base_secs: Option<String>,
    /// Longest wait between two attempts of a callback, in seconds
    /// (CALLBACK_RETRY_CAP_SECS).
    #[arg(long)]
    callback_retry_cap_secs: Option<String>,
    /// Do not run an outbox relay in this process (WORKER_NO_RELAY=true).
    #[arg(long)]
    no_relay: bool,
}

impl Args {
    /// The options given, under the variables they stand for.
    fn settings(&self) -> Vec<(&'static str, String)> {
        let options = [
            ("WORKER_KINDS", &self.kinds),
            ("WORKER_PREFETCH", &self.prefetch),
            ("JOB_MAX_ATTEMPTS", &self.job_max_attempts),
            ("JOB_RETRY_BASE_SECS", &self.job_retry_base_secs),
            ("JOB_RETRY_CAP_SECS", &self.job_retry_cap_secs),
            ("CALLBACK_MAX_ATTEMPTS", &self.callback_max_attempts),
            ("CALLBACK_RETRY_BASE_SECS", &self.callback_retry_base_secs),
            ("CALLBACK_RETRY_CAP_SECS", &self.callback_retry_cap_secs),
        ];
        let mut args: Vec<(&'static str, String)> = options
            .into_iter()
            .filter_map(|(name, value)| Some((name, value.clone()?)))
            .collect();
        if self.no_relay {
            args.push(("WORKER_NO_RELAY", "true".to_owned()));
        }
        args
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let settings = WorkerSettings::from_env(args.settings());
    let log = settings
        .as_ref()
        .map(|(c, _)| c.log.clone())
        .unwrap_or_default();
    telemetry::init(&log, telemetry::SERVICES_DEFAULT_FILTER);
    let result = async { run(settings?).await }.await;
    // The spans not exported yet (OTEL_EXPORTER_OTLP_ENDPOINT) go now.
    telemetry::shutdown();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("i9-worker: error: {e:#}");
            // Exit here, before the runtime shuts down: tasks still running
            // (a RabbitMQ connection opened meanwhile) would log their
            // teardown after this line, and the reason must be the last line
            // an operator reads (docs/operations.md, "Start-up, outages and
            // readiness"). Logs are written unbuffered: nothing is lost.
            std::process::exit(1)
        }
    }
}

async fn run((config, settings): (Config, WorkerSettings)) -> anyhow::Result<()> {
    let (retry, callback_retry) = (settings.retry, settings.callback_retry);
    purge::Retention::from_config(&config).check(&[retry, callback_retry])?;
    // A mail setting that cannot work, or would send a password in clear,
    // stops the start at once, before any wait.
    let mailer = Mailer::from_config(&config)?;
    production::warn_at_start(&config, production::Binary::Worker);
    // `/healthz` and `/metrics` (workers/src/http.rs), listening before the
    // wait for the dependencies: the probe answers 503 until RabbitMQ is up.
    let listener = tokio::net::TcpListener::bind(settings.http_addr)
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "WORKER_HTTP_ADDR {}: cannot listen: {e}",
                settings.http_addr
            )
        })?;
    let health = WorkerHealth::default();
    let metrics = i9_common::metrics::handle();
    i9_workers::metrics::describe(&settings.kinds);
    tracing::info!(
        addr = %listener.local_addr().unwrap_or(settings.http_addr),
        "i9-worker serves /healthz and /metrics"
    );
    let http = tokio::spawn(http::serve(listener, health.clone(), metrics));
    let topology = Topology::from_config(&config);
    let (pool, registration) = startup::prepare(&config, "i9-worker").await?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);

    let relay = (!settings.no_relay).then(|| {
        tokio::spawn(relay::run(
            pool.clone(),
            relay::RelayConfig::new(config.amqp_url.clone(), topology.clone()),
            stop_rx.clone(),
        ))
    });
    let mut worker_config = WorkerConfig::new(settings.kinds, topology);
    worker_config.prefetch = settings.prefetch;
    worker_config.retry = retry;
    worker_config.callback_retry = callback_retry;
    worker_config.health = health;
    tracing::info!(
        ?retry,
        ?callback_retry,
        relay = !settings.no_relay,
        "i9-worker starting"
    );
    // Every worker purges expired rows; one at a time does (workers/src/purge.rs).
    let purger = tokio::spawn(purge::run(
        pool.clone(),
        purge::Retention::from_config(&config),
        stop_rx.clone(),
    ));
    // Every worker looks for expiring-document reminders; each goes once
    // (workers/src/reminders.rs).
    let reminders = tokio::spawn(reminders::run(
        pool.clone(),
        config.clone(),
        stop_rx.clone(),
    ));
    // Every worker purges I-9s past their retention date; one at a time does
    // (workers/src/retention.rs).
    let records_purger = tokio::spawn(i9_workers::retention::run(
        pool.clone(),
        Arc::new(config.clone()),
        stop_rx.clone(),
    ));
    let outbox_watch = tokio::spawn(outbox_watch::run(
        pool.clone(),
        Duration::from_secs(60),
        stop_rx.clone(),
    ));
    let outbox_sampler = tokio::spawn(i9_workers::metrics::sample_outbox(
        pool.clone(),
        i9_workers::metrics::SAMPLE_EVERY,
        stop_rx.clone(),
    ));
    let ctx = Context::with_mailer(config, pool, mailer);
    // Every worker asks the program for its updates of E-Verify cases; each
    // applies once (workers/src/everify.rs).
    let everify_poll = tokio::spawn(everify::run(ctx.clone(), stop_rx.clone()));
    let worker = tokio::spawn(consumer::run(ctx, worker_config, stop_rx));

    i9_common::shutdown::signal().await;
    tracing::info!("stopping: finishing the jobs in hand");
    let _ = stop_tx.send(true);
    let worked = worker.await;
    let _ = purger.await;
    let _ = reminders.await;
    let _ = everify_poll.await;
    let _ = records_purger.await;
    let _ = outbox_watch.await;
    let _ = outbox_sampler.await;
    let relayed = match relay {
        Some(r) => r.await,
        None => Ok(()),
    };
    // Nothing more is written: leave the process registry.
    registration.end().await;
    http.abort();
    worked??;
    relayed?;
    tracing::info!("i9-worker stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use i9_common::{
        config::{read, WithArgs},
        jobs::JobKind,
        retry::RetryPolicy,
    };

    /// The worker's settings from `argv` over an environment of `env`.
    fn settings(argv: &[&str], env: &[(&str, &str)]) -> anyhow::Result<WorkerSettings> {
        let env: std::collections::HashMap<String, String> = env
            .iter()
            .chain(&[("APP_ENV", "development")])
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let args = Args::try_parse_from(argv)?.settings();
        Ok(read(Binary::Worker, &WithArgs { args, rest: &env })?.worker)
    }

    #[test]
    fn kinds_default_to_all_and_reject_unknown() {
        assert_eq!(settings(&["i9-worker"], &[]).unwrap().kinds.len(), 7);
        assert_eq!(
            settings(&["i9-worker", "--kinds", "create_i9"], &[])
                .unwrap()
                .kinds,
            [JobKind::CreateI9]
        );
        assert!(settings(&["i9-worker", "--kinds", "nope"], &[]).is_err());
        // The option wins over the variable.
        assert_eq!(
            settings(
                &["i9-worker", "--kinds", "create_i9"],
                &[("WORKER_KINDS", "post_status_callback")]
            )
            .unwrap()
            .kinds,
            [JobKind::CreateI9]
        );
    }

    #[test]
    fn a_list_of_no_kinds_is_refused() {
        let e = settings(&["i9-worker", "--kinds", ","], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("WORKER_KINDS (or --kinds) names no job kind")
                && e.contains("post_status_callback"),
            "{e}"
        );
        assert!(settings(&["i9-worker", "--kinds", " "], &[]).is_err());
        assert!(settings(&["i9-worker"], &[("WORKER_KINDS", " , ")]).is_err());
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Args::command().debug_assert();
    }

    #[test]
    fn retry_policies_default_to_the_constants() {
        let s = settings(&["i9-worker"], &[]).unwrap();
        assert_eq!(s.retry, RetryPolicy::JOBS);
        assert_eq!(s.callback_retry, RetryPolicy::CALLBACKS);
    }

    #[test]
    fn retry_settings_are_validated() {
        let p = settings(
            &[
                "i9-worker",
                "--callback-max-attempts",
                "4",
                "--callback-retry-base-secs",
                "1",
                "--callback-retry-cap-secs",
                "2",
            ],
            &[],
        )
        .unwrap()
        .callback_retry;
        assert_eq!(
            (p.max_attempts, p.base, p.cap, p.jitter),
            (
                4,
                Duration::from_secs(1),
                Duration::from_secs(2),
                RetryPolicy::CALLBACKS.jitter
            )
        );
        let e = settings(
            &["i9-worker", "--callback-retry-base-secs", "10"],
            &[("CALLBACK_RETRY_CAP_SECS", "2")],
        )
        .unwrap_err();
        assert!(
            e.to_string().contains(
                "CALLBACK_RETRY_BASE_SECS (10) must not exceed CALLBACK_RETRY_CAP_SECS (2)"
            ),
            "{e}"
        );
        // An option's value is refused naming the option.
        let e = settings(&["i9-worker", "--prefetch", "0"], &[])
            .unwrap_err()
            .to_string();
        assert_eq!(e, "WORKER_PREFETCH (or --prefetch) must be at least 1");
        for bad in [
            ["--job-max-attempts", "0"],
            ["--job-retry-base-secs", "0"],
            ["--callback-retry-cap-secs", "-1"],
            ["--job-retry-cap-secs", "soon"],
        ] {
            assert!(
                settings(&["i9-worker", bad[0], bad[1]], &[]).is_err(),
                "{bad:?}"
            );
        }
        assert!(
            settings(&["i9-worker", "--no-relay"], &[])
                .unwrap()
                .no_relay
        );
        assert!(!settings(&["i9-worker"], &[]).unwrap().no_relay);
    }
}
