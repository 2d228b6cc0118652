//! Machine facts for the report, and CPU use of this process, Postgres and
//! RabbitMQ during a measured window (from `/proc`).

use std::{collections::HashMap, time::Instant};

/// Clock ticks per second of `/proc` CPU times (`getconf CLK_TCK`; 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

pub struct Machine {
    pub nproc: usize,
    pub memory: String,
    pub cpu_model: String,
    pub kernel: String,
    pub rabbitmq_version: String,
}

pub async fn machine_facts() -> Machine {
    let nproc = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| format!("{:.1} GiB", kb / 1024.0 / 1024.0))
        .unwrap_or_else(|| "unknown".to_owned());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned());
    Machine {
        nproc,
        memory,
        cpu_model,
        kernel,
        rabbitmq_version: rabbitmq_version().await,
    }
}

/// `rabbitmqctl version`, if the broker's tools are installed here.
async fn rabbitmq_version() -> String {
    let run = tokio::process::Command::new("rabbitmqctl")
        .arg("version")
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(std::time::Duration::from_secs(15), run).await {
        Ok(Ok(out)) if out.status.success() => {
            let v = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if v.is_empty() {
                "unknown version".to_owned()
            } else {
                v
            }
        }
        _ => "unknown version".to_owned(),
    }
}

/// CPU ticks of one group of processes, by pid.
type Ticks = HashMap<u32, u64>;

/// CPU times at one moment.
pub struct CpuSnapshot {
    at: Instant,
    own: u64,
    postgres: Ticks,
    rabbitmq: Ticks,
    machine: (u64, u64),
}

/// Average CPU use over a window, in percent of one core (200 = two cores).
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuUsage {
    /// This process: the program under test and the load generator.
    pub own: f64,
    pub postgres: f64,
    pub rabbitmq: f64,
    /// The whole machine, all processes.
    pub machine: f64,
}

/// (name, utime + stime) from a `/proc/<pid>/stat` line.
fn parse_stat(stat: &str) -> Option<(&str, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = &stat[open + 1..close];
    let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    // Fields 14 and 15 of the line; the slice starts at field 3.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((name, utime + stime))
}

/// (busy, total) ticks of the whole machine from `/proc/stat`.
fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return (0, 0);
    };
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: u64 = v.iter().take(8).sum();
    // idle and iowait
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total.saturating_sub(idle), total)
}

impl CpuSnapshot {
    pub fn take() -> Self {
        let own = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| parse_stat(&s).map(|(_, t)| t))
            .unwrap_or(0);
        let mut postgres = Ticks::new();
        let mut rabbitmq = Ticks::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for entry in dir.flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                    continue;
                };
                match parse_stat(&stat) {
                    Some(("postgres", t)) => {
                        postgres.insert(pid, t);
                    }
                    Some(("beam.smp", t)) => {
                        rabbitmq.insert(pid, t);
                    }
                    _ => {}
                }
            }
        }
        Self {
            at: Instant::now(),
            own,
            postgres,
            rabbitmq,
            machine: machine_ticks(),
        }
    }

    pub fn usage_since(&self) -> CpuUsage {
        let now = Self::take();
        let secs = now.at.duration_since(self.at).as_secs_f64().max(1e-9);
        let percent = |ticks: u64| ticks as f64 / TICKS_PER_SECOND / secs * 100.0;
        // A process that started in the window counts from zero.
        let delta = |before: &Ticks, after: &Ticks| -> u64 {
            after
                .iter()
                .map(|(pid, t)| t.saturating_sub(before.get(pid).copied().unwrap_or(0)))
                .sum()
        };
        let (busy0, total0) = self.machine;
        let (busy1, total1) = now.machine;
        let machine_total = total1.saturating_sub(total0).max(1) as f64;
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1) as f64;
        CpuUsage {
            own: percent(now.own.saturating_sub(self.own)),
            postgres: percent(delta(&self.postgres, &now.postgres)),
            rabbitmq: percent(delta(&self.rabbitmq, &now.rabbitmq)),
            machine: busy1.saturating_sub(busy0) as f64 / machine_total * 100.0 * cores,
        }
    }
}

/// The load average over 1, 5 and 15 minutes (`/proc/loadavg`).
pub fn load_average() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut v = text
        .split_whitespace()
        .take(3)
        .map(|f| f.parse().unwrap_or(f64::NAN));
    [
        v.next().unwrap_or(f64::NAN),
        v.next().unwrap_or(f64::NAN),
        v.next().unwrap_or(f64::NAN),
    ]
}

/// The machine as every report states it: cores, memory, CPU, kernel, the
/// engines' versions, and the load average before and after the run.
pub fn machine_line(
    m: &Machine,
    postgres_version: &str,
    load_before: [f64; 3],
    load_after: [f64; 3],
) -> String {
    format!(
        "{} CPUs (`nproc`), {} memory, {} (Linux {}). PostgreSQL {} and RabbitMQ {} run on the \
         same machine; all traffic is over loopback. Load average (1, 5, 15 min) at the start \
         {:.2} {:.2} {:.2}, at the end {:.2} {:.2} {:.2} (the machine is shared: other builds \
         may run).",
        m.nproc,
        m.memory,
        m.cpu_model,
        m.kernel,
        postgres_version,
        m.rabbitmq_version,
        load_before[0],
        load_before[1],
        load_before[2],
        load_after[0],
        load_after[1],
        load_after[2],
    )
}
