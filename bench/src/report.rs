//! `BENCHMARKS.md` and the tables printed to stdout.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use crate::{
    load::{quantile_ms, I9Result, LoadResult},
    sys::Machine,
    Args,
};

/// Our throughput must be at least this share of the bare program's.
pub const TARGET_RATIO: f64 = 0.7;

pub struct Results {
    pub command: String,
    pub date: DateTime<Utc>,
    pub machine: Machine,
    pub postgres_version: String,
    pub args: Args,
    pub ours: LoadResult,
    pub bare: LoadResult,
    pub ours_i9: I9Result,
    pub bare_i9: I9Result,
}

impl Results {
    pub fn throughput_ratio(&self) -> f64 {
        self.ours.requests_per_second() / self.bare.requests_per_second().max(1e-9)
    }

    pub fn met(&self) -> bool {
        self.throughput_ratio() >= TARGET_RATIO
    }
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "n/a".to_owned()
    }
}

fn errors_cell(r: &LoadResult) -> String {
    let n = r.error_count();
    if n == 0 {
        return "0".to_owned();
    }
    let parts: Vec<String> = r.errors.iter().map(|(k, v)| format!("{v} × {k}")).collect();
    format!("{n} ({})", parts.join(", "))
}

fn failures_cell(r: &I9Result) -> String {
    let n = r.failure_count();
    if n == 0 {
        return "0".to_owned();
    }
    let parts: Vec<String> = r
        .failures
        .iter()
        .map(|(k, v)| format!("{v} × {k}"))
        .collect();
    format!("{n} ({})", parts.join(", "))
}

/// The tables (Markdown), as printed and as in the report.
pub fn tables(r: &Results) -> String {
    let mut s = String::new();
    let a = &r.args;
    let _ = writeln!(
        s,
        "### Throughput and latency: POST a new employee ({} connections, {} s measured after {} s warm-up)\n",
        a.connections, a.duration, a.warmup
    );
    let _ = writeln!(
        s,
        "| program | requests/s (201s) | p50 ms | p99 ms | 201s | errors (non-201) |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---|");
    for (name, l) in [("ours", &r.ours), ("bare", &r.bare)] {
        let _ = writeln!(
            s,
            "| {name} | {:.1} | {:.2} | {:.2} | {} | {} |",
            l.requests_per_second(),
            quantile_ms(&l.latency, 0.50),
            quantile_ms(&l.latency, 0.99),
            l.ok,
            errors_cell(l)
        );
    }
    let _ = writeln!(
        s,
        "| **ours / bare** | **{:.2}** | {} | {} | | |",
        r.throughput_ratio(),
        ratio(
            quantile_ms(&r.ours.latency, 0.50),
            quantile_ms(&r.bare.latency, 0.50)
        ),
        ratio(
            quantile_ms(&r.ours.latency, 0.99),
            quantile_ms(&r.bare.latency, 0.99)
        ),
    );
    let _ = writeln!(
        s,
        "\nTarget: our throughput at least {TARGET_RATIO} × the bare program's. This run: {:.2} — **{}**.\n",
        r.throughput_ratio(),
        if r.met() { "met" } else { "not met" }
    );

    let _ = writeln!(
        s,
        "CPU during the measured window, in % of one core (the machine has {}, so {}% is all of it):\n",
        r.machine.nproc,
        r.machine.nproc * 100
    );
    let _ = writeln!(
        s,
        "| program | bench process (server + load generator) | Postgres | RabbitMQ | whole machine |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|");
    for (name, l) in [("ours", &r.ours), ("bare", &r.bare)] {
        let c = l.cpu;
        let _ = writeln!(
            s,
            "| {name} | {:.0}% | {:.0}% | {:.0}% | {:.0}% |",
            c.own, c.postgres, c.rabbitmq, c.machine
        );
    }

    let _ = writeln!(
        s,
        "\n### Time to I-9: from just before the POST to the I-9 row ({} samples, {} in flight, polled every 2 ms)\n",
        a.i9_samples, a.i9_concurrency
    );
    let _ = writeln!(s, "| program | p50 ms | p99 ms | samples | failures |");
    let _ = writeln!(s, "|---|---:|---:|---:|---|");
    for (name, i) in [("ours", &r.ours_i9), ("bare", &r.bare_i9)] {
        let _ = writeln!(
            s,
            "| {name} | {:.2} | {:.2} | {} | {} |",
            quantile_ms(&i.latency, 0.50),
            quantile_ms(&i.latency, 0.99),
            i.ok,
            failures_cell(i)
        );
    }
    let _ = writeln!(
        s,
        "| **ours / bare** | {} | {} | | |",
        ratio(
            quantile_ms(&r.ours_i9.latency, 0.50),
            quantile_ms(&r.bare_i9.latency, 0.50)
        ),
        ratio(
            quantile_ms(&r.ours_i9.latency, 0.99),
            quantile_ms(&r.bare_i9.latency, 0.99)
        ),
    );
    s
}

fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "a debug build (not representative: use the release build of scripts/bench.sh)"
    } else {
        "release build"
    }
}

/// The whole of `BENCHMARKS.md`.
pub fn markdown(r: &Results) -> String {
    let m = &r.machine;
    let mut s = String::new();
    let _ = writeln!(s, "# Benchmarks\n");
    let _ = writeln!(
        s,
        "Our service's `POST /v1/employees` against a bare axum + sqlx program that does \
         two inserts, measured in one run on one machine by `i9-bench` (`bench/`). \
         This file is written by that run; run it again to refresh it.\n"
    );
    let _ = writeln!(s, "- Command: `{}`", r.command);
    let _ = writeln!(s, "- Date: {} UTC", r.date.format("%Y-%m-%d %H:%M:%S"));
    let _ = writeln!(
        s,
        "- Machine: {} CPUs (`nproc`), {} memory, {} (Linux {}). PostgreSQL {} and RabbitMQ {} \
         run on the same machine; all traffic is over loopback.",
        m.nproc, m.memory, m.cpu_model, m.kernel, r.postgres_version, m.rabbitmq_version
    );
    let _ = writeln!(
        s,
        "- Setup: {}; both programs, our outbox relay and worker, and the load \
         generator run in the one `i9-bench` process (a multi-threaded Tokio runtime). \
         Each program has a fresh database of its own and a pool of 32 connections. The \
         load is {} keep-alive connections (reqwest), one task each, sending the next \
         request as soon as the previous one is answered; only 201s count, and their \
         latencies go into an HDR histogram. Ours is measured first, then the bare program, \
         with the same settings.",
        build_profile(),
        r.args.connections
    );
    let _ = writeln!(
        s,
        "- Request body: `{{\"firstName\", \"lastName\", \"locationId\": <Portland Warehouse>, \
         \"startDate\": \"2026-11-05\", \"profileId\": <unique>}}` (no SSN); for the time to \
         I-9 also `\"createI9\": \"yes\"`. Ours is called as `admin` with a token of the \
         `acme-hr-portal` client.\n"
    );
    let _ = writeln!(s, "## Results\n");
    s.push_str(&tables(r));
    for (name, e) in [
        ("ours (throughput)", &r.ours.first_error),
        ("bare (throughput)", &r.bare.first_error),
        ("ours (time to I-9)", &r.ours_i9.first_error),
        ("bare (time to I-9)", &r.bare_i9.first_error),
    ] {
        if let Some(e) = e {
            let _ = writeln!(s, "\nFirst error of {name}: `{}`", e.replace('`', "'"));
        }
    }
    let _ = writeln!(s, "\n## What each side does per request\n");
    let _ = writeln!(
        s,
        "- **Ours** (`POST /v1/employees`): the middleware stack (request id, tracing, \
         metrics, timeout, problem details); the bearer token (SHA-256 of it, found in the \
         process's short-lived token cache; on a miss, one query joining the token, grant, \
         user, client and the role's permissions; revocations clear the cache by NOTIFY); \
         the caller's visible groups (no query for `admin`, who sees every group); \
         validation of every field; then one SQL statement, atomic on its own: insert the \
         employee (its unique and foreign keys check `profileId`, the SSN and the group), \
         its period of employment and the audit entry, and (with `createI9`) the I-9 \
         request with its Section 1 link token, the `create_i9` job in the outbox and a \
         `NOTIFY`; the response is built from the inserted row. The I-9 itself is created \
         later: the outbox relay publishes the job to RabbitMQ (with publisher confirms) \
         and marks it published, and the worker consumes it and creates the I-9 in a \
         transaction of its own."
    );
    let _ = writeln!(
        s,
        "- **Bare**: axum parses the JSON body with serde; one transaction inserts the \
         employee and then its I-9; the employee is answered as JSON with 201. No \
         authentication, no checks, no audit, no outbox. Its I-9 exists when the response \
         arrives (same transaction); the time to I-9 is measured the same way (POST, then \
         poll) for symmetry."
    );
    let _ = writeln!(s, "\n## Method notes\n");
    let _ = writeln!(
        s,
        "- Throughput: each program gets {} s of warm-up load (not counted), then {} s \
         measured; requests/s = 201 responses / measured wall time (until the last \
         in-flight request ended). Non-201 answers and transport errors are counted apart \
         and are not in the latencies.",
        r.args.warmup, r.args.duration
    );
    let _ = writeln!(
        s,
        "- Time to I-9: {} samples after {} unmeasured ones, {} in flight; each polls \
         `SELECT EXISTS (SELECT 1 FROM i9s WHERE employee_id = $1)` every 2 ms on a pool \
         of the bench's own, for at most 30 s.",
        r.args.i9_samples, r.args.i9_concurrency, r.args.i9_concurrency
    );
    let _ = writeln!(
        s,
        "- CPU figures come from `/proc` over the measured window: the `i9-bench` process \
         (program under test, and the load generator, which is the same for both), the \
         `postgres` processes, RabbitMQ's `beam.smp`, and the whole machine."
    );
    s
}
