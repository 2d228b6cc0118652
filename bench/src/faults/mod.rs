//! `i9-bench faults`: the fault suite. Under a steady mixed load through the
//! public API, it injects one fault at a time into a private PostgreSQL and
//! RabbitMQ (never the machine's shared ones), waits for the backlog to drain,
//! and counts what came out: records, I-9s, emails and partner callbacks,
//! lost and duplicated. Then a soak of the same load samples the row counts
//! of the tables that must stay bounded. It writes `RELIABILITY.md`.
//!
//! The service runs as its real binaries (`i9-api`, `i9-worker`, `i9-admin`,
//! release builds), each a process of its own; the SMTP server and the
//! partner's callback endpoint are the harness's own, and count what arrives.
//! Each phase gets a fresh database and a fresh RabbitMQ virtual host, so one
//! phase's leftovers never count in another's row.

mod check;
mod infra;
mod phase;
mod procs;
mod report;
mod sinks;
mod soak;
mod traffic;

use std::{path::PathBuf, time::Duration};

use anyhow::{bail, Context as _};

/// The faults, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    RabbitmqRestart,
    PostgresRestart,
    WorkerKill,
    ApiKill,
    SmtpDown,
    PartnerDown,
    RelayCrash,
}

impl Fault {
    pub const ALL: [Fault; 7] = [
        Fault::RabbitmqRestart,
        Fault::PostgresRestart,
        Fault::WorkerKill,
        Fault::ApiKill,
        Fault::SmtpDown,
        Fault::PartnerDown,
        Fault::RelayCrash,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Fault::RabbitmqRestart => "rabbitmq-restart",
            Fault::PostgresRestart => "postgres-restart",
            Fault::WorkerKill => "worker-kill",
            Fault::ApiKill => "api-kill",
            Fault::SmtpDown => "smtp-down",
            Fault::PartnerDown => "partner-down",
            Fault::RelayCrash => "relay-crash",
        }
    }

    /// What the fault does, for the report.
    pub fn describe(self, secs: u64) -> String {
        match self {
            Fault::RabbitmqRestart => format!(
                "RabbitMQ stopped (`rabbitmqctl stop_app`), held down {secs} s, started (`start_app`)"
            ),
            Fault::PostgresRestart if secs == 0 => {
                "PostgreSQL restarted (`pg_ctl restart -m fast`)".to_owned()
            }
            Fault::PostgresRestart => format!(
                "PostgreSQL stopped (`pg_ctl stop -m fast`), held down {secs} s, started again"
            ),
            Fault::WorkerKill => {
                format!("the worker killed with SIGKILL under load, started again after {secs} s")
            }
            Fault::ApiKill => {
                format!("the API killed with SIGKILL under load, started again after {secs} s")
            }
            Fault::SmtpDown => format!("the SMTP server down (port closed) for {secs} s"),
            Fault::PartnerDown => {
                format!("the partner's callback URL answering 503 for {secs} s")
            }
            Fault::RelayCrash => format!(
                "for {secs} s, the relay process dies (abort) after the broker's confirm and \
                 before marking the rows (fail point `relay-before-mark`), and is started again"
            ),
        }
    }
}

/// What to run: a fault or the soak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Fault(Fault),
    Soak,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Fault(f) => f.name(),
            Phase::Soak => "soak",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        if s == "soak" {
            return Some(Phase::Soak);
        }
        Fault::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .map(Phase::Fault)
    }
}

#[derive(clap::Args, Debug, Clone)]
#[command(
    about = "Fault suite: injects faults into private PostgreSQL and RabbitMQ instances under load, \
             counts lost and duplicated effects, soaks, and writes RELIABILITY.md",
    after_help = "Faults: rabbitmq-restart, postgres-restart, worker-kill, api-kill, smtp-down, \
                  partner-down, relay-crash; and the soak: soak.\n\
                  Needs root (or the postgres and rabbitmq users), PostgreSQL 15 in \
                  /usr/lib/postgresql/15/bin and rabbitmq-server; the machine's own PostgreSQL \
                  and RabbitMQ are not touched."
)]
pub struct FaultArgs {
    /// Run only these phases (comma-separated or repeated), e.g. --only rabbitmq-restart,soak.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Leave out the soak.
    #[arg(long)]
    pub no_soak: bool,
    /// Short phases, to try the harness: 5 s of load around each fault, faults of 5 s
    /// (SMTP 10 s, partner 20 s), a 60 s soak sampled every 10 s. Flags given override it.
    #[arg(long)]
    pub quick: bool,
    /// Seconds of steady load before each fault [default: 30].
    #[arg(long)]
    pub before: Option<u64>,
    /// Seconds of steady load after each fault [default: 30].
    #[arg(long)]
    pub after: Option<u64>,
    /// Longest wait, after the load, for the outbox and queues to empty and effects to stop [default: 180].
    #[arg(long)]
    pub drain_timeout: Option<u64>,
    /// Seconds RabbitMQ stays stopped [default: 15].
    #[arg(long)]
    pub rabbitmq_down: Option<u64>,
    /// Seconds PostgreSQL stays stopped; 0: `pg_ctl restart -m fast` [default: 5].
    #[arg(long)]
    pub postgres_down: Option<u64>,
    /// Seconds between killing the worker and starting it again [default: 5].
    #[arg(long)]
    pub worker_down: Option<u64>,
    /// Seconds between killing the API and starting it again [default: 5].
    #[arg(long)]
    pub api_down: Option<u64>,
    /// Seconds the SMTP server is down [default: 60].
    #[arg(long)]
    pub smtp_down: Option<u64>,
    /// Seconds the partner answers 503 [default: 300].
    #[arg(long)]
    pub partner_down: Option<u64>,
    /// Seconds the relay runs with its fail point armed, dying and restarted [default: 30].
    #[arg(long)]
    pub relay_crash: Option<u64>,
    /// Seconds of the soak [default: 600].
    #[arg(long)]
    pub soak: Option<u64>,
    /// Seconds between samples of the row counts during the soak [default: 30].
    #[arg(long)]
    pub soak_sample: Option<u64>,
    /// Concurrent API clients.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Operations per second, all clients together (each client paces itself).
    #[arg(long, default_value_t = 16.0)]
    pub rate: f64,
    /// Messages in the private broker at which a phase is cut short as a runaway.
    #[arg(long, default_value_t = 20_000)]
    pub runaway_limit: u64,
    /// Where to write the report (default: RELIABILITY.md at the workspace root).
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// The settings of a run, resolved from the flags.
#[derive(Debug, Clone)]
pub struct Settings {
    pub phases: Vec<Phase>,
    pub before: Duration,
    pub after: Duration,
    pub drain_timeout: Duration,
    pub rabbitmq_down: u64,
    pub postgres_down: u64,
    pub worker_down: u64,
    pub api_down: u64,
    pub smtp_down: u64,
    pub partner_down: u64,
    pub relay_crash: u64,
    pub soak: Duration,
    pub soak_sample: Duration,
    pub clients: usize,
    pub rate: f64,
    pub runaway_limit: u64,
    pub output: PathBuf,
}

impl Settings {
    pub fn hold(&self, fault: Fault) -> u64 {
        match fault {
            Fault::RabbitmqRestart => self.rabbitmq_down,
            Fault::PostgresRestart => self.postgres_down,
            Fault::WorkerKill => self.worker_down,
            Fault::ApiKill => self.api_down,
            Fault::SmtpDown => self.smtp_down,
            Fault::PartnerDown => self.partner_down,
            Fault::RelayCrash => self.relay_crash,
        }
    }
}

impl FaultArgs {
    pub fn settings(&self) -> anyhow::Result<Settings> {
        let q = self.quick;
        let pick =
            |v: Option<u64>, quick: u64, full: u64| v.unwrap_or(if q { quick } else { full });
        let mut phases = Vec::new();
        if self.only.is_empty() {
            phases.extend(Fault::ALL.map(Phase::Fault));
            if !self.no_soak {
                phases.push(Phase::Soak);
            }
        } else {
            for name in self.only.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
                let Some(p) = Phase::parse(name) else {
                    bail!(
                        "unknown phase {name:?}; phases are: {}, soak",
                        Fault::ALL.map(|f| f.name()).join(", ")
                    );
                };
                let left_out = p == Phase::Soak && self.no_soak;
                if left_out || phases.contains(&p) {
                    continue;
                }
                phases.push(p);
            }
        }
        if phases.is_empty() {
            bail!("nothing to run");
        }
        let s = Settings {
            phases,
            before: Duration::from_secs(pick(self.before, 5, 30)),
            after: Duration::from_secs(pick(self.after, 5, 30)),
            drain_timeout: Duration::from_secs(pick(self.drain_timeout, 60, 180)),
            rabbitmq_down: pick(self.rabbitmq_down, 5, 15),
            postgres_down: pick(self.postgres_down, 3, 5),
            worker_down: pick(self.worker_down, 2, 5),
            api_down: pick(self.api_down, 2, 5),
            smtp_down: pick(self.smtp_down, 10, 60),
            partner_down: pick(self.partner_down, 20, 300),
            relay_crash: pick(self.relay_crash, 5, 30),
            soak: Duration::from_secs(pick(self.soak, 60, 600)),
            soak_sample: Duration::from_secs(pick(self.soak_sample, 10, 30)),
            clients: self.clients,
            rate: self.rate,
            runaway_limit: self.runaway_limit,
            output: self
                .output
                .clone()
                .unwrap_or_else(|| crate::workspace_root().join("RELIABILITY.md")),
        };
        if !(1..=64).contains(&s.clients) {
            bail!("--clients must be 1..=64");
        }
        if !(0.1..=500.0).contains(&s.rate) {
            bail!("--rate must be 0.1..=500 operations per second");
        }
        let longest = [
            s.rabbitmq_down,
            s.postgres_down,
            s.worker_down,
            s.api_down,
            s.smtp_down,
            s.partner_down,
            s.relay_crash,
            s.before.as_secs(),
            s.after.as_secs(),
            s.drain_timeout.as_secs(),
        ];
        if longest.iter().any(|&v| v > 3600) || s.soak.as_secs() > 4 * 3600 {
            bail!("phases are limited to an hour each (the soak to four)");
        }
        if s.soak_sample.is_zero() || s.soak_sample > s.soak {
            bail!("--soak-sample must be between 1 s and the soak's length");
        }
        if s.drain_timeout.as_secs() < 5 {
            bail!("--drain-timeout must be at least 5 s");
        }
        Ok(s)
    }
}

/// Run the suite; the private instances are removed at the end, also after
/// an error, Ctrl-C or SIGTERM.
pub async fn main(args: FaultArgs) -> anyhow::Result<()> {
    let settings = args.settings()?;
    let mut infra = infra::Infra::new().context("preparing the private instances")?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let result = tokio::select! {
        r = run(&settings, &mut infra) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
        _ = term.recv() => Err(anyhow::anyhow!("terminated")),
    };
    infra.teardown().await;
    result
}

async fn run(settings: &Settings, infra: &mut infra::Infra) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let machine = crate::sys::machine_facts().await;
    eprintln!("faults: building the binaries (release)...");
    let bins = procs::build(&infra.bin_dir()).await?;
    eprintln!("faults: starting a private PostgreSQL and RabbitMQ...");
    infra.start().await?;
    let sinks = sinks::Sinks::start().await?;
    let mut rows = Vec::new();
    let mut soak_result = None;
    for phase in &settings.phases {
        eprintln!("faults: === {} ===", phase.name());
        match phase {
            Phase::Fault(fault) => {
                let row = phase::run_fault(*fault, settings, infra, &bins, &sinks).await?;
                eprintln!("{}", report::row_line(&row));
                rows.push(row);
            }
            Phase::Soak => {
                soak_result = Some(soak::run(settings, infra, &bins, &sinks).await?);
            }
        }
    }
    let results = report::Results {
        command: command_line(),
        date: chrono::Utc::now(),
        commit: report::commit().await,
        machine,
        postgres_version: infra.postgres_version().await,
        settings: settings.clone(),
        rows,
        soak: soak_result,
        elapsed: started.elapsed(),
    };
    println!("{}", report::summary(&results));
    std::fs::write(&settings.output, report::markdown(&results))
        .with_context(|| format!("writing {}", settings.output.display()))?;
    eprintln!(
        "faults: wrote {} (logs of the processes in {})",
        settings.output.display(),
        infra.log_dir().display()
    );
    Ok(())
}

/// The command as a person runs it.
fn command_line() -> String {
    let mut cmd = String::from("scripts/faults.sh");
    for a in std::env::args().skip(2) {
        cmd.push(' ');
        if a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=./:,".contains(c))
        {
            cmd.push_str(&a);
        } else {
            cmd.push_str(&format!("'{}'", a.replace('\'', r"'\''")));
        }
    }
    cmd
}
