//! `i9-admin`: the operator's command line.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use i9_common::{crypto::DataCipher, db, seed, telemetry, Config};

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

async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Migrate => {
            let config = Config::from_env()?;
            db::migrate(&config).await?;
            println!("migrations applied");
        }
        Command::Seed { file } => {
            let config = Config::from_env()?;
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let org = seed::parse(&text)?;
            let pool = db::connect(&config).await?;
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
        Command::Openapi => {
            println!(
                "{}",
                serde_json::to_string_pretty(&i9_api::routes::openapi::document())?
            );
        }
    }
    Ok(())
}
