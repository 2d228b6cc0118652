//! One phase: a fresh stack (database, virtual host, API and worker
//! processes), steady load, the fault, steady load, the drain, the count.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use sqlx::{postgres::PgPoolOptions, PgPool};

use super::{
    check::{self, Row},
    infra::{free_port, Infra},
    procs::{self, Binaries, Proc},
    sinks::Sinks,
    traffic::{Target, Traffic},
    Fault, Phase, Settings,
};

const LOCATION: &str = "Portland Warehouse";
/// How long a process gets to stop on SIGTERM.
const GRACE: Duration = Duration::from_secs(15);

/// Environment settings of the service that a phase adds to the defaults.
pub type Env = Vec<(String, String)>;

/// The service as deployed for one phase.
pub struct Stack {
    pub vhost: String,
    pub pool: PgPool,
    pub api: Proc,
    pub worker: Proc,
    /// The relay-only process of the relay-crash phase.
    pub relay: Option<Proc>,
    pub base_url: String,
    pub location_id: i64,
    /// Messages in the broker, sampled (all queues, the dead-letter one included).
    pub peak_queued: Arc<AtomicU64>,
    pub runaway: Arc<AtomicBool>,
    monitor: Option<tokio::task::JoinHandle<()>>,
}

impl Stack {
    pub async fn start(
        phase: Phase,
        infra: &mut Infra,
        bins: &Binaries,
        sinks: &Sinks,
        extra_env: Env,
        runaway_limit: u64,
    ) -> anyhow::Result<Self> {
        let name = phase.name().replace('-', "_");
        let vhost = format!("faults_{name}");
        let db = format!("i9_faults_{name}");
        let rabbit = infra.rabbit()?;
        rabbit.add_vhost(&vhost).await?;
        let amqp_url = rabbit.amqp_url(&vhost);
        let db_url = infra.pg()?.url(&db);
        let api_port = free_port()?;
        let base_url = format!("http://127.0.0.1:{api_port}");
        let mut env: Env = vec![
            ("DATABASE_URL".into(), db_url.clone()),
            ("AMQP_URL".into(), amqp_url),
            ("SMTP_URL".into(), sinks.smtp_url.clone()),
            ("BIND_ADDR".into(), format!("127.0.0.1:{api_port}")),
            // The worker's /healthz and /metrics on any free port: never a
            // clash with a worker of the machine's own (docs/operations.md, "Metrics").
            ("WORKER_HTTP_ADDR".into(), "127.0.0.1:0".into()),
            ("PUBLIC_BASE_URL".into(), base_url.clone()),
            ("ALLOW_PRIVATE_CALLBACKS".into(), "true".into()),
            // Throwaway databases: the development keys (docs/operations.md, "Keys and rotation").
            ("APP_ENV".into(), "development".into()),
            ("RUST_LOG".into(), "info,sqlx=warn,lapin=warn".into()),
            // A partner outage of minutes is outlasted in minutes, not a day.
            ("CALLBACK_MAX_ATTEMPTS".into(), "60".into()),
            ("CALLBACK_RETRY_BASE_SECS".into(), "1".into()),
            ("CALLBACK_RETRY_CAP_SECS".into(), "20".into()),
        ];
        env.extend(extra_env);

        procs::admin(bins, &env, &["migrate"]).await?;
        let fixture = crate::workspace_root().join("fixtures/org.json");
        let fixture = fixture.display().to_string();
        procs::admin(bins, &env, &["seed", &fixture]).await?;
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(5))
            .connect(&db_url)
            .await
            .context("connecting to the phase's database")?;
        sqlx::query("UPDATE oauth_clients SET integration_hr_url = $1 WHERE client_id = $2")
            .bind(&sinks.partner_url)
            .bind(super::traffic::PARTNER.0)
            .execute(&pool)
            .await
            .context("pointing the partner's callback URL at the receiver")?;
        let location_id: i64 = sqlx::query_scalar("SELECT id FROM groups WHERE name = $1")
            .bind(LOCATION)
            .fetch_one(&pool)
            .await
            .with_context(|| format!("group {LOCATION:?} in the fixture"))?;

        let logs = infra.log_dir();
        let relay_crash = phase == Phase::Fault(Fault::RelayCrash);
        let mut api_env = env.clone();
        let mut worker_env = env.clone();
        let mut relay = None;
        if relay_crash {
            // The only relay is a process of its own, so its crashes are the only ones.
            api_env.push(("API_NO_RELAY".into(), "true".into()));
            worker_env.push(("WORKER_NO_RELAY".into(), "true".into()));
            let mut relay_env = env.clone();
            let port = free_port()?;
            relay_env.retain(|(k, _)| k != "BIND_ADDR" && k != "PUBLIC_BASE_URL");
            relay_env.push(("BIND_ADDR".into(), format!("127.0.0.1:{port}")));
            let mut p = Proc::new(
                &format!("{}-relay", phase.name()),
                &bins.api_failpoints,
                relay_env,
                logs,
            );
            p.start()?;
            relay = Some(p);
        }
        let mut api = Proc::new(&format!("{}-api", phase.name()), &bins.api, api_env, logs);
        let mut worker = Proc::new(
            &format!("{}-worker", phase.name()),
            &bins.worker,
            worker_env,
            logs,
        );
        api.start()?;
        worker.start()?;
        let mut stack = Self {
            vhost,
            pool,
            api,
            worker,
            relay,
            base_url,
            location_id,
            peak_queued: Arc::default(),
            runaway: Arc::default(),
            monitor: None,
        };
        stack.wait_ready().await?;
        stack.monitor = Some(stack.spawn_monitor(infra, runaway_limit)?);
        Ok(stack)
    }

    pub fn target(&self, tag: &str) -> Target {
        Target {
            base_url: self.base_url.clone(),
            location_id: self.location_id,
            tag: tag.to_owned(),
        }
    }

    /// The API answers `/healthz`, and the worker has declared its queues.
    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ok = http
                .get(format!("{}/healthz", self.base_url))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return Ok(());
            }
            if self.api.has_exited() || Instant::now() > deadline {
                anyhow::bail!(
                    "the API did not become healthy within 60 s (see its log, {})",
                    self.api.name
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Samples the broker's queues every few seconds: the peak, and a runaway flag.
    fn spawn_monitor(
        &self,
        infra: &Infra,
        limit: u64,
    ) -> anyhow::Result<tokio::task::JoinHandle<()>> {
        let rabbit = infra.rabbit()?.ctl.clone();
        let vhost = self.vhost.clone();
        let peak = self.peak_queued.clone();
        let runaway = self.runaway.clone();
        Ok(tokio::spawn(async move {
            loop {
                if let Ok(queues) = rabbit.queues(&vhost).await {
                    let total: u64 = queues.iter().map(|(_, n)| n).sum();
                    peak.fetch_max(total, Ordering::SeqCst);
                    if total > limit && !runaway.swap(true, Ordering::SeqCst) {
                        eprintln!(
                            "faults: RUNAWAY: {total} messages in the broker (limit {limit}); cutting the phase short"
                        );
                    }
                }
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }))
    }

    /// Stop the processes and remove the virtual host (the database stays until the end).
    pub async fn stop(mut self, infra: &Infra) {
        if let Some(m) = self.monitor.take() {
            m.abort();
        }
        self.api.stop(GRACE).await;
        self.worker.stop(GRACE).await;
        if let Some(r) = self.relay.as_mut() {
            r.stop(GRACE).await;
        }
        self.pool.close().await;
        if let Ok(rabbit) = infra.rabbit() {
            if let Err(e) = rabbit.delete_vhost(&self.vhost).await {
                eprintln!("faults: deleting vhost {}: {e:#}", self.vhost);
            }
        }
    }
}

/// Sleep `d`, or less if the phase turned into a runaway.
async fn hold(d: Duration, stack: &Stack) {
    let end = Instant::now() + d;
    while Instant::now() < end && !stack.runaway.load(Ordering::SeqCst) {
        tokio::time::sleep((end - Instant::now()).min(Duration::from_millis(250))).await;
    }
}

/// What happened during the fault, for the row.
pub struct Injected {
    pub start: Instant,
    pub end: Instant,
    /// E.g. how often the relay died.
    pub note: Option<String>,
}

async fn inject(
    fault: Fault,
    secs: u64,
    infra: &mut Infra,
    stack: &mut Stack,
    sinks: &Sinks,
) -> anyhow::Result<Injected> {
    let held = Duration::from_secs(secs);
    let start = Instant::now();
    let mut note = None;
    match fault {
        Fault::RabbitmqRestart => {
            infra.rabbit()?.stop_app().await?;
            hold(held, stack).await;
            infra.rabbit()?.start_app().await?;
        }
        Fault::PostgresRestart => {
            let pg = infra.pg()?;
            if secs == 0 {
                pg.restart().await?;
            } else {
                pg.stop().await?;
                tokio::time::sleep(held).await;
                pg.start().await?;
            }
        }
        Fault::WorkerKill => {
            stack.worker.kill().await;
            hold(held, stack).await;
            stack.worker.start()?;
        }
        Fault::ApiKill => {
            stack.api.kill().await;
            hold(held, stack).await;
            stack.api.start()?;
        }
        Fault::SmtpDown => {
            sinks.smtp_up(false);
            hold(held, stack).await;
            sinks.smtp_up(true);
        }
        Fault::PartnerDown => {
            sinks.partner_up(false);
            hold(held, stack).await;
            sinks.partner_up(true);
        }
        Fault::RelayCrash => {
            let relay = stack.relay.as_mut().context("no relay process")?;
            relay.stop(GRACE).await;
            let end = Instant::now() + held;
            let mut deaths = 0u32;
            let mut starts = 0u32;
            while Instant::now() < end {
                relay.start_with(&[("FAILPOINTS", "relay-before-mark=return")])?;
                starts += 1;
                let left = end.saturating_duration_since(Instant::now());
                match tokio::time::timeout(left, relay.exited()).await {
                    Ok(_) => {
                        deaths += 1;
                        // A supervisor's restart delay.
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    Err(_) => relay.stop(GRACE).await,
                }
            }
            relay.start()?;
            note = Some(format!(
                "the armed relay was started {starts} times and died at the fail point {deaths} times"
            ));
        }
    }
    Ok(Injected {
        start,
        end: Instant::now(),
        note,
    })
}

pub async fn run_fault(
    fault: Fault,
    settings: &Settings,
    infra: &mut Infra,
    bins: &Binaries,
    sinks: &Sinks,
) -> anyhow::Result<Row> {
    let phase = Phase::Fault(fault);
    sinks.reset();
    let mut stack = Stack::start(
        phase,
        infra,
        bins,
        sinks,
        Vec::new(),
        settings.runaway_limit,
    )
    .await?;
    let tag = check::tag_of(phase);
    let traffic = Traffic::start(&stack.target(&tag), settings.clients, settings.rate)?;
    let clock = check::Clock::now();
    hold(settings.before, &stack).await;
    eprintln!("faults: {}: injecting", fault.name());
    let injected = inject(fault, settings.hold(fault), infra, &mut stack, sinks).await;
    let injected = match injected {
        Ok(i) => i,
        Err(e) => {
            let _ = traffic.stop().await;
            stack.stop(infra).await;
            return Err(e.context(format!("injecting {}", fault.name())));
        }
    };
    eprintln!(
        "faults: {}: fault over after {:.1} s; load goes on",
        fault.name(),
        injected.end.duration_since(injected.start).as_secs_f64()
    );
    hold(settings.after, &stack).await;
    let log = traffic.stop().await;
    eprintln!("faults: {}: load stopped; draining", fault.name());
    let drain = check::drain(&stack, infra, sinks, settings.drain_timeout).await;
    let row = check::tally(
        phase,
        settings.hold(fault),
        &stack,
        &log,
        sinks,
        check::Window {
            clock,
            fault_start: injected.start,
            fault_end: injected.end,
        },
        drain,
        injected.note,
    )
    .await;
    stack.stop(infra).await;
    row
}
