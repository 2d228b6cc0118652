//! `RELIABILITY.md` and the summary printed to stdout.

use std::{fmt::Write as _, time::Duration};

use chrono::{DateTime, Utc};

use super::{
    check::{Answers, Effects, Row},
    soak::{SoakResult, Verdict, RECORDS, TABLES},
    Fault, Phase, Settings,
};
use crate::sys::Machine;

pub struct Results {
    pub command: String,
    pub date: DateTime<Utc>,
    pub commit: String,
    pub machine: Machine,
    pub postgres_version: String,
    pub settings: Settings,
    pub rows: Vec<Row>,
    pub soak: Option<SoakResult>,
    pub elapsed: Duration,
}

/// `git rev-parse HEAD`, marked when the tree has uncommitted changes.
pub async fn commit() -> String {
    let git = |args: &'static [&'static str]| async move {
        tokio::process::Command::new("git")
            .args(args)
            .current_dir(crate::workspace_root())
            .output()
            .await
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let head = git(&["rev-parse", "--short=12", "HEAD"])
        .await
        .unwrap_or_else(|| "unknown".into());
    match git(&["status", "--porcelain", "--untracked-files=no"]).await {
        Some(s) if !s.is_empty() => format!("{head} (with uncommitted changes)"),
        _ => head,
    }
}

fn secs(v: Option<f64>) -> String {
    v.map(|s| format!("{s:.1}"))
        .unwrap_or_else(|| "never".into())
}

/// Seconds, or why there are none: no fault (the soak), or no load after a runaway.
fn recovery_cell(r: &Row, v: Option<f64>) -> String {
    if matches!(r.phase, Phase::Soak) {
        "n/a".into()
    } else if r.runaway {
        "cut short".into()
    } else {
        secs(v)
    }
}

fn effects_cell(e: &Effects) -> String {
    format!(
        "{} / {} / {} / **{}**{} / **{}**",
        e.expected,
        e.received,
        e.unique,
        e.duplicates,
        if e.in_crash_window > 0 {
            format!(" ({} in the crash window)", e.in_crash_window)
        } else {
            String::new()
        },
        e.missing
    )
}

fn errors_cell(a: &Answers) -> String {
    format!("{} ({})", a.server_errors, a.internal_errors)
}

fn name(row: &Row) -> &'static str {
    row.phase.name()
}

/// One line per row, printed as each phase ends.
pub fn row_line(r: &Row) -> String {
    format!(
        "faults: {}: acked {} | employees {}/{} | I-9s {}/{} (dup {}) | emails exp {} rcv {} dup {} miss {} | callbacks exp {} rcv {} dup {} miss {} | 5xx during {} (500: {}) | recovered after (s) {} | {}",
        name(r),
        r.acked,
        r.employees_present,
        r.employees_expected,
        r.i9_present,
        r.i9_expected,
        r.i9_duplicates,
        r.emails.expected,
        r.emails.received,
        r.emails.duplicates,
        r.emails.missing,
        r.callbacks.expected,
        r.callbacks.received,
        r.callbacks.duplicates,
        r.callbacks.missing,
        r.during.server_errors,
        r.during.internal_errors,
        recovery_cell(r, r.recovered_after),
        if r.met() { "target met".to_owned() } else { format!("MISSED: {}", r.misses().join("; ")) }
    )
}

fn table(rows: &[&Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| fault | writes acked | employees present / expected | I-9s present / expected (duplicates) | emails: expected / received / unique / **dup** / **missing** | callbacks: expected / received / unique / **dup** / **missing** | 5xx during the fault (of which 500) | API 2xx again after (s) | recovered after (s) | target |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} / {} | {} / {} ({}) | {} | {} | {} | {} | {} | {} |",
            name(r),
            r.acked,
            r.employees_present,
            r.employees_expected,
            r.i9_present,
            r.i9_expected,
            r.i9_duplicates,
            effects_cell(&r.emails),
            effects_cell(&r.callbacks),
            if matches!(r.phase, Phase::Soak) {
                "n/a".into()
            } else {
                errors_cell(&r.during)
            },
            recovery_cell(r, r.api_back_after),
            recovery_cell(r, r.recovered_after),
            if r.met() { "met" } else { "**missed**" }
        );
    }
    s
}

fn answers_line(label: &str, a: &Answers) -> String {
    let statuses: Vec<String> = a
        .by_status
        .iter()
        .map(|(s, n)| format!("{n} × {s}"))
        .collect();
    format!(
        "{label}: {} answers ({}), {} transport errors",
        a.total,
        if statuses.is_empty() {
            "none".into()
        } else {
            statuses.join(", ")
        },
        a.transport_errors
    )
}

fn details(s: &mut String, r: &Row, settings: &Settings) {
    let title = match r.phase {
        Phase::Fault(f) => format!("{} — {}", f.name(), f.describe(settings.hold(f))),
        Phase::Soak => format!("soak — {} s of the same load, no fault", r.held_secs),
    };
    let _ = writeln!(s, "### {title}\n");
    let ops: Vec<String> = r
        .acked_by_op
        .iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect();
    let _ = writeln!(
        s,
        "- Writes: {} sent, {} acknowledged ({}), {} refused with a 4xx, {} given up by the client; \
         {} needed more than one attempt (at most {}).",
        r.writes,
        r.acked,
        ops.join(", "),
        r.refused.len(),
        r.gave_up,
        r.retried,
        r.most_attempts
    );
    let _ = writeln!(
        s,
        "- Records: {} / {} employees of acknowledged creates present, {} duplicate employees; \
         {} / {} I-9s, {} duplicates; {} PATCHes acknowledged, {} not in the record.",
        r.employees_present,
        r.employees_expected,
        r.employees_duplicated,
        r.i9_present,
        r.i9_expected,
        r.i9_duplicates,
        r.patches_acked,
        r.patches_lost
    );
    let _ = writeln!(
        s,
        "- Emails: {} expected, {} received, {} distinct Message-IDs, {} duplicates ({} in the crash window), {} missing, {} for no write of the phase.",
        r.emails.expected,
        r.emails.received,
        r.emails.unique,
        r.emails.duplicates,
        r.emails.in_crash_window,
        r.emails.missing,
        r.emails.unexpected
    );
    let _ = writeln!(
        s,
        "- Callbacks: {} expected, {} answered 2xx, {} distinct webhook-ids, {} duplicates ({} in the crash window), {} missing; \
         {} attempts recorded in `callback_attempts`; {} signatures that did not verify.",
        r.callbacks.expected,
        r.callbacks.received,
        r.callbacks.unique,
        r.callbacks.duplicates,
        r.callbacks.in_crash_window,
        r.callbacks.missing,
        r.callback_attempts,
        r.callback_signature_failures
    );
    if matches!(r.phase, Phase::Fault(_)) {
        let _ = writeln!(s, "- {}.", answers_line("Before the fault", &r.before));
        let _ = writeln!(
            s,
            "- {}.",
            answers_line("During the fault (until the first 2xx after it)", &r.during)
        );
        let _ = writeln!(s, "- {}.", answers_line("After", &r.after));
    } else {
        let _ = writeln!(s, "- {}.", answers_line("Answers", &r.before));
    }
    let _ = writeln!(
        s,
        "- Drain: {} after {:.0} s; {} outbox rows unpublished, {} messages queued, {} dead-lettered; \
         at most {} messages in the broker during the phase (sampled every 5 s).",
        if r.drain.drained { "drained" } else { "**not drained**" },
        r.drain.secs,
        r.drain.outbox_left,
        r.drain.queued_left.iter().map(|(_, n)| n).sum::<u64>(),
        r.drain.dead_lettered,
        r.peak_queued
    );
    for n in &r.notes {
        let _ = writeln!(s, "- {n}.");
    }
    let misses = r.misses();
    if misses.is_empty() {
        let _ = writeln!(s, "- Target met.");
    } else {
        let _ = writeln!(s, "- **Missed**: {}.", misses.join("; "));
    }
    let _ = writeln!(s);
}

fn soak_table(s: &mut String, soak: &SoakResult) {
    let _ = write!(s, "| table |");
    for smp in &soak.samples {
        let _ = write!(s, " {} s |", smp.secs);
    }
    let _ = writeln!(s, " levelled off? |");
    let _ = write!(s, "|---|");
    for _ in &soak.samples {
        let _ = write!(s, "---:|");
    }
    let _ = writeln!(s, "---|");
    for (i, t) in TABLES.iter().enumerate() {
        let _ = write!(s, "| `{t}` |");
        for smp in &soak.samples {
            match smp.counts {
                Some(c) => {
                    let _ = write!(s, " {} |", c[i]);
                }
                None => {
                    let _ = write!(s, " ? |");
                }
            }
        }
        let v = match &soak.verdicts[i] {
            _ if RECORDS.contains(t) => {
                "a record, never purged: grows with the events it records".to_owned()
            }
            Verdict::Levelled => "yes".to_owned(),
            Verdict::Growing { last_third } => {
                format!("**no**: +{last_third} over the last third")
            }
            Verdict::TooShort => "too few samples to tell".to_owned(),
        };
        let _ = writeln!(s, " {v} |");
    }
}

/// The summary printed at the end: the table and the misses.
pub fn summary(r: &Results) -> String {
    let mut s = String::new();
    let rows: Vec<&Row> = r.rows.iter().chain(r.soak.iter().map(|x| &x.row)).collect();
    s.push_str(&table(&rows));
    for row in &rows {
        let m = row.misses();
        if !m.is_empty() {
            let _ = writeln!(s, "\n{} missed: {}", name(row), m.join("; "));
        }
    }
    if let Some(soak) = &r.soak {
        let _ = writeln!(s);
        soak_table(&mut s, soak);
    }
    s
}

fn fmt_duration(d: Duration) -> String {
    let m = d.as_secs() / 60;
    format!("{m} min {} s", d.as_secs() % 60)
}

/// The whole of `RELIABILITY.md`.
pub fn markdown(r: &Results) -> String {
    let st = &r.settings;
    let m = &r.machine;
    let mut s = String::new();
    let _ = writeln!(s, "# Reliability\n");
    let _ = writeln!(
        s,
        "What the fault suite (`i9-bench faults`, `bench/src/faults/`) found: under a steady mixed \
         load through the public API, one fault at a time, then a drain, and a count of what every \
         acknowledged write should have produced against what exists and what arrived. This file \
         is written by the run; run it again to refresh it.\n"
    );
    let _ = writeln!(s, "- Command: `{}`", r.command);
    let _ = writeln!(
        s,
        "- Date: {} UTC; the run took {}.",
        r.date.format("%Y-%m-%d %H:%M:%S"),
        fmt_duration(r.elapsed)
    );
    let _ = writeln!(s, "- Commit: `{}`", r.commit);
    let _ = writeln!(
        s,
        "- Machine: {} CPUs, {} memory, {} (Linux {}); a private PostgreSQL {} cluster and a private \
         RabbitMQ node ({}) started by the suite for the run, on the same machine.",
        m.nproc, m.memory, m.cpu_model, m.kernel, r.postgres_version, m.rabbitmq_version
    );
    let _ = writeln!(
        s,
        "- Service: the release binaries `i9-api` (with its outbox relay) and `i9-worker` (every job \
         kind, with its relay), one process each; a fresh database (`i9-admin migrate`, `i9-admin seed \
         fixtures/org.json`) and a fresh RabbitMQ virtual host per phase. The SMTP server \
         (mailin-embedded) and the partner's callback endpoint (axum, signatures verified) are the \
         suite's own. Worker settings: `CALLBACK_MAX_ATTEMPTS=60`, `CALLBACK_RETRY_BASE_SECS=1`, \
         `CALLBACK_RETRY_CAP_SECS=20` (used only if the worker reads them); the soak adds \
         `PURGE_INTERVAL_SECS=30`, `RETENTION_IDEMPOTENCY_SECS=120`, \
         `RETENTION_PROCESSED_JOBS_SECS=120`, `RETENTION_OUTBOX_SECS=120`, \
         `ACCESS_TOKEN_TTL_SECS=60`, `REFRESH_TOKEN_TTL_SECS=120`, \
         `PASSWORD_LINK_TTL_SECS=120`."
    );
    let _ = writeln!(
        s,
        "- Load: {} clients, {} operations/s in all, each client repeating the mix 3 × create with \
         `createI9: \"yes\"`, 2 × create with `createRemotehireI9: \"yes\"` (one email each), 1 × \
         create with `createLogin` + `sendLoginEmail` (one email each), 2 × PATCH of `jobTitle` of \
         one of its employees, 2 × partner `POST /v1/partners/i9s/section1` on-site (an I-9 and one \
         callback each). Every POST has an `Idempotency-Key`; a 5xx, a timeout (15 s) or a \
         connection error is retried with the same key and body (250 ms doubling to 4 s, \
         `Retry-After` honoured up to 5 s) for up to 180 s. Tokens are renewed every 30 s (a \
         refresh grant; every fourth time a password sign-in); each client also fails one sign-in \
         a minute.",
        st.clients, st.rate
    );
    let _ = writeln!(
        s,
        "- Phases: {} s of load, the fault, {} s of load, then the drain (up to {} s): until the \
         outbox has no unpublished row, every queue but the dead-letter queue is empty, and no \
         email, callback or I-9 has arrived for 5 s. A phase is cut short if the broker holds more \
         than {} messages (a runaway).\n",
        st.before.as_secs(),
        st.after.as_secs(),
        st.drain_timeout.as_secs(),
        st.runaway_limit
    );
    let _ = writeln!(s, "## Results\n");
    let rows: Vec<&Row> = r.rows.iter().chain(r.soak.iter().map(|x| &x.row)).collect();
    s.push_str(&table(&rows));
    let _ = writeln!(
        s,
        "\nTarget of every row: **0 lost** (every acknowledged write's employee, I-9, email and \
         callback present, every acknowledged PATCH stored), **0 duplicates** (employees, I-9s, \
         emails by recipient, callbacks by candidate), no answer 500 (a 503 says \"not available \
         right now\"), no write refused or given up, recovery with no manual step (every write \
         acknowledged before the fault's end has its effects, and the API answers 2xx), and the \
         backlog drained with nothing dead-lettered. A duplicate is excused only in the one \
         window a crash makes unavoidable (after the effect, before its record): in \
         worker-kill, a copy arriving after the kill of an effect first made at most 1 s \
         before it; such copies are counted apart, as *in the crash window*.\n"
    );
    let _ = writeln!(
        s,
        "Columns: *emails* are counted by recipient (each write has its own address) and by \
         `Message-ID`; *callbacks* are the deliveries answered 2xx, by the partner's candidate id \
         and by `webhook-id`; *dup* = arrivals beyond one per write; *missing* = acknowledged \
         writes with nothing arrived (when a runaway cut the phase short, not yet arrived \
         then). *5xx during the fault*: answers from the fault's start \
         until the first 2xx to a request sent after its end. *Recovered after*: from the \
         fault's end until every write acknowledged by then had its effects (I-9 row, email, \
         callback) and the API answered 2xx; `never` = not within the drain; `cut short` = a \
         runaway ended the phase before the load after the fault.\n"
    );
    let misses: Vec<(&str, Vec<String>)> = rows
        .iter()
        .map(|row| (name(row), row.misses()))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    let _ = writeln!(s, "## Where the service missed its target\n");
    if misses.is_empty() {
        let _ = writeln!(s, "Nowhere: every row met its target.\n");
    } else {
        for (n, m) in &misses {
            let _ = writeln!(s, "- **{n}**: {}.", m.join("; "));
        }
        let _ = writeln!(s);
    }
    if let Some(soak) = &r.soak {
        let _ = writeln!(
            s,
            "## Soak: row counts every {} s\n",
            st.soak_sample.as_secs()
        );
        soak_table(&mut s, soak);
        let growing: Vec<&str> = TABLES
            .iter()
            .zip(&soak.verdicts)
            .filter(|(t, v)| matches!(v, Verdict::Growing { .. }) && !RECORDS.contains(t))
            .map(|(t, _)| *t)
            .collect();
        let _ =
            writeln!(
            s,
            "\nLevelled off: the highest count of the last third of the soak is at most 20 % (and \
             5 rows) above the highest of the middle third; with no purge a table grows about 50 % \
             from one to the other. {}\n",
            if growing.is_empty() {
                "Every table levelled off.".to_owned()
            } else {
                format!(
                    "**Still growing**: {} (no purge of these within the soak).",
                    growing.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
                )
            }
        );
    }
    let _ = writeln!(s, "## Each phase\n");
    for row in &rows {
        details(&mut s, row, st);
    }
    let _ = writeln!(s, "## Method notes\n");
    let _ = writeln!(
        s,
        "- Private instances: `initdb` + `pg_ctl` (as `postgres`) in a temporary directory on a \
         free port; `rabbitmq-server -detached` with a node name, ports, data, logs and config of \
         its own and no plugins. Both are stopped and removed at the end, also after an error, \
         Ctrl-C or SIGTERM. The machine's shared PostgreSQL and RabbitMQ are not touched."
    );
    let _ = writeln!(
        s,
        "- Faults: {}.",
        Fault::ALL
            .iter()
            .map(|f| format!("*{}*: {}", f.name(), f.describe(st.hold(*f))))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let _ = writeln!(
        s,
        "- relay-crash: the API and the worker run without relays (`API_NO_RELAY`, \
         `WORKER_NO_RELAY`); the only relay is a third process, `i9-api` built with the \
         `failpoints` feature of `i9-common` and started with \
         `FAILPOINTS=relay-before-mark=return`, which aborts the process in `publish_batch` after \
         the broker confirmed a batch and before the rows are marked, so the batch is published \
         again by the next start."
    );
    let _ = writeln!(
        s,
        "- Times are taken on one monotonic clock; I-9 creation times come from `i9s.date_created` \
         (same machine). Answers are counted per HTTP attempt, sign-ins included."
    );
    s
}
