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
    /// Partner status callbacks that were given up on, as the database
    /// records them (`partner_events.dead_at`). The dead-letter queue itself,
    /// callbacks included, is `i9-admin jobs`.
    #[command(subcommand)]
    Callbacks(CallbackCommand),
    /// Failed jobs of every kind, in the dead-letter queue (`{AMQP_PREFIX}.dead`):
    /// list, replay and purge them (docs/operations.md, "Failed jobs").
    Jobs(JobArgs),
}

#[derive(Subcommand)]
enum CallbackCommand {
    /// List dead-lettered callbacks: event, employee, sequence, attempts, last
    /// error (from the database; `jobs failed --kind post_status_callback`
    /// lists their dead messages).
    Failed,
    /// Queue a fresh callback job for dead-lettered callbacks (one event id,
    /// or --all) and clear their dead mark. Their old dead messages stay in
    /// the dead-letter queue: `jobs replay` moves those instead, and `jobs
    /// purge` removes them after a redeliver.
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
    // lapin logs its own connection teardown at exit as errors; the commands
    // report what failed themselves.
    telemetry::init("warn,lapin=off");
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
            let pool = db::connect(&config).await?;
            check_keys(&pool, &config).await?;
            println!("migrations applied; keys match the data");
        }
        Command::Seed { file } => {
            let config = Config::from_env()?;
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let org = seed::parse(&text)?;
            seed::check_callback_urls(&org, config.allow_private_callbacks)?;
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
                    } else {
                        println!(
                            "{:<36}  {:<8} {:<4} {:<18} {:<8} {:<24}  LAST",
                            "EVENT", "EMPLOYEE", "SEQ", "TYPE", "ATTEMPTS", "DEAD AT (UTC)"
                        );
                    }
                    for f in failed {
                        println!(
                            "{}  {:<8} {:<4} {:<18} {:<8} {:<24}  {}",
                            f.id,
                            f.employee_id,
                            f.sequence,
                            f.event_type,
                            f.attempts,
                            f.dead_at
                                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
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
        Command::Jobs(args) => jobs(args).await?,
        Command::Openapi => {
            println!(
                "{}",
                serde_json::to_string_pretty(&i9_api::routes::openapi::document())?
            );
        }
    }
    Ok(())
}

// `i9-admin jobs`: the dead-letter queue.

use i9_common::{
    amqp::Topology,
    dead_letters::{self, DeadLetters, Selection},
    jobs::JobKind,
};

#[derive(clap::Args)]
struct JobArgs {
    /// Messages read from the dead-letter queue at most in one run (AMQP's
    /// largest prefetch); a run after it reads the next ones.
    #[arg(
        long,
        global = true,
        value_name = "N",
        default_value_t = u16::MAX,
        value_parser = clap::value_parser!(u16).range(1..),
    )]
    max_messages: u16,
    #[command(subcommand)]
    command: JobCommand,
}

#[derive(Subcommand)]
enum JobCommand {
    /// List the failed jobs: job id, kind, attempts, reason, when, copies,
    /// what it is about (ids only) and the last error. Leaves the queue as it was.
    Failed {
        /// Only jobs of this kind.
        #[arg(long, value_parser = parse_kind)]
        kind: Option<JobKind>,
        /// Jobs shown at most.
        #[arg(long, value_name = "N", default_value_t = 100)]
        limit: usize,
    },
    /// Send failed jobs to their queues again with a fresh attempt count, and
    /// remove them from the dead-letter queue once the broker confirmed. A
    /// callback's partner event loses its dead mark (`callbacks failed`).
    Replay {
        #[command(flatten)]
        which: Which,
    },
    /// Remove failed jobs from the dead-letter queue for good.
    Purge {
        #[command(flatten)]
        which: Which,
        /// Confirm purging with --all.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(clap::Args)]
struct Which {
    /// Job ids, as `jobs failed` prints them.
    #[arg(value_name = "JOB_ID")]
    ids: Vec<String>,
    /// Every failed job (of --kind).
    #[arg(long)]
    all: bool,
    /// With --all: only jobs of this kind.
    #[arg(long, value_parser = parse_kind)]
    kind: Option<JobKind>,
}

impl Which {
    fn selection(self) -> anyhow::Result<Selection> {
        anyhow::ensure!(
            !self.all || self.ids.is_empty(),
            "name job ids or pass --all, not both"
        );
        if self.all {
            return Ok(Selection::All { kind: self.kind });
        }
        anyhow::ensure!(self.kind.is_none(), "--kind goes with --all");
        anyhow::ensure!(!self.ids.is_empty(), "name job ids, or pass --all");
        Ok(Selection::Ids(self.ids))
    }
}

fn parse_kind(s: &str) -> Result<JobKind, String> {
    JobKind::parse(s).ok_or_else(|| {
        let kinds: Vec<&str> = JobKind::ALL.iter().map(|k| k.name()).collect();
        format!("not a job kind; one of {}", kinds.join(", "))
    })
}

async fn jobs(args: JobArgs) -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let limits = dead_letters::Limits {
        max_messages: usize::from(args.max_messages),
        ..Default::default()
    };
    let dlq = DeadLetters::connect(&config.amqp_url, Topology::from_env(), limits).await?;
    let result = match args.command {
        JobCommand::Failed { kind, limit } => {
            dlq.list(kind).await.map(|l| print_listing(&l, limit))
        }
        JobCommand::Replay { which } => {
            let which = which.selection()?;
            // Connects only if a callback is replayed.
            let pool = db::connect_lazy(&config)?;
            match dlq.replay(&which, Some(&pool)).await {
                Ok(outcome) => {
                    print_outcome("replayed", &outcome);
                    Ok(())
                }
                Err(dead_letters::Error::Interrupted { done, source }) => {
                    for job in &done {
                        println!("replayed {}", job_line(job));
                    }
                    Err(dead_letters::Error::Interrupted { done, source })
                }
                Err(e) => Err(e),
            }
        }
        JobCommand::Purge { which, yes } => {
            let which = which.selection()?;
            anyhow::ensure!(
                yes || matches!(which, Selection::Ids(_)),
                "purging with --all removes those jobs for good: add --yes"
            );
            dlq.purge(&which).await.map(|o| print_outcome("purged", &o))
        }
    };
    dlq.close().await;
    Ok(result?)
}

const NONE: &str = "-";

fn print_listing(l: &dead_letters::Listing, limit: usize) {
    println!(
        "{}: {} message(s) waiting, {} read{}",
        l.scanned.queue,
        l.scanned.ready,
        l.scanned.read,
        if l.scanned.complete {
            ""
        } else {
            " (the limit; --max-messages reads more)"
        }
    );
    if l.jobs.is_empty() {
        println!("no failed jobs");
        return;
    }
    println!(
        "{:<36}  {:<22}  {:>8}  {:<14}  {:<20}  {:>6}  {:<44}  ERROR",
        "JOB ID", "KIND", "ATTEMPTS", "REASON", "DEAD AT", "COPIES", "ABOUT"
    );
    for job in l.jobs.iter().take(limit) {
        println!(
            "{:<36}  {:<22}  {:>8}  {:<14}  {:<20}  {:>6}  {:<44}  {}",
            job.id,
            job.kind.as_deref().unwrap_or(NONE),
            job.attempts
                .map_or_else(|| NONE.to_owned(), |a| a.to_string()),
            job.reason,
            job.dead_at.map_or_else(
                || NONE.to_owned(),
                |t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
            ),
            job.copies,
            job.subject.as_deref().unwrap_or(NONE),
            match (&job.malformed, &job.error) {
                (Some(m), _) => format!("malformed: {m}"),
                (None, Some(e)) => e.clone(),
                (None, None) => NONE.to_owned(),
            }
        );
    }
    let messages: usize = l.jobs.iter().map(|j| j.copies).sum();
    println!("{} failed job(s) in {messages} message(s)", l.jobs.len());
    if l.jobs.len() > limit {
        println!("{} more not shown (--limit)", l.jobs.len() - limit);
    }
}

fn job_line(job: &dead_letters::DeadJob) -> String {
    let mut line = format!(
        "{} {} ({})",
        job.id,
        job.kind.as_deref().unwrap_or(NONE),
        job.subject
            .as_deref()
            .or(job.malformed.as_deref())
            .unwrap_or(NONE)
    );
    if job.copies > 1 {
        line.push_str(&format!(", {} copies", job.copies));
    }
    line
}

fn print_outcome(verb: &str, o: &dead_letters::Outcome) {
    for job in &o.done {
        println!("{verb} {}", job_line(job));
    }
    let messages: usize = o.done.iter().map(|j| j.copies).sum();
    println!("{} job(s) {verb} ({messages} message(s))", o.done.len());
    if !o.left_malformed.is_empty() {
        println!(
            "{} malformed message(s) left in {}: they can be purged, not replayed",
            o.left_malformed.len(),
            o.scanned.queue
        );
    }
    if !o.scanned.complete {
        println!(
            "{} held more than the {} message(s) read: run again for the rest",
            o.scanned.queue, o.scanned.read
        );
    }
}
