//! `i9-admin`: the operator's command line.

mod inspection;
mod out;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use i9_common::{
    config::KeylessConfig,
    crypto::DataCipher,
    db,
    key_check::{self, Ring, RINGS},
    key_usage::{self, FINGERPRINT_COLUMN},
    keys::KeyId,
    processes::{LiveProcess, STALE_AFTER},
    rekey::{self, HeldBy},
    seed, signing_secrets, telemetry, Config,
};
use out::say;

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
    /// employees) from a JSON file. Idempotent; prints the ids assigned. A
    /// partner's stored signing secret is kept when the file's differs,
    /// unless --rotate-secrets. Outside APP_ENV=development, refuses the
    /// example organization's published passwords and secrets, and user
    /// passwords the set-password page would refuse.
    Seed {
        file: PathBuf,
        /// Make a partner's differing signingSecret the current one (the
        /// replaced one keeps signing for the overlap); a secret the partner
        /// replaced before is refused, never made current again.
        #[arg(long)]
        rotate_secrets: bool,
        /// With --rotate-secrets: how long a replaced signing secret keeps
        /// signing (e.g. 7d, 24h, 0s).
        #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_overlap,
              requires = "rotate_secrets")]
        overlap: std::time::Duration,
    },
    /// Re-encrypt every encrypted value, and re-hash every SSN hash, under the
    /// current keys of DATA_ENCRYPTION_KEYS and SSN_HASH_KEYS, in batches
    /// (safe while the service runs; run again to resume). Reports counts per
    /// column and when an older key may be removed (docs/operations.md,
    /// "Keys and rotation").
    Rekey {
        /// Rows per transaction.
        #[arg(long, value_name = "N", default_value_t = rekey::DEFAULT_BATCH,
              value_parser = clap::value_parser!(i64).range(1..=100_000))]
        batch_size: i64,
    },
    /// The key rings: which key ids are recorded, what uses each.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Partner clients' signing secrets.
    #[command(subcommand)]
    Partners(PartnerCommand),
    /// Print the OpenAPI document of the API.
    Openapi,
    /// Partner status callbacks that were given up on, as the database
    /// records them (`partner_events.dead_at`). The dead-letter queue itself,
    /// callbacks included, is `i9-admin jobs`. Reads no keys.
    #[command(subcommand)]
    Callbacks(CallbackCommand),
    /// Failed jobs of every kind, in the dead-letter queue (`{AMQP_PREFIX}.dead`):
    /// list, replay and purge them (docs/operations.md, "Failed jobs"). Reads
    /// no keys.
    Jobs(JobArgs),
    /// E-Verify (docs/everify.md): import the Status Change Report.
    #[command(subcommand)]
    Everify(EverifyCommand),
    /// I-9s past their retention date (docs/retention.md): run a purge round,
    /// as the worker's daily job does, or with --dry-run list what would go
    /// (I-9s, employees) and what a legal hold keeps (ids, retention date,
    /// rule, hold; never personal data), and change nothing.
    /// Reads no keys.
    Purge {
        /// List what a round would purge; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// With --dry-run: the day to list for (YYYY-MM-DD), instead of today.
        #[arg(long, value_name = "DATE", requires = "dry_run")]
        as_of: Option<chrono::NaiveDate>,
    },
    /// For a notice of inspection (docs/inspection.md): every I-9 of the
    /// employees of a legal entity still under retention (not purged), one
    /// PDF each (every section, Supplements A and B, the E-Verify cases and
    /// the audit trail; the SSN masked to its last four digits), and
    /// index.csv listing them, readable by you alone (the directory 0700, the
    /// files 0600). Prints the counts and the time taken; audited as
    /// `inspection.exported`. Reads no keys.
    Inspection {
        /// The legal entity's id (`GET /v1/eins`).
        #[arg(long, value_name = "N")]
        legal_entity: i64,
        /// The directory to write into: made if missing, refused if it holds
        /// anything, unless --force.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Write into a directory that is not empty (files of the same names
        /// are replaced).
        #[arg(long)]
        force: bool,
    },
}

#[derive(Subcommand)]
enum EverifyCommand {
    /// Import E-Verify's Status Change Report (the CSV download) of a legal
    /// entity, as `POST /v1/eins/{id}/everify/status-change-reports` does:
    /// each row's outcome by row number (never a value) and the counts;
    /// rows applied before do nothing again (docs/everify.md, "The Status
    /// Change Report (2025)").
    ImportStatusChangeReport {
        /// The legal entity's id.
        #[arg(long, value_name = "N")]
        legal_entity: i64,
        /// The report file (CSV, at most 5 MB).
        file: PathBuf,
    },
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Per ring, each key id (current, in the ring, unused since), how many
    /// stored values each column holds under it, and the live processes with
    /// their key ids (docs/operations.md, "Keys and rotation"). Key ids and
    /// counts only, never a key or a value. Runs without the start-up key
    /// check, to show what a refused start is about.
    Status,
}

#[derive(Subcommand)]
enum PartnerCommand {
    /// Give the partner client a new signing secret, printed once; the old
    /// one keeps signing callbacks (a second signature in the same header)
    /// until the overlap ends. Ends the overlap of any earlier secret: at
    /// most two secrets sign. Names each secret that stops signing, and when.
    RotateSecret {
        /// The partner's clientId.
        client_id: String,
        /// How long the old secret keeps signing (e.g. 7d, 24h; 0s: not at all).
        #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_overlap)]
        overlap: std::time::Duration,
    },
    /// End the overlap now: callbacks carry only the current secret's signature.
    EndOverlap {
        /// The partner's clientId.
        client_id: String,
    },
}

fn parse_overlap(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (e.g. 7d, 24h, 90m, 0s)"))
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
    let cli = Cli::parse();
    // Read once, whatever the command; a command that needs none (openapi)
    // runs with settings that do not read.
    let config = Settings::read(&cli.command);
    telemetry::init(&config.log(), telemetry::ADMIN_DEFAULT_FILTER);
    match run(cli, config).await {
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
        key_check::KeyCheck::Recorded => say!("keys recorded in key_ring"),
    }
    Ok(())
}

/// The settings a command reads. `jobs` and `callbacks` neither encrypt nor
/// decrypt: they read no keys, so an operator on call can run them with the
/// broker's and the database's settings alone (docs/operations.md, "The
/// commands"); every other command reads and checks the keys.
enum Settings {
    WithKeys(anyhow::Result<Config>),
    Keyless(anyhow::Result<KeylessConfig>),
}

impl Settings {
    fn read(command: &Command) -> Self {
        match command {
            Command::Jobs(_)
            | Command::Callbacks(_)
            | Command::Purge { .. }
            | Command::Inspection { .. } => Self::Keyless(KeylessConfig::from_env()),
            _ => Self::WithKeys(Config::from_env()),
        }
    }

    fn log(&self) -> i9_common::config::LogSettings {
        match self {
            Self::WithKeys(c) => c.as_ref().map(|c| c.log.clone()).unwrap_or_default(),
            Self::Keyless(c) => c.as_ref().map(|c| c.log().clone()).unwrap_or_default(),
        }
    }

    /// The settings with the keys (every command but `jobs` and `callbacks`).
    fn with_keys(self) -> anyhow::Result<Config> {
        match self {
            Self::WithKeys(c) => c,
            Self::Keyless(_) => anyhow::bail!("this command's settings were read without keys"),
        }
    }

    /// The settings without keys (`jobs`, `callbacks`).
    fn keyless(self) -> anyhow::Result<KeylessConfig> {
        match self {
            Self::Keyless(c) => c,
            Self::WithKeys(_) => anyhow::bail!("this command's settings were read with keys"),
        }
    }
}

async fn run(cli: Cli, config: Settings) -> anyhow::Result<()> {
    match cli.command {
        Command::Migrate => {
            let config = config.with_keys()?;
            db::migrate(&config).await?;
            let pool = db::connect(&config).await?;
            check_keys(&pool, &config).await?;
            say!("migrations applied; keys match the data");
        }
        Command::Seed {
            file,
            rotate_secrets,
            overlap,
        } => {
            let config = config.with_keys()?;
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let org = seed::parse(&text)?;
            seed::check_callback_urls(&org, config.allow_private_callbacks)?;
            if config.production {
                seed::check_for_production(&org)?;
            }
            let pool = db::connect(&config).await?;
            check_keys(&pool, &config).await?;
            let options = seed::Options {
                rotate_secrets,
                overlap,
                public_base_url: config.public_base_url.clone(),
            };
            let (assigned, notes) =
                seed::load_with(&pool, &DataCipher::from_config(&config), &org, options).await?;
            for a in &assigned {
                say!(
                    "{:<13} {:<28} id {:<6} {}",
                    a.kind,
                    a.key,
                    a.id,
                    a.outcome.as_str()
                );
            }
            for note in &notes {
                match note {
                    seed::SecretNote::Kept { client_id } => say!(
                        "{client_id}: kept its current signing secret (the file's differs; rotate \
                         with --rotate-secrets or i9-admin partners rotate-secret)"
                    ),
                    seed::SecretNote::KeptReplaced { client_id } => say!(
                        "{client_id}: kept its current signing secret (the file's is one it \
                         replaced, which never becomes current again: write the current one into \
                         the file)"
                    ),
                    seed::SecretNote::Rotated { client_id, stops } => {
                        say!("{client_id}: new signing secret (the file's)");
                        for stop in stops {
                            say!("  {stop}");
                        }
                    }
                }
            }
        }
        Command::Rekey { batch_size } => {
            let config = config.with_keys()?;
            let pool = db::connect(&config).await?;
            check_keys(&pool, &config).await?;
            run_rekey(&pool, &DataCipher::from_config(&config), batch_size).await?;
        }
        Command::Keys(KeysCommand::Status) => {
            let config = config.with_keys()?;
            let pool = db::connect(&config).await?;
            let cipher = DataCipher::from_config(&config);
            print_key_status(&key_usage::status(&pool, &cipher).await?, &cipher);
        }
        Command::Partners(cmd) => {
            let config = config.with_keys()?;
            let pool = db::connect(&config).await?;
            check_keys(&pool, &config).await?;
            partners(&pool, &DataCipher::from_config(&config), cmd).await?;
        }
        Command::Callbacks(cmd) => {
            let pool = config.keyless()?.database().await?;
            match cmd {
                CallbackCommand::Failed => {
                    let failed = i9_common::events::failed(&pool).await?;
                    if failed.is_empty() {
                        say!("no failed callbacks");
                    } else {
                        say!(
                            "{:<36}  {:<8} {:<4} {:<18} {:<8} {:<24}  LAST",
                            "EVENT",
                            "EMPLOYEE",
                            "SEQ",
                            "TYPE",
                            "ATTEMPTS",
                            "DEAD AT (UTC)"
                        );
                    }
                    for f in failed {
                        say!(
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
                        say!("redelivering {id}");
                    }
                    say!("{} callback(s) queued again", ids.len());
                }
            }
        }
        Command::Jobs(args) => jobs(args, config.keyless()?).await?,
        Command::Purge { dry_run, as_of } => {
            let config = config.keyless()?;
            let pool = config.database().await?;
            purge_records(&pool, dry_run, as_of.unwrap_or_else(|| config.today())).await?;
        }
        Command::Inspection {
            legal_entity,
            out,
            force,
        } => {
            let pool = config.keyless()?.database().await?;
            let done = inspection::export(&pool, legal_entity, &out, force).await?;
            let secs = done.elapsed.as_secs_f64();
            say!(
                "wrote {} PDFs ({} pages, {:.1} MB) and {} for legal entity {legal_entity} in {secs:.1} s ({:.0} I-9s/s)",
                done.i9s,
                done.pages,
                done.bytes as f64 / 1_000_000.0,
                done.index.display(),
                if secs > 0.0 { done.i9s as f64 / secs } else { 0.0 },
            );
            if done.skipped > 0 {
                say!("skipped {} I-9s purged during the export", done.skipped);
            }
        }
        Command::Everify(EverifyCommand::ImportStatusChangeReport { legal_entity, file }) => {
            let config = config.with_keys()?;
            let pool = db::connect(&config).await?;
            import_status_change_report(&pool, &config, legal_entity, &file).await?;
        }
        Command::Openapi => {
            say!(
                "{}",
                serde_json::to_string_pretty(&i9_api::routes::openapi::document())?
            );
        }
    }
    Ok(())
}

// `i9-admin everify import-status-change-report` (docs/everify.md).

async fn import_status_change_report(
    pool: &sqlx::PgPool,
    config: &Config,
    legal_entity: i64,
    file: &std::path::Path,
) -> anyhow::Result<()> {
    use i9_common::models::{status_change_report as report, Actor, WriteError};
    let size = std::fs::metadata(file)
        .with_context(|| format!("cannot read {}", file.display()))?
        .len();
    if size > report::MAX_BYTES as u64 {
        anyhow::bail!("{} is larger than 5 MB", file.display());
    }
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut tx = pool.begin().await?;
    let imported = match report::import(
        &mut tx,
        &Actor::default(),
        legal_entity,
        &bytes,
        config.today(),
        config.everify_revocation_due_business_days,
        &config.public_base_url,
    )
    .await
    {
        Ok(i) => i,
        Err(WriteError::NotFound) => anyhow::bail!("no legal entity {legal_entity}"),
        Err(WriteError::Conflict(why)) => {
            anyhow::bail!("the file was not imported (nothing written): {why}")
        }
        Err(WriteError::Invalid(errors)) => {
            let lines: Vec<String> = errors
                .iter()
                .map(|e| format!("  {} ({}): {}", e.field, e.code, e.message))
                .collect();
            anyhow::bail!(
                "the file was not imported (nothing written):\n{}",
                lines.join("\n")
            );
        }
        Err(e) => return Err(e.into()),
    };
    tx.commit().await?;
    for r in &imported.results {
        say!(
            "row {}: {}",
            r.row,
            serde_json::to_value(r.outcome)?.as_str().unwrap_or("-")
        );
    }
    say!(
        "import {}: {} row(s): {} applied, {} already applied, {} not current, {} document \
         mismatch, {} not found; reverification due {}; {} email(s), {} partner event(s) queued",
        imported.import_id,
        imported.rows,
        imported.applied,
        imported.already_applied,
        imported.not_current,
        imported.document_mismatch,
        imported.not_found,
        imported.due_date,
        imported.emails,
        imported.events
    );
    Ok(())
}

// `i9-admin purge` (docs/retention.md).

async fn purge_records(
    pool: &sqlx::PgPool,
    dry_run: bool,
    today: chrono::NaiveDate,
) -> anyhow::Result<()> {
    use i9_common::models::retention::{self, PurgedBy, RULE};
    let (verb, run) = if dry_run {
        ("would purge", retention::dry_run(pool, today).await?)
    } else {
        match retention::purge_round_if_first(pool, today, PurgedBy::Admin).await? {
            Some(round) => (
                "purged",
                retention::DryRun {
                    i9s: round.i9s,
                    employees: round.employees,
                    kept: round.kept,
                },
            ),
            None => anyhow::bail!("another purge round is running now; try again when it ends"),
        }
    };
    // Ids and dates only, never personal data (docs/retention.md,
    // "`i9-admin purge`").
    for d in &run.i9s {
        say!(
            "i9 {:<8} employee {:<8} retention date {}  {RULE}",
            d.i9_id,
            d.employee_id,
            d.retention_date
        );
    }
    for e in &run.employees {
        say!("employee {e:<8} {verb} (terminated, every I-9 purged)");
    }
    for k in &run.kept {
        let on = match k.on {
            retention::HoldOn::Employee(id) => format!("on employee {id}"),
            retention::HoldOn::LegalEntity(id) => format!("on legal entity {id}"),
        };
        say!(
            "i9 {:<8} employee {:<8} retention date {}  kept by legal hold {} ({on})",
            k.i9_id,
            k.employee_id,
            k.retention_date,
            k.hold_id
        );
    }
    say!(
        "{verb} {} and {} as of {today}; kept by legal hold: {}",
        retention::counted(run.i9s.len(), "I-9", "I-9s"),
        retention::counted(run.employees.len(), "employee", "employees"),
        retention::count_i9s(&run.kept)
    );
    Ok(())
}

// `i9-admin rekey`.

async fn run_rekey(pool: &sqlx::PgPool, cipher: &DataCipher, batch: i64) -> anyhow::Result<()> {
    let (data, hash) = (cipher.data_key_ids(), cipher.hash_key_ids());
    say!(
        "rewriting under data key {} and SSN hash key {}, {batch} rows per transaction",
        data[0],
        hash[0]
    );
    let report = rekey::run(pool, cipher, batch, |c| {
        let verb = if c.name == rekey::SSN_HASH_COLUMN {
            "re-hashed"
        } else {
            "re-encrypted"
        };
        say!("{:<42} {:>9} {verb}", c.name, c.changed);
        for f in &c.failed {
            say!("  failed: {f}");
        }
    })
    .await?;
    let failed: usize = report.columns.iter().map(|c| c.failed.len()).sum();
    if report.complete() {
        say!(
            "every value is under data key {} and SSN hash key {}",
            data[0],
            hash[0]
        );
    } else {
        for (column, n) in &report.remaining {
            say!("{column}: {n} value(s) still under an older key");
        }
    }
    for (ids, ring, variable, nor) in [
        (
            &report.unused_data_keys,
            &data,
            "DATA_ENCRYPTION_KEYS",
            "no live process writes under them",
        ),
        (
            &report.unused_hash_keys,
            &hash,
            "SSN_HASH_KEYS",
            "no live process writes under them, no replayable idempotency record needs them",
        ),
    ] {
        // Only the keys still in this environment's ring need removing.
        let in_ring: Vec<String> = ids
            .iter()
            .filter(|id| ring.contains(id))
            .map(ToString::to_string)
            .collect();
        if !in_ring.is_empty() {
            say!(
                "no stored value uses key(s) {} of {variable} any more, {nor}: they may be \
                 removed from {variable}, then restart the processes",
                in_ring.join(", ")
            );
        }
    }
    for held in &report.held {
        let current = held.ring.ids(cipher)[0];
        let key = held.ring.key(held.key);
        match &held.by {
            HeldBy::Processes(by) => {
                say!(
                    "{key} is still the current key of {} live process(es), which write under it:",
                    by.len()
                );
                for p in by {
                    say!("  {p}");
                }
                say!(
                    "  restart them with key {current} current in {} (first in the ring), then \
                     run rekey again",
                    held.ring.variable()
                );
            }
            HeldBy::Idempotency(f) => say!(
                "{key} made the fingerprints of {} idempotency record(s) still replayable: a \
                 retry matches its record only while the ring has the key; the last expires at \
                 {} (UTC): run rekey again after that",
                f.records,
                utc(f.last_expires)
            ),
        }
    }
    if !report.complete() {
        anyhow::bail!(
            "{failed} value(s) could not be rewritten and some remain under older keys: \
             keep the older keys in the rings, fix what failed (above) and run rekey again"
        );
    }
    if !report.finished() {
        let keys: Vec<String> = report
            .held
            .iter()
            .map(|h| h.ring.key(h.key))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        anyhow::bail!(
            "{} still in use (above): not marked unused; keep them in the rings and run rekey \
             again",
            keys.join(", ")
        );
    }
    Ok(())
}

fn utc(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

// `i9-admin keys status`.

fn print_key_status(status: &key_usage::Status, cipher: &DataCipher) {
    for ring in RINGS {
        let ids = ring.ids(cipher);
        say!(
            "{} (this environment's ring: {})",
            ring.variable(),
            ids.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        let columns: Vec<&key_usage::ColumnUsage> = match ring {
            Ring::Data => status.columns.iter().collect(),
            Ring::SsnHash => vec![&status.ssn_hashes],
        };
        for id in status.key_ids(ring, cipher) {
            say!("  key {id}: {}", key_state(status, ring, &ids, id));
            for c in &columns {
                say!("    {:<44} {:>9}", c.column, c.under(id));
            }
            if ring == Ring::SsnHash {
                match status.fingerprints_under(id) {
                    Some(f) => say!(
                        "    {:<44} {:>9}  the last replayable until {}",
                        FINGERPRINT_COLUMN,
                        f.records,
                        utc(f.last_expires)
                    ),
                    None => say!("    {FINGERPRINT_COLUMN:<44} {:>9}", 0),
                }
            }
        }
        for c in &columns {
            if c.unreadable() > 0 {
                say!(
                    "  {}: {} value(s) in no format that names a key",
                    c.column,
                    c.unreadable()
                );
            }
        }
        if ring == Ring::SsnHash {
            if let Some(f) = status.fingerprints.iter().find(|f| f.key.is_none()) {
                say!(
                    "  {FINGERPRINT_COLUMN}: {} replayable record(s) under no key (from before \
                     fingerprints were keyed)",
                    f.records
                );
            }
        }
    }
    if status.processes.is_empty() {
        say!(
            "live processes: none (none has sent a heartbeat within {} s)",
            STALE_AFTER.as_secs()
        );
        return;
    }
    say!(
        "live processes (a heartbeat within {} s): {}",
        STALE_AFTER.as_secs(),
        status.processes.len()
    );
    say!(
        "  {:<10} {:<24} {:>8}  {:>9}  {:<20}  {:<9}  SSN HASH KEYS",
        "BINARY",
        "HOST",
        "PID",
        "HEARTBEAT",
        "STARTED (UTC)",
        "DATA KEYS"
    );
    for p in &status.processes {
        say!(
            "  {:<10} {:<24} {:>8}  {:>9}  {:<20}  {:<9}  {}",
            p.binary,
            p.host,
            p.pid,
            format!("{} s ago", p.heartbeat_age.as_secs()),
            utc(p.started_at),
            key_list(p, Ring::Data),
            key_list(p, Ring::SsnHash)
        );
    }
}

/// `current`, `in ring`, `unused since …`, with what else is wrong.
fn key_state(status: &key_usage::Status, ring: Ring, ids: &[KeyId], id: KeyId) -> String {
    let recorded = status.recorded(ring, id);
    let mut state = match (ids.iter().position(|&i| i == id), recorded) {
        (Some(0), _) => "current".to_owned(),
        (Some(_), _) => "in ring".to_owned(),
        (None, Some(r)) => match r.unused_since {
            Some(_) => "not in this ring".to_owned(),
            None => "not in this ring, and not marked unused: a start with this ring is refused \
                 until `i9-admin rekey`, run with a ring that has it, marks it unused (it says \
                 what still holds it)"
                .to_owned(),
        },
        (None, None) => "not in this ring".to_owned(),
    };
    match recorded {
        None => state.push_str(", not recorded in key_ring"),
        Some(r) => {
            if let Some(t) = r.unused_since {
                state.push_str(&format!(", unused since {}", utc(t)));
            }
            if r.matches == Some(false) {
                state.push_str(", NOT the key recorded under this id: a start with it is refused");
            }
        }
    }
    state
}

/// `2 (2,1)`: the current key, then the ring.
fn key_list(p: &LiveProcess, ring: Ring) -> String {
    let ids: Vec<String> = p.keys.ring(ring).iter().map(ToString::to_string).collect();
    format!("{} ({})", p.keys.current(ring), ids.join(","))
}

// `i9-admin partners`.

/// An OAuth client, and whether it is a partner (has a signing secret).
struct ClientRow {
    id: i64,
    partner: bool,
}

async fn partners(
    pool: &sqlx::PgPool,
    cipher: &DataCipher,
    cmd: PartnerCommand,
) -> anyhow::Result<()> {
    let client_id = match &cmd {
        PartnerCommand::RotateSecret { client_id, .. }
        | PartnerCommand::EndOverlap { client_id } => client_id.clone(),
    };
    let mut tx = pool.begin().await?;
    let client = sqlx::query_as!(
        ClientRow,
        r#"SELECT id, signing_secret_ciphertext IS NOT NULL AS "partner!"
         FROM oauth_clients WHERE client_id = $1"#,
        client_id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(ClientRow { id, partner }) = client else {
        anyhow::bail!("no client {client_id:?}");
    };
    anyhow::ensure!(
        partner,
        "client {client_id:?} is not a partner (no signing secret)"
    );
    match cmd {
        PartnerCommand::RotateSecret { overlap, .. } => {
            let secret = signing_secrets::generate();
            let ciphertext =
                cipher.encrypt(i9_common::crypto::Purpose::SigningSecret, secret.as_bytes());
            let stops = signing_secrets::replace(&mut tx, cipher, id, &ciphertext, overlap).await?;
            tx.commit().await?;
            say!("new signing secret of {client_id} (shown once; give it to the partner):");
            say!("{secret}");
            for stop in &stops {
                say!("{stop}");
            }
        }
        PartnerCommand::EndOverlap { .. } => {
            let ended = signing_secrets::end_overlap(&mut tx, id).await?;
            tx.commit().await?;
            if ended.is_empty() {
                say!("{client_id}: no replaced secret was signing callbacks");
            }
            for secret in ended {
                let stop = signing_secrets::Stop {
                    secret,
                    until: None,
                };
                say!("{client_id}: {stop}");
            }
        }
    }
    Ok(())
}

// `i9-admin jobs`: the dead-letter queue.

use i9_common::{
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

async fn jobs(args: JobArgs, config: KeylessConfig) -> anyhow::Result<()> {
    let limits = dead_letters::Limits {
        max_messages: usize::from(args.max_messages),
        ..Default::default()
    };
    let dlq = DeadLetters::connect(config.amqp_url(), config.topology(), limits).await?;
    let result = match args.command {
        JobCommand::Failed { kind, limit } => {
            dlq.list(kind).await.map(|l| print_listing(&l, limit))
        }
        JobCommand::Replay { which } => {
            let which = which.selection()?;
            // Connects only if a callback is replayed.
            let pool = config.database_lazy()?;
            match dlq.replay(&which, Some(&pool)).await {
                Ok(outcome) => {
                    print_outcome("replayed", &outcome);
                    Ok(())
                }
                Err(dead_letters::Error::Interrupted { done, source }) => {
                    for job in &done {
                        say!("replayed {}", job_line(job));
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
    say!(
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
        say!("no failed jobs");
        return;
    }
    say!(
        "{:<36}  {:<22}  {:>8}  {:<14}  {:<20}  {:>6}  {:<44}  ERROR",
        "JOB ID",
        "KIND",
        "ATTEMPTS",
        "REASON",
        "DEAD AT",
        "COPIES",
        "ABOUT"
    );
    for job in l.jobs.iter().take(limit) {
        say!(
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
    say!("{} failed job(s) in {messages} message(s)", l.jobs.len());
    if l.jobs.len() > limit {
        say!("{} more not shown (--limit)", l.jobs.len() - limit);
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
        say!("{verb} {}", job_line(job));
    }
    let messages: usize = o.done.iter().map(|j| j.copies).sum();
    say!("{} job(s) {verb} ({messages} message(s))", o.done.len());
    if !o.left_malformed.is_empty() {
        say!(
            "{} malformed message(s) left in {}: they can be purged, not replayed",
            o.left_malformed.len(),
            o.scanned.queue
        );
    }
    if !o.scanned.complete {
        say!(
            "{} held more than the {} message(s) read: run again for the rest",
            o.scanned.queue,
            o.scanned.read
        );
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every command's `--help` line is its own (the HR trial found
    /// `everify` showing the purge's text and `purge` none).
    #[test]
    fn each_command_has_its_own_description() {
        let cli = Cli::command();
        let about = |name: &str| {
            cli.find_subcommand(name)
                .and_then(|c| c.get_about())
                .map(ToString::to_string)
                .unwrap_or_default()
        };
        assert!(
            about("everify").starts_with("E-Verify"),
            "{}",
            about("everify")
        );
        assert!(about("purge").starts_with("I-9s past their retention date"));
        for c in cli.get_subcommands() {
            assert!(
                c.get_about().is_some(),
                "{} has a description",
                c.get_name()
            );
        }
    }
}
