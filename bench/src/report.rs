//! The sections of `BENCHMARKS.md` and the tables printed to stdout. Each
//! mode rewrites only its own section, between `<!-- bench:<mode> -->` and
//! `<!-- /bench:<mode> -->`, and keeps the rest of the file.

use std::{fmt::Write as _, path::Path, time::Duration};

use anyhow::Context as _;
use chrono::{DateTime, Utc};

use crate::{
    load::{quantile_ms, I9Result, LoadResult},
    sys::Machine,
    Args, Kind,
};

/// One measured request, ours beside its bare counterpart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    PostEmployee,
    PatchEmployee,
    PartnerPush,
    GetEmployee,
    GetEmployeeFullSsn,
    ListEmployees,
    ListI9s,
}

impl RowKind {
    /// A short name (log lines, probe markers: no quotes).
    pub fn title(self) -> &'static str {
        match self {
            RowKind::PostEmployee => "POST employee",
            RowKind::PatchEmployee => "PATCH employee",
            RowKind::PartnerPush => "partner push",
            RowKind::GetEmployee => "GET employee (group visibility)",
            RowKind::GetEmployeeFullSsn => "GET employee (full SSN, audited)",
            RowKind::ListEmployees => "GET employees by lastName",
            RowKind::ListI9s => "GET i9s by lastName",
        }
    }

    /// Ours' request, as the table names it.
    fn ours(self) -> &'static str {
        match self {
            RowKind::PostEmployee => "`POST /v1/employees` (`admin`)",
            RowKind::PatchEmployee => {
                "`PATCH /v1/employees/{id}` (`admin`; `jobTitle`, `cellNumber`, and the required names and `locationId` unchanged)"
            }
            RowKind::PartnerPush => "`POST /v1/partners/i9s/section1` (`ats.bot` via `greenhouse-ats`, `Idempotency-Key`, on-site)",
            RowKind::GetEmployee => "`GET /v1/employees/{id}` as `west.hr` (group visibility, masked SSN)",
            RowKind::GetEmployeeFullSsn => {
                "`GET /v1/employees/{id}` as `west.auditor` (group visibility, permission 12: full SSN, audited)"
            }
            RowKind::ListEmployees => "`GET /v1/employees?lastName=` as `west.hr`",
            RowKind::ListI9s => "`GET /v1/i9s?lastName=` as `west.hr`",
        }
    }

    /// The bare program's counterpart.
    fn bare(self) -> &'static str {
        match self {
            RowKind::PostEmployee | RowKind::PartnerPush => {
                "`POST /employees`: two inserts in one transaction"
            }
            RowKind::PatchEmployee => "`PATCH /employees/{id}`: one `UPDATE … RETURNING *`",
            RowKind::GetEmployee | RowKind::GetEmployeeFullSsn => {
                "`GET /employees/{id}`: one `SELECT *` by primary key of a 52-column row"
            }
            RowKind::ListEmployees => "ours' count and page SQL of that list",
            RowKind::ListI9s => "ours' count and page SQL of that list",
        }
    }

    /// Our throughput's goal, as a share of the bare program's (issue 14).
    pub fn goal(self) -> f64 {
        match self {
            RowKind::PostEmployee | RowKind::PatchEmployee | RowKind::PartnerPush => 0.85,
            RowKind::GetEmployee => 0.9,
            RowKind::GetEmployeeFullSsn => 0.7,
            RowKind::ListEmployees | RowKind::ListI9s => 0.8,
        }
    }

    /// 201 or 200.
    fn status(self) -> &'static str {
        match self {
            RowKind::PostEmployee | RowKind::PartnerPush => "201",
            _ => "200",
        }
    }
}

pub struct Row {
    pub kind: RowKind,
    pub ours: LoadResult,
    pub bare: LoadResult,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        self.ours.requests_per_second() / self.bare.requests_per_second().max(1e-9)
    }

    pub fn met(&self) -> bool {
        self.ratio() >= self.kind.goal()
    }
}

pub struct Results {
    pub kind: Kind,
    pub command: String,
    pub date: DateTime<Utc>,
    pub machine: Machine,
    pub postgres_version: String,
    pub args: Args,
    pub load_before: [f64; 3],
    pub load_after: [f64; 3],
    pub seeded_employees: usize,
    pub seed_took: Duration,
    pub rows: Vec<Row>,
    /// The time to an I-9, ours and bare (the writes).
    pub i9: Option<(I9Result, I9Result)>,
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

fn latency(l: &LoadResult) -> String {
    format!(
        "{:.2} / {:.2}",
        quantile_ms(&l.latency, 0.50),
        quantile_ms(&l.latency, 0.99)
    )
}

/// The tables (Markdown), as printed and as in the section.
pub fn tables(r: &Results) -> String {
    let mut s = String::new();
    let a = &r.args;
    let _ = writeln!(
        s,
        "#### Throughput and latency ({} connections, {} s measured after {} s warm-up, each row's two programs one after the other)\n",
        a.connections, a.duration, a.warmup
    );
    let _ = writeln!(
        s,
        "| ours | bare counterpart | ours req/s | bare req/s | **ours / bare** | goal | ours p50 / p99 ms | bare p50 / p99 ms | counted | errors ours / bare |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---|---:|---:|---|---|");
    for row in &r.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {:.1} | **{:.2}** | ≥ {} — **{}** | {} | {} | {}s: {} / {} | {} / {} |",
            row.kind.ours(),
            row.kind.bare(),
            row.ours.requests_per_second(),
            row.bare.requests_per_second(),
            row.ratio(),
            row.kind.goal(),
            if row.met() { "met" } else { "missed" },
            latency(&row.ours),
            latency(&row.bare),
            row.kind.status(),
            row.ours.ok,
            row.bare.ok,
            errors_cell(&row.ours),
            errors_cell(&row.bare),
        );
    }
    let _ = writeln!(
        s,
        "\nCPU during each measured window, in % of one core (the machine has {}, so {}% is all of it); \
         the bench process holds the program under test, for ours its outbox relay and worker, and the load generator:\n",
        r.machine.nproc,
        r.machine.nproc * 100
    );
    let _ = writeln!(
        s,
        "| request | program | bench process | Postgres | RabbitMQ | whole machine |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|");
    for row in &r.rows {
        for (name, l) in [("ours", &row.ours), ("bare", &row.bare)] {
            let c = l.cpu;
            let _ = writeln!(
                s,
                "| {} | {name} | {:.0}% | {:.0}% | {:.0}% | {:.0}% |",
                row.kind.title(),
                c.own,
                c.postgres,
                c.rabbitmq,
                c.machine
            );
        }
    }
    if let Some((ours, bare)) = &r.i9 {
        let _ = writeln!(
            s,
            "\n#### Time to I-9: from just before the POST to the I-9 row ({} samples, {} in flight, polled every 2 ms)\n",
            a.i9_samples, a.i9_concurrency
        );
        let _ = writeln!(s, "| program | p50 ms | p99 ms | samples | failures |");
        let _ = writeln!(s, "|---|---:|---:|---:|---|");
        for (name, i) in [("ours", ours), ("bare", bare)] {
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
                quantile_ms(&ours.latency, 0.50),
                quantile_ms(&bare.latency, 0.50)
            ),
            ratio(
                quantile_ms(&ours.latency, 0.99),
                quantile_ms(&bare.latency, 0.99)
            ),
        );
    }
    s
}

fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "a debug build (not representative: use the release build of scripts/bench.sh)"
    } else {
        "release build"
    }
}

const WRITES_SIDES: &str = "\
- **Ours, every request**: the middleware stack (request id, tracing, metrics, timeout, \
problem details); the bearer token (SHA-256 of it, found in the process's short-lived token \
cache; on a miss, one query joining the token, grant, user, client and the role's permissions; \
revocations clear the cache by NOTIFY); the caller's visible groups (no query for `admin`, who \
sees every group; one recursive query for a user limited to groups, `ats.bot`); validation of \
every field.
- **Ours, `POST /v1/employees`**: one SQL statement, atomic on its own: insert the employee (its \
unique and foreign keys check `profileId`, the SSN and the group), its period of employment and \
the audit entry, and (with `createI9`) the I-9 request with its Section 1 link token, the \
`create_i9` job in the outbox and a `NOTIFY`; the response is built from the inserted row. The \
I-9 itself is created later: the outbox relay publishes the job to RabbitMQ (with publisher \
confirms) and marks it published, and the worker consumes it and creates the I-9 in a \
transaction of its own.
- **Ours, `PATCH /v1/employees/{id}`**: one transaction: the employee's row locked and read, the \
change checked against it, the update, its audit entry (the names of the fields changed, never \
their values), and the record read back for the answer as a `GET` reads it.
- **Ours, the partner operation**: one transaction: the employee matched by the partner's \
`integrationCandidateId` (none here: a new hire), the employee, its period, the I-9 request and \
its Section 1 link, the jobs (the I-9's creation; then the `i9.created` callback to the partner, \
delivered by the worker to a receiver of the bench that answers 204) and the audit entry, and \
the `Idempotency-Key`'s record with the answer kept for a replay. The worker creates the I-9 and \
signs and posts the callback during and after the measured window (its CPU is in the bench \
process's).
- **Bare, `POST /employees`**: axum parses the JSON body with serde; one transaction inserts the \
employee (8 columns) and then its I-9; the employee is answered as JSON with 201. No \
authentication, no checks, no audit, no outbox. It is the counterpart of both POSTs, measured \
again beside each. Its I-9 exists when the response arrives (same transaction); the time to I-9 \
is measured the same way (POST, then poll) for symmetry.
- **Bare, `PATCH /employees/{id}`**: one `UPDATE … SET job_title, cell_number, updated_at … \
RETURNING *` of a 52-column row (a copy of ours' seeded employees), answered as JSON.";

const READS_SIDES: &str = "\
- **Ours, every request**: the middleware stack (request id, tracing, metrics, timeout, \
problem details); the bearer token (SHA-256 of it, found in the process's short-lived token \
cache); the caller's visible groups (one recursive query over the user's groups and the groups \
below them: `west.hr` and `west.auditor` lack permission 11).
- **Ours, `GET /v1/employees/{id}`**: the employee with its latest I-9 and current period of \
employment (one query, its group then checked against the visible ones), its I-9 ids (links), \
whether a legal hold covers it, its latest E-Verify case and whether one is unresolved, and \
whether it was purged; the SSN masked from its last four digits for `west.hr`; for \
`west.auditor` (permission 12) decrypted (AES-GCM) and one `ssn.read` audit entry inserted per \
read. The record has 50 members and `links`.
- **Ours, the lists**: the query string checked strictly (known parameters, typed values); the \
count and the page (50 items), each with the filter and the group condition, as \
api/src/list.rs builds them; each item's `i9Status` derived, its SSN masked; the paging links.
- **Bare, `GET /employees/{id}`**: one `SELECT * FROM wide_employees WHERE id = $1` of a \
52-column table of its own database (the same 10,000 rows' values: a copy of ours' employees \
with their current period and latest I-9 status; the SSN kept encrypted, shown masked), \
decoded into a struct with `FromRow` and answered as JSON. No authentication, no visibility, \
no audit. The same bare program is the counterpart of both of ours' `GET`s.
- **Bare, the lists**: the very count and page SQL ours runs for `lastName` and `west.hr`'s \
groups (copied from api/src/list.rs's output, the groups bound as ours binds them), on ours' \
database through a pool of its own (32 connections), rows decoded with `FromRow`, SSNs masked, \
answered as JSON. No authentication, no query-string checks, no links.";

/// The section of `r.kind`, markers included.
pub fn section(r: &Results) -> String {
    let m = &r.machine;
    let a = &r.args;
    let mut s = String::new();
    let name = r.kind.name();
    let _ = writeln!(s, "<!-- bench:{name} -->");
    match r.kind {
        Kind::Writes => {
            let _ = writeln!(
                s,
                "## Writes: `POST` and `PATCH /v1/employees`, the partner operation\n"
            );
        }
        Kind::Reads => {
            let _ = writeln!(s, "## Reads: an employee, the employee and I-9 lists\n");
        }
    }
    let _ = writeln!(s, "- Command: `{}`", r.command);
    let _ = writeln!(s, "- Date: {} UTC", r.date.format("%Y-%m-%d %H:%M:%S"));
    let _ = writeln!(
        s,
        "- Machine: {}",
        crate::sys::machine_line(m, &r.postgres_version, r.load_before, r.load_after)
    );
    let _ = writeln!(
        s,
        "- Setup: {}; both programs, our outbox relay and worker, and the load generator run in \
         the one `i9-bench` process (a multi-threaded Tokio runtime). Each program has a fresh \
         database of its own and a pool of 32 connections (ours' worker 16; the bare program's \
         idle connections close after 2 s, as the server's 100 connection slots are shared by \
         every pool of the run and by other work on the machine). The load is {} keep-alive connections \
         (reqwest), one task each, sending the next request as soon as the previous one is \
         answered; only the expected status counts, and its latencies go into an HDR histogram. \
         For each row ours is measured first, then the bare program, with the same settings{}.",
        build_profile(),
        a.connections,
        if r.kind == Kind::Writes {
            " (for the partner operation the bare program first: ours' pushes leave work to the worker)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "- Data: {} employees created in ours through `POST /v1/employees` as `admin` before \
         measuring ({:.0} s, I-9s included), each with an SSN, most of the record's fields and \
         `createI9: \"yes\"` (the worker creates each I-9); four in five in West Region (Portland \
         Warehouse or Seattle Office), the fifth in Boston Office. Last names from 200 names \
         (about 40 a West Region user sees each). The bare program's wide table holds a copy of \
         ours' employees. `west.auditor` is the bench's own user: `west.hr`'s groups, and a \
         role with permission 12 (full SSNs) added to the example organization.",
        r.seeded_employees,
        r.seed_took.as_secs_f64()
    );
    match r.kind {
        Kind::Writes => {
            let _ = writeln!(
                s,
                "- Requests: `POST` bodies `{{\"firstName\", \"lastName\", \"locationId\": \
                 <Portland Warehouse>, \"startDate\", \"profileId\": <unique>}}` (no SSN; for \
                 the time to I-9 also `\"createI9\": \"yes\"`); `PATCH` of a random seeded \
                 employee, `{{\"jobTitle\", \"cellNumber\"}}`; partner pushes of a new \
                 candidate each (`integrationCandidateId`, `onboardingType: on-site`, names, \
                 email, `startDate`, `locationId`) with an `Idempotency-Key`.\n"
            );
        }
        Kind::Reads => {
            let _ = writeln!(
                s,
                "- Requests: `GET` of a random seeded employee that `west.hr` sees; lists of a \
                 random one of the 200 last names (exact, case-insensitive), the first page \
                 (50 items at most).\n"
            );
        }
    }
    let _ = writeln!(s, "### Results\n");
    s.push_str(&tables(r));
    for row in &r.rows {
        for (side, e) in [("ours", &row.ours), ("bare", &row.bare)] {
            if let Some(e) = &e.first_error {
                let _ = writeln!(
                    s,
                    "\nFirst error of {side} ({}): `{}`",
                    row.kind.title(),
                    e.replace('`', "'")
                );
            }
        }
    }
    if let Some((ours, bare)) = &r.i9 {
        for (side, e) in [("ours", &ours.first_error), ("bare", &bare.first_error)] {
            if let Some(e) = e {
                let _ = writeln!(
                    s,
                    "\nFirst failure of {side} (time to I-9): `{}`",
                    e.replace('`', "'")
                );
            }
        }
    }
    let _ = writeln!(s, "\n### What each side does per request\n");
    s.push_str(match r.kind {
        Kind::Writes => WRITES_SIDES,
        Kind::Reads => READS_SIDES,
    });
    let _ = writeln!(s);
    let _ = writeln!(s, "\n### Method notes\n");
    let _ = writeln!(
        s,
        "- Throughput: each program gets {} s of warm-up load (not counted), then {} s \
         measured; requests/s = counted responses / measured wall time (until the last \
         in-flight request ended). Other answers and transport errors are counted apart and \
         are not in the latencies.",
        a.warmup, a.duration
    );
    if r.kind == Kind::Writes {
        let _ = writeln!(
            s,
            "- Time to I-9: {} samples after {} unmeasured ones, {} in flight; each polls \
             `SELECT EXISTS (SELECT 1 FROM i9s WHERE employee_id = $1)` every 2 ms on a pool of \
             the bench's own, for at most 30 s.",
            a.i9_samples, a.i9_concurrency, a.i9_concurrency
        );
    }
    let _ = writeln!(
        s,
        "- CPU figures come from `/proc` over the measured window: the `i9-bench` process \
         (program under test, and the load generator, which is the same for both), the \
         `postgres` processes, RabbitMQ's `beam.smp`, and the whole machine."
    );
    let _ = writeln!(
        s,
        "- The statements ours sends per request can be counted with `{} --log-statements` \
         (one request of each kind, between marker statements, with Postgres logging every \
         statement of ours' database; read the server's log).",
        match r.kind {
            Kind::Writes => "scripts/bench.sh writes",
            Kind::Reads => "scripts/bench.sh reads",
        }
    );
    let _ = writeln!(s, "<!-- /bench:{name} -->");
    s
}

/// Replace the section `name` in the file at `path` (between its markers
/// `<!-- bench:<name> -->` and `<!-- /bench:<name> -->`),
/// keeping the rest; a section not there yet goes before the inspection
/// export's section, or at the end.
pub fn write_section(path: &Path, name: &str, section: &str) -> anyhow::Result<()> {
    let old = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "# Benchmarks\n\n".to_owned(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let text = replace_section(&old, name, section);
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn replace_section(old: &str, name: &str, section: &str) -> String {
    let begin = format!("<!-- bench:{name} -->");
    let end = format!("<!-- /bench:{name} -->");
    let section = section.trim_end();
    if let (Some(b), Some(e)) = (old.find(&begin), old.find(&end)) {
        if b < e {
            let after = e + end.len();
            return format!("{}{section}{}", &old[..b], &old[after..]);
        }
    }
    match old.find("\n## Inspection export") {
        Some(i) => format!("{}\n{section}\n{}", &old[..=i], &old[i + 1..]),
        None => format!("{}\n\n{section}\n", old.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::replace_section;

    #[test]
    fn a_section_replaces_only_its_own_markers() {
        let old = "# B\n\n<!-- bench:writes -->\nold w\n<!-- /bench:writes -->\n\n\
                   <!-- bench:reads -->\nold r\n<!-- /bench:reads -->\n\n## Inspection export\nkept\n";
        let new = replace_section(
            old,
            "reads",
            "<!-- bench:reads -->\nnew r\n<!-- /bench:reads -->\n",
        );
        assert!(new.contains("old w"));
        assert!(new.contains("new r"));
        assert!(!new.contains("old r"));
        assert!(new.ends_with("## Inspection export\nkept\n"));
    }

    #[test]
    fn a_missing_section_goes_before_the_inspection_export() {
        let old = "# B\n\nintro\n\n## Inspection export\nkept\n";
        let new = replace_section(
            old,
            "reads",
            "<!-- bench:reads -->\nnew r\n<!-- /bench:reads -->",
        );
        let r = new.find("new r").unwrap();
        let i = new.find("## Inspection export").unwrap();
        assert!(r < i);
        assert!(new.contains("intro"));
    }
}
