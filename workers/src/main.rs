//! `i9-worker`: consumes jobs (I-9 creation, emails) from RabbitMQ, and runs
//! an outbox relay beside them. Several workers, each serving some job kinds,
//! may run at once. SIGTERM stops consuming and drains the jobs in hand.

use std::{collections::BTreeSet, process::ExitCode, time::Duration};

use anyhow::{bail, ensure};
use clap::{builder::BoolishValueParser, Parser};
use i9_common::{
    amqp::Topology, config::ENV_HELP, jobs::JobKind, production, relay, retry::RetryPolicy,
    startup, telemetry, Config,
};
use i9_workers::{
    consumer::{self, WorkerConfig},
    mailer::Mailer,
    outbox_watch, purge, Context,
};

#[derive(Parser, Debug)]
#[command(
    name = "i9-worker",
    version,
    about = "Consumes the service's jobs from RabbitMQ",
    long_about = "Consumes the service's jobs from RabbitMQ (I-9 creation, emails, partner \
                  status callbacks) and relays the outbox. At start waits up to \
                  STARTUP_TIMEOUT_SECS for Postgres and RabbitMQ and checks the keys against \
                  the data, and exits non-zero when either fails. SIGTERM stops consuming and \
                  finishes the jobs in hand.",
    after_help = ENV_HELP
)]
struct Args {
    /// Job kinds to serve, comma-separated (default: every kind).
    /// Kinds: create_i9, send_login_email, send_remote_hire_email, post_status_callback.
    #[arg(long, env = "WORKER_KINDS", value_delimiter = ',')]
    kinds: Vec<String>,
    /// Jobs run at once per kind (the prefetch limit).
    #[arg(long, env = "WORKER_PREFETCH", default_value_t = 8)]
    prefetch: u16,
    /// Attempts of a job (I-9 creation, emails) before it is dead-lettered.
    #[arg(long, env = "JOB_MAX_ATTEMPTS", default_value_t = RetryPolicy::JOBS.max_attempts,
          value_parser = clap::value_parser!(u32).range(1..))]
    job_max_attempts: u32,
    /// Seconds before a job's first retry; each later wait doubles.
    #[arg(long, env = "JOB_RETRY_BASE_SECS", default_value_t = RetryPolicy::JOBS.base.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    job_retry_base_secs: u64,
    /// Longest wait between two attempts of a job, in seconds.
    #[arg(long, env = "JOB_RETRY_CAP_SECS", default_value_t = RetryPolicy::JOBS.cap.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    job_retry_cap_secs: u64,
    /// Attempts of a partner status callback before it is dead-lettered.
    #[arg(long, env = "CALLBACK_MAX_ATTEMPTS", default_value_t = RetryPolicy::CALLBACKS.max_attempts,
          value_parser = clap::value_parser!(u32).range(1..))]
    callback_max_attempts: u32,
    /// Seconds before a callback's first retry; each later wait doubles.
    #[arg(long, env = "CALLBACK_RETRY_BASE_SECS", default_value_t = RetryPolicy::CALLBACKS.base.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    callback_retry_base_secs: u64,
    /// Longest wait between two attempts of a callback, in seconds.
    #[arg(long, env = "CALLBACK_RETRY_CAP_SECS", default_value_t = RetryPolicy::CALLBACKS.cap.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    callback_retry_cap_secs: u64,
    /// Do not run an outbox relay in this process.
    #[arg(long, env = "WORKER_NO_RELAY", value_parser = BoolishValueParser::new())]
    no_relay: bool,
}

/// A retry policy from its settings, keeping the jitter of `template`.
/// `name` is the prefix of the settings' variables (`JOB`, `CALLBACK`).
fn policy(
    name: &str,
    template: RetryPolicy,
    max_attempts: u32,
    base_secs: u64,
    cap_secs: u64,
) -> anyhow::Result<RetryPolicy> {
    ensure!(max_attempts >= 1, "{name}_MAX_ATTEMPTS must be at least 1");
    ensure!(
        base_secs >= 1 && cap_secs >= 1,
        "{name}_RETRY_BASE_SECS and {name}_RETRY_CAP_SECS must be positive"
    );
    ensure!(
        base_secs <= cap_secs,
        "{name}_RETRY_BASE_SECS ({base_secs}) must not exceed {name}_RETRY_CAP_SECS ({cap_secs})"
    );
    Ok(RetryPolicy {
        max_attempts,
        base: Duration::from_secs(base_secs),
        cap: Duration::from_secs(cap_secs),
        ..template
    })
}

/// The kinds named by `WORKER_KINDS` / `--kinds`: every kind when unset; a
/// list that names none (`,`) is refused rather than read as every kind.
fn parse_kinds(names: &[String]) -> anyhow::Result<Vec<JobKind>> {
    if names.is_empty() {
        return Ok(JobKind::ALL.to_vec());
    }
    if names.iter().all(|n| n.trim().is_empty()) {
        bail!(
            "WORKER_KINDS (or --kinds) names no job kind; name some ({}), or leave it unset for \
             every kind",
            JobKind::ALL.map(|k| k.name()).join(", ")
        );
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
async fn main() -> ExitCode {
    let args = Args::parse();
    // lapin logs at ERROR what our own code reports (a lost connection, a
    // channel the broker closed) or what is expected (a probe of a queue that
    // is not there); RUST_LOG=lapin=debug brings it back.
    telemetry::init("info,sqlx=warn,lapin=off");
    match run(args).await {
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

async fn run(args: Args) -> anyhow::Result<()> {
    let kinds = parse_kinds(&args.kinds)?;
    let retry = policy(
        "JOB",
        RetryPolicy::JOBS,
        args.job_max_attempts,
        args.job_retry_base_secs,
        args.job_retry_cap_secs,
    )?;
    let callback_retry = policy(
        "CALLBACK",
        RetryPolicy::CALLBACKS,
        args.callback_max_attempts,
        args.callback_retry_base_secs,
        args.callback_retry_cap_secs,
    )?;
    let config = Config::from_env()?;
    purge::Retention::from_config(&config).check(&[retry, callback_retry])?;
    // A mail setting that cannot work, or would send a password in clear,
    // stops the start at once, before any wait.
    let mailer = Mailer::from_config(&config)?;
    production::warn_at_start(&config, production::Binary::Worker);
    let topology = Topology::from_env()?;
    let (pool, registration) = startup::prepare(&config, "i9-worker").await?;
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
    worker_config.retry = retry;
    worker_config.callback_retry = callback_retry;
    tracing::info!(
        ?retry,
        ?callback_retry,
        relay = !args.no_relay,
        "i9-worker starting"
    );
    // Every worker purges expired rows; one at a time does (workers/src/purge.rs).
    let purger = tokio::spawn(purge::run(
        pool.clone(),
        purge::Retention::from_config(&config),
        stop_rx.clone(),
    ));
    let outbox_watch = tokio::spawn(outbox_watch::run(
        pool.clone(),
        Duration::from_secs(60),
        stop_rx.clone(),
    ));
    let ctx = Context::with_mailer(config, pool, mailer);
    let worker = tokio::spawn(consumer::run(ctx, worker_config, stop_rx));

    i9_common::shutdown::signal().await;
    tracing::info!("stopping: finishing the jobs in hand");
    let _ = stop_tx.send(true);
    let worked = worker.await;
    let _ = purger.await;
    let _ = outbox_watch.await;
    let relayed = match relay {
        Some(r) => r.await,
        None => Ok(()),
    };
    // Nothing more is written: leave the process registry.
    registration.end().await;
    worked??;
    relayed?;
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

    #[test]
    fn a_list_of_no_kinds_is_refused() {
        let args = Args::try_parse_from(["i9-worker", "--kinds", ","]).unwrap();
        let e = parse_kinds(&args.kinds).unwrap_err().to_string();
        assert!(
            e.starts_with("WORKER_KINDS (or --kinds) names no job kind")
                && e.contains("post_status_callback"),
            "{e}"
        );
        assert!(parse_kinds(&[" ".into()]).is_err());
        let args = Args::try_parse_from(["i9-worker"]).unwrap();
        assert_eq!(parse_kinds(&args.kinds).unwrap().len(), 4);
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Args::command().debug_assert();
    }

    #[test]
    fn retry_policies_default_to_the_constants() {
        let args = Args::try_parse_from(["i9-worker"]).unwrap();
        let jobs = policy(
            "JOB",
            RetryPolicy::JOBS,
            args.job_max_attempts,
            args.job_retry_base_secs,
            args.job_retry_cap_secs,
        )
        .unwrap();
        assert_eq!(jobs, RetryPolicy::JOBS);
        let callbacks = policy(
            "CALLBACK",
            RetryPolicy::CALLBACKS,
            args.callback_max_attempts,
            args.callback_retry_base_secs,
            args.callback_retry_cap_secs,
        )
        .unwrap();
        assert_eq!(callbacks, RetryPolicy::CALLBACKS);
    }

    #[test]
    fn retry_settings_are_validated() {
        let p = policy("CALLBACK", RetryPolicy::CALLBACKS, 4, 1, 2).unwrap();
        assert_eq!(
            (p.max_attempts, p.base, p.cap, p.jitter),
            (
                4,
                Duration::from_secs(1),
                Duration::from_secs(2),
                RetryPolicy::CALLBACKS.jitter
            )
        );
        let e = policy("CALLBACK", RetryPolicy::CALLBACKS, 4, 10, 2).unwrap_err();
        assert!(
            e.to_string().contains(
                "CALLBACK_RETRY_BASE_SECS (10) must not exceed CALLBACK_RETRY_CAP_SECS (2)"
            ),
            "{e}"
        );
        for bad in [
            ["--job-max-attempts", "0"],
            ["--job-retry-base-secs", "0"],
            ["--callback-retry-cap-secs", "-1"],
            ["--job-retry-cap-secs", "soon"],
        ] {
            assert!(
                Args::try_parse_from(["i9-worker", bad[0], bad[1]]).is_err(),
                "{bad:?}"
            );
        }
        assert!(
            Args::try_parse_from(["i9-worker", "--no-relay"])
                .unwrap()
                .no_relay
        );
    }
}
