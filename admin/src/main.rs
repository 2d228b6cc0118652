//! `i9-admin`: the operator's command line.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use i9_common::{crypto::DataCipher, db, key_check, seed, telemetry, Config};

#[derive(Parser)]
#[command(
    name = "i9-admin",
    about = "Operator tools for the employment eligibility records service"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create the database if needed and apply every migration.
    Migrate,
    /// Load an organization (legal entities, groups, roles, users, clients,
    /// employees) from a JSON file. Idempotent; prints the ids assigned.
    Seed { file: PathBuf },
    /// Print the OpenAPI document of the API.
    Openapi,
    /// Partner status callbacks that were given up on.
    #[command(subcommand)]
    Callbacks(CallbackCommand),
}

#[derive(Subcommand)]
enum CallbackCommand {
    /// List dead-lettered callbacks: event, employee, sequence, attempts, last error.
    Failed,
    /// Send dead-lettered callbacks again: one event id, or --all.
    Redeliver {
        /// The event to redeliver.
        event: Option<uuid::Uuid>,
        /// Redeliver every dead-lettered callback.
        #[arg(long, conflicts_with = "event")]
        all: bool,
    },
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    telemetry::init("warn");
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Refuse keys that are not the data's, and record them on a new database
/// (`common/src/key_check.rs`).
async fn check_keys(pool: &sqlx::PgPool, config: &Config) -> anyhow::Result<()> {
    match key_check::verify_or_record(pool, &DataCipher::from_config(config)).await? {
        key_check::KeyCheck::Verified => {}
        key_check::KeyCheck::Recorded => println!("keys recorded in key_check"),
    }
    Ok(())
}

async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Migrate => {
            let config = Config::from_env()?;
            db::migrate(&config).await?;
            println!("migrations applied");
            let pool = db::connect(&config).await?;
            check_keys(&pool, &config).await?;
        }
        Command::Seed { file } => {
            let config = Config::from_env()?;
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let org = seed::parse(&text)?;
            let pool = db::connect(&config).await?;
            check_keys(&pool, &config).await?;
            let assigned = seed::load(&pool, &DataCipher::from_config(&config), &org).await?;
            for a in &assigned {
                println!(
                    "{:<13} {:<28} id {:<6} {}",
                    a.kind,
                    a.key,
                    a.id,
                    a.outcome.as_str()
                );
            }
        }
        Command::Callbacks(cmd) => {
            let config = Config::from_env()?;
            let pool = db::connect(&config).await?;
            match cmd {
                CallbackCommand::Failed => {
                    let failed = i9_common::events::failed(&pool).await?;
                    if failed.is_empty() {
                        println!("no failed callbacks");
                    }
                    for f in failed {
                        println!(
                            "{}  employee {:<6} seq {:<4} {:<18} attempts {:<3} dead {}  last: {}",
                            f.id,
                            f.employee_id,
                            f.sequence,
                            f.event_type,
                            f.attempts,
                            i9_common::domain::format_timestamp(f.dead_at),
                            match (f.last_status, f.last_error) {
                                (Some(s), _) => format!("HTTP {s}"),
                                (None, Some(e)) => e,
                                (None, None) => "-".into(),
                            }
                        );
                    }
                }
                CallbackCommand::Redeliver { event, all } => {
                    anyhow::ensure!(event.is_some() || all, "name an event id, or pass --all");
                    let ids = i9_common::events::redeliver(&pool, event).await?;
                    if event.is_some() && ids.is_empty() {
                        anyhow::bail!("that event is not a failed callback");
                    }
                    for id in &ids {
                        println!("redelivering {id}");
                    }
                    println!("{} callback(s) queued again", ids.len());
                }
            }
        }
        Command::Openapi => {
            println!(
                "{}",
                serde_json::to_string_pretty(&i9_api::routes::openapi::document())?
            );
        }
    }
    Ok(())
}
