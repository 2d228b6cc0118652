//! The service's real binaries: built once (release; `i9-api` a second time
//! with the relay's fail point), copied aside so a later build by someone else
//! cannot swap them mid-run, and run as processes the suite can kill.

use std::{
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    time::Duration,
};

use anyhow::{bail, Context as _};
use tokio::process::{Child, Command};

pub struct Binaries {
    pub api: PathBuf,
    pub worker: PathBuf,
    pub admin: PathBuf,
    /// `i9-api` built with `i9-common/failpoints`.
    pub api_failpoints: PathBuf,
}

/// `cargo build --release` of `packages` (with `features`); the executables by name.
async fn cargo_build(
    packages: &[&str],
    features: Option<&str>,
) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(crate::workspace_root()).args([
        "build",
        "--release",
        "--locked",
        "--message-format=json-render-diagnostics",
    ]);
    for p in packages {
        cmd.args(["-p", p]);
    }
    if let Some(f) = features {
        cmd.args(["--features", f]);
    }
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let out = cmd.output().await.context("running cargo build")?;
    if !out.status.success() {
        bail!("cargo build of {packages:?} failed ({})", out.status);
    }
    let mut exes = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let (Some(name), Some(exe)) = (v["target"]["name"].as_str(), v["executable"].as_str()) {
            exes.push((name.to_owned(), PathBuf::from(exe)));
        }
    }
    Ok(exes)
}

fn copy(exes: &[(String, PathBuf)], name: &str, to: &Path) -> anyhow::Result<PathBuf> {
    let (_, from) = exes
        .iter()
        .find(|(n, _)| n == name)
        .with_context(|| format!("cargo built no {name}"))?;
    std::fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
    Ok(to.to_path_buf())
}

pub async fn build(dir: &Path) -> anyhow::Result<Binaries> {
    let exes = cargo_build(&["i9-api", "i9-workers", "i9-admin"], None).await?;
    let api = copy(&exes, "i9-api", &dir.join("i9-api"))?;
    let worker = copy(&exes, "i9-worker", &dir.join("i9-worker"))?;
    let admin = copy(&exes, "i9-admin", &dir.join("i9-admin"))?;
    let exes = cargo_build(&["i9-api"], Some("i9-common/failpoints")).await?;
    let api_failpoints = copy(&exes, "i9-api", &dir.join("i9-api-failpoints"))?;
    Ok(Binaries {
        api,
        worker,
        admin,
        api_failpoints,
    })
}

/// Run `i9-admin args` to the end with `env`.
pub async fn admin(bins: &Binaries, env: &[(String, String)], args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(&bins.admin)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), out)
        .await
        .context("i9-admin did not finish within 120 s")??;
    if !out.status.success() {
        bail!(
            "i9-admin {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// One service process, started again after a kill with the same settings.
/// Its output is appended to a log file. Dropping it kills it.
pub struct Proc {
    pub name: String,
    bin: PathBuf,
    env: Vec<(String, String)>,
    log: PathBuf,
    child: Option<Child>,
    /// Times it was started.
    pub starts: u32,
}

impl Proc {
    pub fn new(name: &str, bin: &Path, env: Vec<(String, String)>, log_dir: &Path) -> Self {
        Self {
            name: name.to_owned(),
            bin: bin.to_path_buf(),
            env,
            log: log_dir.join(format!("{name}.log")),
            child: None,
            starts: 0,
        }
    }

    /// Start it, with `extra` environment on top of its own.
    pub fn start_with(&mut self, extra: &[(&str, &str)]) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("opening {}", self.log.display()))?;
        let child = Command::new(&self.bin)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(extra.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", self.name))?;
        self.child = Some(child);
        self.starts += 1;
        Ok(())
    }

    pub fn start(&mut self) -> anyhow::Result<()> {
        self.start_with(&[])
    }

    /// SIGKILL, and reap it.
    pub async fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.start_kill();
            let _ = c.wait().await;
        }
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL.
    pub async fn stop(&mut self, grace: Duration) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        if let Some(pid) = c.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        if tokio::time::timeout(grace, c.wait()).await.is_err() {
            eprintln!(
                "faults: {} did not stop within {grace:?}; killing it",
                self.name
            );
            let _ = c.start_kill();
            let _ = c.wait().await;
        }
    }

    /// Wait until it exits on its own; its status.
    pub async fn exited(&mut self) -> Option<ExitStatus> {
        let c = self.child.as_mut()?;
        let status = c.wait().await.ok();
        self.child = None;
        status
    }

    /// Whether it has exited (without waiting).
    pub fn has_exited(&mut self) -> bool {
        match self.child.as_mut() {
            None => true,
            Some(c) => matches!(c.try_wait(), Ok(Some(_))),
        }
    }
}
