//! `i9-api`: the HTTP service.

use std::process::ExitCode;

use anyhow::Context;
use clap::{builder::BoolishValueParser, Parser};
use i9_api::Application;
use i9_common::{amqp::Topology, config::ENV_HELP, production, relay, startup, telemetry, Config};

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
    after_help = ENV_HELP
)]
struct Args {
    /// Run no outbox relay in this process (by default every API process
    /// relays the outbox it writes; several relays share it safely).
    #[arg(long, env = "API_NO_RELAY", value_parser = BoolishValueParser::new())]
    no_relay: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    // lapin logs at ERROR what our own code reports (a refused login, a lost
    // connection, a channel the broker closed) or what is expected (a probe of
    // a queue that is not there); RUST_LOG=lapin=debug brings it back.
    telemetry::init("info,i9_api=info,tower_http=info,sqlx=warn,lapin=off");
    match run(args).await {
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

async fn run(args: Args) -> anyhow::Result<()> {
    let config = Config::from_env()?;
    production::warn_at_start(&config, production::Binary::Api);
    let topology = Topology::from_env()?;
    match i9_api::server::make_room_for_connections(&config) {
        Ok(limit) => tracing::debug!(limit, "open-file limit"),
        Err(warning) => tracing::warn!(setting = "HTTP_MAX_CONNECTIONS", "{warning}"),
    }
    let (pool, registration) = startup::prepare(&config, "i9-api").await?;
    let addr = config.bind_addr;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let relay = (!args.no_relay).then(|| {
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
    tracing::info!(%addr, relay = !args.no_relay, "i9-api listening");
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
    fn the_relay_switch_reads_booleans_as_the_configuration_does() {
        use clap::builder::TypedValueParser;
        use i9_common::config::{bool_word, FALSE_WORDS, TRUE_WORDS};
        let (parser, cmd) = (BoolishValueParser::new(), Args::command());
        for word in TRUE_WORDS.iter().chain(&FALSE_WORDS) {
            let flag = parser
                .parse_ref(&cmd, None, std::ffi::OsStr::new(word))
                .ok();
            assert_eq!(flag, bool_word(word), "{word}");
        }
        assert!(
            Args::try_parse_from(["i9-api", "--no-relay"])
                .unwrap()
                .no_relay
        );
        assert!(!Args::try_parse_from(["i9-api"]).unwrap().no_relay);
    }
}
