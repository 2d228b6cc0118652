//! The memory mode's tables and its section of `BENCHMARKS.md`.

use std::fmt::Write as _;

use super::{Mem, Results, API_GOAL_MIB, PER_ADDRESS, WORKER_GOAL_MIB};
use crate::load::{quantile_ms, LoadResult};

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// `VmRSS (RssAnon)` in MiB.
fn cell(m: &Mem) -> String {
    format!("{:.1} ({:.1})", mib(m.rss), mib(m.anon))
}

fn verdict(kib: u64, goal: f64) -> &'static str {
    if mib(kib) <= goal {
        "met"
    } else {
        "missed"
    }
}

fn ratio(a: u64, b: u64) -> String {
    if b > 0 {
        format!("{:.2}", a as f64 / b as f64)
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

pub fn tables(r: &Results) -> String {
    let a = &r.args;
    let (o, w, b) = (&r.ours, &r.worker, &r.bare);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "#### Resident memory, MiB: `VmRSS` (its `RssAnon` in parentheses), each program its own process\n"
    );
    let _ = writeln!(
        s,
        "| process | at rest | standard load: largest sampled | at the end of the load | {} idle connections | `VmHWM` (peak) at the end | threads under load | goal |",
        a.open_connections
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---|");
    let api_worst = o.load_peak.rss.max(o.load_end.rss);
    let _ = writeln!(
        s,
        "| ours: `i9-api` (with its outbox relay) | {} | {} | {} | {} | {:.1} | {} | ≤ {API_GOAL_MIB} under the standard load — **{}** |",
        cell(&o.rest),
        cell(&o.load_peak),
        cell(&o.load_end),
        cell(&o.connections),
        mib(o.connections.hwm),
        o.load_peak.threads,
        verdict(api_worst, API_GOAL_MIB),
    );
    let _ = writeln!(
        s,
        "| bare: axum + sqlx (`i9-bench bare-serve`) | {} | {} | {} | {} | {:.1} | {} | |",
        cell(&b.rest),
        cell(&b.load_peak),
        cell(&b.load_end),
        cell(&b.connections),
        mib(b.connections.hwm),
        b.load_peak.threads,
    );
    let _ = writeln!(
        s,
        "| **ours / bare** (`VmRSS`) | **{}** | **{}** | **{}** | **{}** | **{}** | | |",
        ratio(o.rest.rss, b.rest.rss),
        ratio(o.load_peak.rss, b.load_peak.rss),
        ratio(o.load_end.rss, b.load_end.rss),
        ratio(o.connections.rss, b.connections.rss),
        ratio(o.connections.hwm, b.connections.hwm),
    );
    let worker_worst = w.load_peak.rss.max(w.load_end.rss).max(w.drained.rss);
    let _ = writeln!(
        s,
        "| ours: `i9-worker` (with its outbox relay) | {} | {} | {} | {} | {:.1} | {} | ≤ {WORKER_GOAL_MIB} — **{}** |",
        cell(&w.rest),
        cell(&w.load_peak),
        cell(&w.load_end),
        cell(&w.connections),
        mib(w.connections.hwm),
        w.load_peak.threads,
        verdict(worker_worst, WORKER_GOAL_MIB),
    );
    let _ = writeln!(
        s,
        "| bare worker | not built: the worker is measured against its goal only | | | | | | |"
    );
    let _ = writeln!(
        s,
        "\nThe worker once every I-9 of the load's POSTs existed ({:.1} s after the load): {} MiB.",
        w.drained_after.as_secs_f64(),
        cell(&w.drained)
    );
    let _ = writeln!(
        s,
        "\n#### The standard load ({} connections of each request at once, {} s after {} s warm-up, both sampled)\n",
        a.connections, a.duration, a.warmup
    );
    let _ = writeln!(
        s,
        "| program | `GET` req/s | `GET` p50 / p99 ms | `POST` (`createI9`) req/s | `POST` p50 / p99 ms | errors `GET` / `POST` | bench process CPU |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---|---:|");
    for (name, m) in [("ours", o), ("bare", b)] {
        let _ = writeln!(
            s,
            "| {name} | {:.1} | {:.2} / {:.2} | {:.1} | {:.2} / {:.2} | {} / {} | {:.0}% |",
            m.get.requests_per_second(),
            quantile_ms(&m.get.latency, 0.5),
            quantile_ms(&m.get.latency, 0.99),
            m.post.requests_per_second(),
            quantile_ms(&m.post.latency, 0.5),
            quantile_ms(&m.post.latency, 0.99),
            errors_cell(&m.get),
            errors_cell(&m.post),
            m.get.cpu.own,
        );
    }
    let _ = writeln!(
        s,
        "\n#### Idle connections: opened from {} loopback source addresses (127.0.0.2 up, {} each at most)\n",
        r.addresses, PER_ADDRESS
    );
    let _ = writeln!(
        s,
        "| program | connections open, each after one `GET` answered 200 | open files of the process then | its soft open-file limit |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|");
    for (name, m) in [("ours: `i9-api`", o), ("bare", b)] {
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {} |",
            m.opened, m.open_files, m.nofile
        );
    }
    s
}

pub fn section(r: &Results) -> String {
    let m = &r.machine;
    let a = &r.args;
    let mut s = String::new();
    let _ = writeln!(s, "<!-- bench:memory -->");
    let _ = writeln!(
        s,
        "## Memory: `i9-api` and `i9-worker` at rest, under load, with idle connections\n"
    );
    let _ = writeln!(s, "- Command: `{}`", r.command);
    let _ = writeln!(s, "- Date: {} UTC", r.date.format("%Y-%m-%d %H:%M:%S"));
    let _ = writeln!(
        s,
        "- Machine: {}",
        crate::sys::machine_line(m, &r.postgres_version, r.load_before, r.load_after)
    );
    let extra = if a.env.is_empty() {
        String::new()
    } else {
        format!(
            ", and for this run {}",
            a.env
                .iter()
                .map(|e| format!("`{e}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let _ = writeln!(
        s,
        "- Setup: ours is the release binaries `target/release/i9-api` and \
         `target/release/i9-worker` (`cargo build --release --locked -p i9-bench -p i9-api -p i9-workers`), \
         each its own process, with the environment `scripts/dev.sh` gives them (`APP_ENV=development`, \
         `ALLOW_PRIVATE_CALLBACKS=true`, `EVERIFY_POLL_SECS=5`) on a fresh database (migrated, \
         the example organization) and an AMQP prefix of the run, `RUST_LOG=warn`, every other \
         setting its default (`DATABASE_MAX_CONNECTIONS` 20 each, `WORKER_PREFETCH` 8, \
         `PASSWORD_HASH_CONCURRENCY` the cores){extra}. The bare program is bench/src/bare.rs \
         alone in a process (`i9-bench bare-serve`, a multi-threaded Tokio runtime, the release \
         build of the bench): axum and sqlx, a pool of 32 connections. The load generator runs in \
         the `i9-bench` process. Ours' two processes are stopped before the bare program starts."
    );
    let _ = writeln!(
        s,
        "- Data: {} employees with their I-9s created in ours through its API before the load \
         ({:.0} s); the bare program's wide table holds a copy of them.",
        a.employees,
        r.seed_took.as_secs_f64()
    );
    let _ = writeln!(s, "\n### Results\n");
    s.push_str(&tables(r));
    for (side, l) in [
        ("ours' GETs", &r.ours.get),
        ("ours' POSTs", &r.ours.post),
        ("the bare GETs", &r.bare.get),
        ("the bare POSTs", &r.bare.post),
    ] {
        if let Some(e) = &l.first_error {
            let _ = writeln!(s, "\nFirst error of {side}: `{}`", e.replace('`', "'"));
        }
    }
    let _ = writeln!(s, "\n### What each side does\n");
    let _ = writeln!(
        s,
        "- **At rest**: after start-up and the first requests (ours: two sign-ins, one `POST \
         /v1/employees` with `createI9: \"yes\"` whose I-9 the worker created, one `GET` of it; \
         bare: one `POST /employees`, one `GET /employees/{{id}}`), before the seed.\n\
         - **The standard load**: {c} connections sending `GET /v1/employees/{{id}}` as `west.hr` \
         (a random seeded employee) and, at the same time, {c} sending `POST /v1/employees` as \
         `admin` with `createI9: \"yes\"` (the outbox relays each job; the worker creates the \
         I-9s meanwhile and after); bare: `GET /employees/{{id}}` (one `SELECT *` of a 52-column \
         row) and `POST /employees` (the employee and its I-9 in one transaction). The resident \
         size is sampled every 100 ms through the warm-up and the measured window.\n\
         - **Idle connections**: {n} keep-alive connections, each opened from a loopback source \
         address of its own group (the client socket bound to 127.0.0.2, 127.0.0.3, …, at most \
         {PER_ADDRESS} each, under ours' `HTTP_MAX_CONNECTIONS_PER_ADDRESS` of 256, which is \
         left as it is), each sending one `GET` of an employee and reading the answer, then \
         idle; measured as soon as all are open (ours closes an idle connection after \
         `HTTP_HEADER_TIMEOUT_SECS`, 30 s).",
        c = a.connections,
        n = a.open_connections
    );
    let _ = writeln!(s, "\n### Method notes\n");
    let _ = writeln!(
        s,
        "- From `/proc/<pid>/status`: `VmRSS` (resident now; `RssAnon` is its anonymous part, the \
         heap and stacks, the rest is mostly the mapped binary), `VmHWM` (the largest `VmRSS` \
         since the process started), `Threads`. The goal of the API is judged on the larger of \
         its largest sampled `VmRSS` under the standard load and its `VmRSS` at the load's end; \
         the worker's on its largest of those and after its backlog.\n\
         - The bare worker (a lapin consumer doing the `create_i9` transaction) is not built: \
         the worker's figures stand against the goal alone."
    );
    let _ = writeln!(s, "<!-- /bench:memory -->");
    s
}
