//! The `growth` section of `BENCHMARKS.md` and the tables printed.

use std::{collections::BTreeMap, fmt::Write as _, time::Duration};

use chrono::{DateTime, Utc};

use super::{
    explain::{thousands, Explained, Plan},
    loader::Loaded,
    Grown, GrowthArgs, Unfiltered,
};
use crate::{load::quantile_ms, sys::Machine};

/// The goal of each row: its throughput on the large tables at least this
/// share of its throughput on the small ones (issue 14).
pub const GOAL: f64 = 0.8;

pub struct Results {
    pub command: String,
    pub date: DateTime<Utc>,
    pub machine: Machine,
    pub postgres_version: String,
    pub args: GrowthArgs,
    pub load_before: [f64; 3],
    pub load_after: [f64; 3],
    pub seed_took: Duration,
    pub ours_load: Loaded,
    pub bare_load: Loaded,
    /// (table, rows, bytes with indexes and TOAST), before and after the load.
    pub small_sizes: Vec<(String, i64, i64)>,
    pub large_sizes: Vec<(String, i64, i64)>,
    pub rows: Vec<Grown>,
    pub unfiltered: Vec<Unfiltered>,
    pub explained: Option<Vec<Explained>>,
}

fn mib(bytes: i64) -> String {
    format!("{:.0} MiB", bytes as f64 / 1_048_576.0)
}

fn lat(l: &crate::load::LoadResult) -> String {
    format!(
        "{:.2} / {:.2}",
        quantile_ms(&l.latency, 0.50),
        quantile_ms(&l.latency, 0.99)
    )
}

fn errors(l: &crate::load::LoadResult) -> u64 {
    l.error_count()
}

/// The tables (Markdown), as printed and as in the section.
pub fn tables(r: &Results) -> String {
    let mut s = String::new();
    let a = &r.args.bench;
    let _ = writeln!(
        s,
        "#### Throughput on the small and the large tables ({} connections, {} s measured after {} s warm-up per program and size)\n",
        a.connections, a.duration, a.warmup
    );
    let _ = writeln!(
        s,
        "| request | ours small req/s | ours large req/s | **large / small** | goal | ours p50 / p99 ms small → large | bare small req/s | bare large req/s | bare large / small | ours / bare small → large | errors ours / bare |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---|---|---:|---:|---:|---|---|");
    for g in &r.rows {
        let (os, ol) = (
            g.small.ours.requests_per_second(),
            g.large.ours.requests_per_second(),
        );
        let (bs, bl) = (
            g.small.bare.requests_per_second(),
            g.large.bare.requests_per_second(),
        );
        let ratio = ol / os.max(1e-9);
        let _ = writeln!(
            s,
            "| {} | {os:.1} | {ol:.1} | **{ratio:.2}** | ≥ {GOAL} — **{}** | {} → {} | {bs:.1} | {bl:.1} | {:.2} | {:.2} → {:.2} | {} / {} |",
            g.small.kind.title(),
            if ratio >= GOAL { "met" } else { "missed" },
            lat(&g.small.ours),
            lat(&g.large.ours),
            bl / bs.max(1e-9),
            g.small.ratio(),
            g.large.ratio(),
            errors(&g.small.ours) + errors(&g.large.ours),
            errors(&g.small.bare) + errors(&g.large.bare),
        );
    }
    let _ = writeln!(
        s,
        "\nCPU during each measured window, in % of one core ({} cores: {}% is all of it), small → large:\n",
        r.machine.nproc,
        r.machine.nproc * 100
    );
    let _ = writeln!(
        s,
        "| request | program | bench process | Postgres | whole machine |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|");
    for g in &r.rows {
        for (name, sm, la) in [
            ("ours", &g.small.ours, &g.large.ours),
            ("bare", &g.small.bare, &g.large.bare),
        ] {
            let _ = writeln!(
                s,
                "| {} | {name} | {:.0}% → {:.0}% | {:.0}% → {:.0}% | {:.0}% → {:.0}% |",
                g.small.kind.title(),
                sm.cpu.own,
                la.cpu.own,
                sm.cpu.postgres,
                la.cpu.postgres,
                sm.cpu.machine,
                la.cpu.machine
            );
        }
    }
    let _ = writeln!(
        s,
        "\n#### The load ({} employees with their records into ours, as many rows into the bare program's tables)\n",
        thousands(r.ours_load.rows as f64)
    );
    let _ = writeln!(s, "| step | seconds |");
    let _ = writeln!(s, "|---|---:|");
    for (name, took) in &r.ours_load.steps {
        let _ = writeln!(s, "| ours: {name} | {:.1} |", took.as_secs_f64());
    }
    let _ = writeln!(
        s,
        "| **ours, total** | **{:.1}** |",
        r.ours_load.total.as_secs_f64()
    );
    for (name, took) in &r.bare_load.steps {
        let _ = writeln!(s, "| bare: {name} | {:.1} |", took.as_secs_f64());
    }
    let _ = writeln!(
        s,
        "| **bare, total** | **{:.1}** |",
        r.bare_load.total.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "\nOurs' large tables before → after the load (rows as `ANALYZE` estimates them; size with indexes and TOAST):\n"
    );
    let _ = writeln!(s, "| table | rows | size |");
    let _ = writeln!(s, "|---|---:|---:|");
    for (name, rows, bytes) in &r.large_sizes {
        let before = r.small_sizes.iter().find(|x| &x.0 == name);
        let (br, bb) = before.map_or((0, 0), |b| (b.1.max(0), b.2));
        let _ = writeln!(
            s,
            "| `{name}` | {} → {} | {} → {} |",
            thousands(br as f64),
            thousands(*rows as f64),
            mib(bb),
            mib(*bytes)
        );
    }
    let _ = writeln!(
        s,
        "\n#### Unfiltered lists: the count of every visible row (median of 5 requests, one at a time)\n"
    );
    let _ = writeln!(s, "| request | caller | small ms | large ms |");
    let _ = writeln!(s, "|---|---|---:|---:|");
    for u in &r.unfiltered {
        let _ = writeln!(
            s,
            "| `GET {}` | `{}` | {:.1} | {:.1} |",
            u.path, u.caller, u.small_ms, u.large_ms
        );
    }
    if let Some(explained) = &r.explained {
        s.push_str(&explain_tables(explained));
    }
    s
}

fn cell(plan: Option<&Plan>) -> (String, String) {
    match plan {
        Some(p) => (format!("{:.2}", p.duration_ms), p.access()),
        None => ("".to_owned(), "(not logged)".to_owned()),
    }
}

fn explain_tables(explained: &[Explained]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n#### The plans of the lists on the large tables\n\n\
         Each list and filter sent once alone (after one unlogged request), its statements' plans \
         logged by `auto_explain` (`ANALYZE`, `BUFFERS`): the time is the statement's execution in \
         Postgres with the plan's instrumentation; the access names the indexes used, and in bold \
         a sequential scan of a large table or an index scan whose filter threw away 10,000 rows \
         or more.\n"
    );
    let mut by_list: BTreeMap<&str, Vec<&Explained>> = BTreeMap::new();
    let mut order = Vec::new();
    for e in explained {
        if !by_list.contains_key(e.probe_list.as_str()) {
            order.push(e.probe_list.as_str());
        }
        by_list.entry(&e.probe_list).or_default().push(e);
    }
    let mut unserved = Vec::new();
    for list in order {
        let _ = writeln!(s, "\n**`{list}`**\n");
        let _ = writeln!(
            s,
            "| filter | caller | HTTP | count ms | count: access | page ms | page: access |"
        );
        let _ = writeln!(s, "|---|---|---|---:|---|---:|---|");
        for e in &by_list[list] {
            let count = e.plans.iter().find(|p| p.role == "count");
            let page = e
                .plans
                .iter()
                .find(|p| p.role == "page")
                .or_else(|| e.plans.iter().find(|p| p.role == "other"));
            let (cm, ca) = cell(count);
            let (pm, pa) = cell(page);
            let _ = writeln!(
                s,
                "| `{}` | `{}` | {} | {cm} | {ca} | {pm} | {pa} |",
                e.filter.replace('|', "\\|"),
                e.caller.name(),
                e.status,
            );
            if e.plans.iter().any(|p| !p.served_by_index()) {
                unserved.push(format!("`{list}` `{}` as `{}`", e.filter, e.caller.name()));
            }
        }
    }
    let _ = writeln!(
        s,
        "\nNot served by an index (a sequential scan of a large table, or 10,000 rows or more \
         filtered out): {}.",
        if unserved.is_empty() {
            "none".to_owned()
        } else {
            unserved.join("; ")
        }
    );
    s
}

/// Every plan, one line per node.
fn plans_detail(explained: &[Explained]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n<details><summary>Every plan (one line per node: rows per loop, loops, rows filtered out, time)</summary>\n"
    );
    for e in explained {
        let _ = writeln!(
            s,
            "\n`{}` `{}` as `{}` (HTTP {}, {:.1} ms with the plans logged):\n",
            e.probe_list,
            e.filter,
            e.caller.name(),
            e.status,
            e.took_ms
        );
        let _ = writeln!(s, "```");
        for p in &e.plans {
            let q: String = p.query.split_whitespace().collect::<Vec<_>>().join(" ");
            let _ = writeln!(
                s,
                "-- {} ({:.3} ms, {} buffers hit, {} read): {}",
                p.role, p.duration_ms, p.shared_hit, p.shared_read, q
            );
            for l in &p.lines {
                let _ = writeln!(s, "{l}");
            }
        }
        let _ = writeln!(s, "```");
    }
    let _ = writeln!(s, "\n</details>");
    s
}

fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "a debug build (not representative: use the release build of scripts/bench.sh)"
    } else {
        "release build"
    }
}

const SIDES: &str = "\
- **The rows** are those of `reads` and `writes` (see their sections for what each side does \
per request), measured once on the small tables and once on the large ones, with the same \
requests: `GET` of a random seeded employee `west.hr` sees (and as `west.auditor`, full SSN), the \
employee and I-9 lists by one of the seed's 200 last names as `west.hr`, `POST` of a new employee, \
`PATCH` of a seeded one, the partner operation. The bare program's `GET` and `PATCH` read and \
write its wide table, grown to as many rows; its `POST` inserts into its own `employees` and \
`i9s`, grown to as many rows; its lists run ours' SQL on ours' (grown) database.
- **The loader** (bench/src/growth/loader.rs) copies the seeded employees: employee `n` takes \
seeded employee `n mod seeded`'s group (so four in five are in West Region, as in the seed), \
legal entity, encrypted SSN, address and custom fields, and gets its own names, `profileId`, SSN \
hash (unique) and last four digits, birth date, date of hire (the last ten years), period of \
employment (one in ten ended), I-9 (mostly `Completed` or `Approved`; 5% open, 1% `Parked`; one \
in ten with a reverification date in the next three years), I-9 request with its Section 1 \
link token, and the seeded employee's audit entries. Half the completed I-9s have a closed \
E-Verify case, one in a thousand an open one (next step due within ten days of today); one \
employee in 10,000 has a legal hold. Not grown: the outbox and processed jobs (purged in \
production), E-Verify case history, Supplements A and B, users and groups (the example \
organization's).
- **Names**: a large employer's names are skewed: a few are common, most rare. 21% of the \
grown rows carry one of the seed's 200 last names, the first of them most often (about 0.84% of \
the rows, as the commonest US surname; the 200th about 0.06%), the others one of 150,000 made-up \
names (a handful of rows each). The lists are measured with the seed's 200 names, i.e. the \
common names: from about 40 matches a West Region user sees on the small tables to about 800 on \
average on 1,000,000 rows (6,700 for the commonest). A name's page stays 50 items; its count \
grows with the name's rows.
- **The unfiltered count**: every list answer carries `total`, the exact count of the rows the \
query matches and the caller sees, on every page (docs/api.md, \"Lists\"), and its `last` link \
is made from it. For an unfiltered list, or a filter most rows pass (`languagePreference`, \
`legalEntity`, `locationId`, a status most I-9s have), that count reads every matching row: a \
scan linear in the table, whatever the indexes (the table \"Unfiltered lists\" above). The page \
itself stays fast (an index walk in id order stops after 50 rows). Proposed, not done, as it \
changes the API's contract: count at most 10,001 rows (`SELECT count(*) FROM (... LIMIT 10001)`) \
and say so (`totalIsLowerBound: true`, or `total` absent and a `next` link while a next page \
exists), or give the planner's estimate for an unfiltered list (`pg_class.reltuples`) marked as \
an estimate; a client paging with `next` needs no exact total.
- **Filters left without an index, and why**: `custom1` … `custom8`, `jobTitle`, `middleName` \
and `otherName` are free text an employer fills as it likes, rarely searched alone; eleven more \
indexes on every employee write (`POST`, `PATCH`, the partner operation) cost more than a scan \
of the rare search. `languagePreference` (two values) and `legalEntity`, `locationId`, \
`locationIdWithin` (a few values, each matching a large share of the rows) select too many rows \
for an index to pay: their count is linear in the rows they match.";

/// The section, markers included.
pub fn section(r: &Results) -> String {
    let m = &r.machine;
    let a = &r.args.bench;
    let mut s = String::new();
    let _ = writeln!(s, "<!-- bench:growth -->");
    let _ = writeln!(
        s,
        "## Growth: the reads and writes on {} employees, and the plans of the lists\n",
        thousands(r.args.rows as f64)
    );
    let _ = writeln!(s, "- Command: `{}`", r.command);
    let _ = writeln!(s, "- Date: {} UTC", r.date.format("%Y-%m-%d %H:%M:%S"));
    let _ = writeln!(
        s,
        "- Machine: {} Postgres runs with its default settings (`shared_buffers` 128 MB).",
        crate::sys::machine_line(m, &r.postgres_version, r.load_before, r.load_after)
    );
    let _ = writeln!(
        s,
        "- Setup: {}, as `reads` and `writes`: both programs, our outbox relay and worker, and \
         the load generator in the one `i9-bench` process; {} keep-alive connections. Small \
         tables: {} employees created through `POST /v1/employees` ({:.0} s, I-9s included). \
         Then the loader adds {} employees with their records ({:.0} s for ours, {:.0} s for \
         the bare program; then `VACUUM (ANALYZE)` and a `CHECKPOINT`, in those times), and \
         every row is measured again.",
        build_profile(),
        a.connections,
        a.employees,
        r.seed_took.as_secs_f64(),
        thousands(r.args.rows as f64),
        r.ours_load.total.as_secs_f64(),
        r.bare_load.total.as_secs_f64(),
    );
    let _ = writeln!(s, "\n### Results\n");
    s.push_str(&tables(r));
    for g in &r.rows {
        for (size, row) in [("small", &g.small), ("large", &g.large)] {
            for (side, e) in [("ours", &row.ours), ("bare", &row.bare)] {
                if let Some(e) = &e.first_error {
                    let _ = writeln!(
                        s,
                        "\nFirst error of {side} ({}, {size}): `{}`",
                        row.kind.title(),
                        e.replace('`', "'")
                    );
                }
            }
        }
    }
    let _ = writeln!(s, "\n### What each side does, and the data\n");
    s.push_str(SIDES);
    let _ = writeln!(s);
    let _ = writeln!(s, "\n### Method notes\n");
    let _ = writeln!(
        s,
        "- Throughput as in `reads` and `writes`: {} s warm-up, {} s measured per program, row \
         and size; requests/s = counted responses / measured wall time. The goal compares ours \
         on the large tables with ours on the small ones; ours / bare is given at both sizes.",
        a.warmup, a.duration
    );
    let _ = writeln!(
        s,
        "- The loader runs with `session_replication_role = replica` (no triggers, no foreign \
         key checks; it sets the I-9s' `retention_date` itself) and `INSERT ... SELECT` from \
         `generate_series`, one statement per table; the times are wall times of each step."
    );
    let _ = writeln!(
        s,
        "- The plans: `auto_explain` loaded into every new session of ours' database \
         (`ALTER DATABASE ... SET session_preload_libraries`, `log_min_duration` 0, `log_analyze`, \
         `log_buffers`, JSON), after the measurements; one request per list, filter and caller, \
         its plans read back from the server's log. So each plan is the API's own statement with \
         its own values (the lists send unnamed statements, planned with their values). The \
         instrumentation makes each statement slower than unobserved."
    );
    let _ = writeln!(
        s,
        "- CPU from `/proc` over each measured window, as in `reads` and `writes`."
    );
    if let Some(e) = &r.explained {
        s.push_str(&plans_detail(e));
    }
    let _ = writeln!(s, "<!-- /bench:growth -->");
    s
}
