//! The private PostgreSQL cluster and RabbitMQ node the suite runs against
//! and breaks: each in a temporary directory, on free loopback ports, run as
//! its own system user (`postgres`, `rabbitmq`) when we are root. The
//! machine's shared instances are never touched. [`Infra::teardown`] stops
//! both and removes the directory.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use anyhow::{bail, Context as _};
use tokio::process::Command;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// Limit on one `pg_ctl` or `rabbitmqctl` call.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// A free TCP port on loopback (bound, read, released).
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr()?.port())
}

/// Run `program args` as `user` (through `runuser` when we are root), with `env`.
fn as_user(user: &str, program: &str, args: &[&str], env: &[(String, String)]) -> Command {
    let mut cmd = if nix::unistd::geteuid().is_root() && user != "root" {
        let mut c = Command::new("runuser");
        c.args(["-u", user, "--", program]);
        c
    } else {
        Command::new(program)
    };
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Run to the end; the output, or an error naming the command and its stderr.
async fn output(mut cmd: Command, what: &str) -> anyhow::Result<String> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = tokio::time::timeout(COMMAND_TIMEOUT, cmd.output())
        .await
        .with_context(|| format!("{what}: no answer within {COMMAND_TIMEOUT:?}"))?
        .with_context(|| format!("{what}: cannot run"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Give a directory to a system user (when we are root).
fn give(path: &Path, user: &str) -> anyhow::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(());
    }
    let u = nix::unistd::User::from_name(user)
        .with_context(|| format!("looking up user {user}"))?
        .with_context(|| format!("there is no user {user} on this machine"))?;
    for entry in walk(path)? {
        nix::unistd::chown(&entry, Some(u.uid), Some(u.gid))
            .with_context(|| format!("chown {} to {user}", entry.display()))?;
    }
    Ok(())
}

fn walk(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = vec![path.to_path_buf()];
    if path.is_dir() {
        for e in std::fs::read_dir(path)? {
            out.extend(walk(&e?.path())?);
        }
    }
    Ok(out)
}

pub struct Postgres {
    dir: PathBuf,
    pub port: u16,
    running: bool,
}

impl Postgres {
    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    fn pg_ctl(&self, args: &[&str]) -> Command {
        let data = self.data();
        let log = self.dir.join("postgres.log").display().to_string();
        let mut all = vec!["-D", &data, "-l", &log, "-w", "-t", "60"];
        all.extend_from_slice(args);
        as_user("postgres", &format!("{PG_BIN}/pg_ctl"), &all, &[])
    }

    fn options(&self) -> String {
        format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c max_connections=300",
            self.port,
            self.dir.display()
        )
    }

    async fn init(dir: PathBuf) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        give(&dir, "postgres")?;
        let pg = Self {
            port: free_port()?,
            dir,
            running: false,
        };
        let data = pg.data();
        output(
            as_user(
                "postgres",
                &format!("{PG_BIN}/initdb"),
                &["-D", &data, "-A", "trust", "-U", "postgres", "-E", "UTF8"],
                &[],
            ),
            "initdb",
        )
        .await?;
        Ok(pg)
    }

    pub async fn start(&mut self) -> anyhow::Result<()> {
        let o = self.options();
        output(self.pg_ctl(&["-o", &o, "start"]), "pg_ctl start").await?;
        self.running = true;
        Ok(())
    }

    pub async fn stop(&mut self) -> anyhow::Result<()> {
        output(self.pg_ctl(&["-m", "fast", "stop"]), "pg_ctl stop").await?;
        self.running = false;
        Ok(())
    }

    pub async fn restart(&mut self) -> anyhow::Result<()> {
        let o = self.options();
        output(
            self.pg_ctl(&["-m", "fast", "-o", &o, "restart"]),
            "pg_ctl restart",
        )
        .await?;
        self.running = true;
        Ok(())
    }

    /// The URL of database `name`.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }
}

/// `rabbitmqctl` aimed at the private node (cheap to clone into a task).
#[derive(Clone)]
pub struct RabbitCtl {
    node: String,
    env: Vec<(String, String)>,
}

impl RabbitCtl {
    /// `rabbitmqctl -n <node> args` (the packaged wrapper runs it as `rabbitmq`).
    pub async fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        let mut all = vec!["-n", self.node.as_str()];
        all.extend_from_slice(args);
        output(
            as_user("root", "rabbitmqctl", &all, &self.env),
            &format!("rabbitmqctl {}", args.join(" ")),
        )
        .await
    }

    /// (queue, messages ready + unacknowledged) of every queue of `vhost`.
    pub async fn queues(&self, vhost: &str) -> anyhow::Result<Vec<(String, u64)>> {
        let out = self
            .run(&[
                "list_queues",
                "-p",
                vhost,
                "--quiet",
                "--formatter",
                "json",
                "name",
                "messages",
            ])
            .await?;
        let v: serde_json::Value = serde_json::from_str(out.trim())
            .with_context(|| format!("reading list_queues output: {out}"))?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .map(|q| {
                        (
                            q["name"].as_str().unwrap_or_default().to_owned(),
                            q["messages"].as_u64().unwrap_or(0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default())
    }
}

pub struct Rabbit {
    dir: PathBuf,
    pub port: u16,
    pub ctl: RabbitCtl,
    running: bool,
}

impl Rabbit {
    async fn init(dir: PathBuf) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir.join("mnesia"))?;
        std::fs::create_dir_all(dir.join("log"))?;
        let port = free_port()?;
        let dist_port = free_port()?;
        // A node of its own: its own config (not /etc/rabbitmq's, which names the
        // shared node's port), no plugins, its own data and logs.
        std::fs::write(dir.join("enabled_plugins"), "[].\n")?;
        std::fs::write(
            dir.join("rabbitmq.conf"),
            format!("listeners.tcp.1 = 127.0.0.1:{port}\n"),
        )?;
        std::fs::write(dir.join("rabbitmq-env.conf"), "")?;
        give(&dir, "rabbitmq")?;
        let node = format!("i9faults{}@localhost", std::process::id());
        let p = |f: &str| dir.join(f).display().to_string();
        let env = vec![
            ("RABBITMQ_NODENAME".into(), node.clone()),
            ("RABBITMQ_NODE_IP_ADDRESS".into(), "127.0.0.1".into()),
            ("RABBITMQ_NODE_PORT".into(), port.to_string()),
            ("RABBITMQ_DIST_PORT".into(), dist_port.to_string()),
            ("RABBITMQ_MNESIA_BASE".into(), p("mnesia")),
            ("RABBITMQ_LOG_BASE".into(), p("log")),
            ("RABBITMQ_ENABLED_PLUGINS_FILE".into(), p("enabled_plugins")),
            ("RABBITMQ_CONFIG_FILE".into(), p("rabbitmq.conf")),
            ("RABBITMQ_ADVANCED_CONFIG_FILE".into(), p("advanced.config")),
            ("RABBITMQ_CONF_ENV_FILE".into(), p("rabbitmq-env.conf")),
            (
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS".into(),
                "-kernel inet_dist_use_interface {127,0,0,1}".into(),
            ),
        ];
        Ok(Self {
            dir,
            port,
            ctl: RabbitCtl { node, env },
            running: false,
        })
    }

    pub async fn ctl(&self, args: &[&str]) -> anyhow::Result<String> {
        self.ctl.run(args).await
    }

    async fn start(&mut self) -> anyhow::Result<()> {
        output(
            as_user("root", "rabbitmq-server", &["-detached"], &self.ctl.env),
            "rabbitmq-server -detached",
        )
        .await?;
        self.running = true;
        // The node registers with epmd a moment after -detached returns.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
        loop {
            match self.ctl(&["await_startup", "--timeout", "60"]).await {
                Ok(_) => return Ok(()),
                Err(e) if tokio::time::Instant::now() > deadline => {
                    return Err(e.context(format!(
                        "the private RabbitMQ node did not start; see {}",
                        self.dir.join("log").display()
                    )))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }

    pub async fn stop_app(&self) -> anyhow::Result<()> {
        self.ctl(&["stop_app"]).await.map(drop)
    }

    pub async fn start_app(&self) -> anyhow::Result<()> {
        self.ctl(&["start_app"]).await?;
        self.ctl(&["await_startup", "--timeout", "60"])
            .await
            .map(drop)
    }

    pub async fn add_vhost(&self, vhost: &str) -> anyhow::Result<()> {
        self.ctl(&["add_vhost", vhost]).await?;
        self.ctl(&["set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"])
            .await
            .map(drop)
    }

    pub async fn delete_vhost(&self, vhost: &str) -> anyhow::Result<()> {
        self.ctl(&["delete_vhost", vhost]).await.map(drop)
    }

    pub fn amqp_url(&self, vhost: &str) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/{vhost}", self.port)
    }

    pub async fn queues(&self, vhost: &str) -> anyhow::Result<Vec<(String, u64)>> {
        self.ctl.queues(vhost).await
    }

    async fn stop(&mut self) -> anyhow::Result<()> {
        self.ctl(&["stop"]).await?;
        self.running = false;
        Ok(())
    }

    /// Last resort: SIGKILL the node we started (its pid file names it).
    fn kill(&self) {
        let pid_file = self
            .dir
            .join("mnesia")
            .join(format!("{}.pid", self.ctl.node));
        if let Some(pid) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The private instances and the directories of a run.
pub struct Infra {
    root: PathBuf,
    logs: PathBuf,
    pub pg: Option<Postgres>,
    pub rabbit: Option<Rabbit>,
}

impl Infra {
    pub fn new() -> anyhow::Result<Self> {
        let stamp = format!(
            "{}-{}",
            chrono::Utc::now().format("%Y%m%d-%H%M%S"),
            std::process::id()
        );
        let root = std::env::temp_dir().join(format!("i9-faults-{stamp}"));
        let logs = std::env::temp_dir().join(format!("i9-faults-logs-{stamp}"));
        std::fs::create_dir_all(root.join("bin"))?;
        std::fs::create_dir_all(&logs)?;
        // The service users must reach their directories inside.
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755))?;
        Ok(Self {
            root,
            logs,
            pg: None,
            rabbit: None,
        })
    }

    pub fn bin_dir(&self) -> PathBuf {
        self.root.join("bin")
    }

    pub fn log_dir(&self) -> &Path {
        &self.logs
    }

    pub async fn start(&mut self) -> anyhow::Result<()> {
        let mut pg = Postgres::init(self.root.join("pg")).await?;
        pg.start().await?;
        self.pg = Some(pg);
        let mut rabbit = Rabbit::init(self.root.join("rabbit")).await?;
        // Kept before starting, so a failed start is still stopped at the end.
        let started = rabbit.start().await;
        self.rabbit = Some(rabbit);
        started
    }

    pub fn pg(&mut self) -> anyhow::Result<&mut Postgres> {
        self.pg.as_mut().context("PostgreSQL is not started")
    }

    pub fn rabbit(&self) -> anyhow::Result<&Rabbit> {
        self.rabbit.as_ref().context("RabbitMQ is not started")
    }

    pub async fn postgres_version(&self) -> String {
        let Some(pg) = &self.pg else {
            return "unknown".into();
        };
        let url = pg.url("postgres");
        async {
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await?;
            let v: String = sqlx::query_scalar("SHOW server_version")
                .fetch_one(&mut c)
                .await?;
            anyhow::Ok(v)
        }
        .await
        .unwrap_or_else(|_| "unknown".into())
    }

    /// Stop both instances and remove their directory, whatever state they are in.
    pub async fn teardown(&mut self) {
        if let Some(mut r) = self.rabbit.take() {
            if r.running {
                if let Err(e) = r.stop().await {
                    eprintln!("cleanup: stopping the private RabbitMQ: {e:#}; killing it");
                    r.kill();
                }
            }
        }
        if let Some(pg) = self.pg.take() {
            if pg.running || pg.dir.join("data/postmaster.pid").exists() {
                let immediate = pg.pg_ctl(&["-m", "immediate", "stop"]);
                if let Err(e) = output(immediate, "pg_ctl stop").await {
                    eprintln!("cleanup: stopping the private PostgreSQL: {e:#}");
                }
            }
        }
        if let Err(e) = std::fs::remove_dir_all(&self.root) {
            eprintln!("cleanup: removing {}: {e}", self.root.display());
        }
        eprintln!("cleanup: private instances stopped and removed");
    }
}
