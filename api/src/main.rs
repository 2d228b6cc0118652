//! `i9-api`: the HTTP service.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use i9_api::Application;
use i9_common::{
    amqp::Topology,
    config::{env_help, ApiSettings, Binary},
    production, relay, startup, telemetry, Config,
};

#[derive(Parser, Debug)]
#[command(
    name = "i9-api",
    version,
    about = "The HTTP API of the employment eligibility records service",
    long_about = "The HTTP API of the employment eligibility records service. Listens on \
                  BIND_ADDR; at start waits up to STARTUP_TIMEOUT_SECS for Postgres and \
                  RabbitMQ and checks the keys against the data, and exits non-zero when \
                  either fails. SIGTERM or Ctrl-C stops accepting and finishes the requests \
                  in flight.",
    after_help = env_help(Binary::Api)
)]
struct Args {
    /// Run no outbox relay in this process (by default every API process
    /// relays the outbox it writes; several relays share it safely). Same as
    /// API_NO_RELAY=true.
    #[arg(long)]
    no_relay: bool,
}

impl Args {
    /// The command line's values, under the variables they stand for
    /// (`common/src/config.rs` reads both).
    fn settings(&self) -> Vec<(&'static str, String)> {
        let mut args = Vec::new();
        if self.no_relay {
            args.push(("API_NO_RELAY", "true".to_owned()));
        }
        args
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let settings = ApiSettings::from_env(args.settings());
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
            eprintln!("i9-api: error: {e:#}");
            // Exit here, before the runtime shuts down: tasks still running
            // (a RabbitMQ connection opened meanwhile) would log their
            // teardown after this line, and the reason must be the last line
            // an operator reads (docs/operations.md, "Start-up, outages and
            // readiness"). Logs are written unbuffered: nothing is lost.
            std::process::exit(1)
        }
    }
}

async fn run((config, api): (Config, ApiSettings)) -> anyhow::Result<()> {
    production::warn_at_start(&config, production::Binary::Api);
    let topology = Topology::from_config(&config);
    match i9_api::server::make_room_for_connections(&config) {
        Ok(limit) => tracing::debug!(limit, "open-file limit"),
        Err(warning) => tracing::warn!(setting = "HTTP_MAX_CONNECTIONS", "{warning}"),
    }
    let (pool, registration) = startup::prepare(&config, "i9-api").await?;
    let addr = config.bind_addr;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let relay = (!api.no_relay).then(|| {
        tokio::spawn(relay::run(
            pool.clone(),
            relay::RelayConfig::new(config.amqp_url.clone(), topology),
            stop_rx,
        ))
    });
    let app = match Application::build(config, pool).await {
        Ok(app) => app,
        Err(e) => {
            registration.end().await;
            return Err(e).with_context(|| format!("binding {addr}"));
        }
    };
    tracing::info!(%addr, relay = !api.no_relay, "i9-api listening");
    // SIGTERM or Ctrl-C: stop accepting, finish in-flight requests.
    let served = app.run(i9_common::shutdown::signal()).await;
    let _ = stop_tx.send(true);
    if let Some(r) = relay {
        let _ = r.await;
    }
    // Nothing more is written: leave the process registry.
    registration.end().await;
    served?;
    tracing::info!("i9-api stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Args::command().debug_assert();
    }

    #[test]
    fn the_relay_switch_stands_for_its_variable() {
        use i9_common::config::{read, WithArgs};
        let env = std::collections::HashMap::from([
            ("APP_ENV".to_owned(), "development".to_owned()),
            ("API_NO_RELAY".to_owned(), "off".to_owned()),
        ]);
        let no_relay = |argv: &[&str]| {
            let args = Args::try_parse_from(argv).unwrap().settings();
            read(Binary::Api, &WithArgs { args, rest: &env })
                .unwrap()
                .api
                .no_relay
        };
        assert!(no_relay(&["i9-api", "--no-relay"]));
        assert!(!no_relay(&["i9-api"]));
    }
}
