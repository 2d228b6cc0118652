//! The plans of the lists, as the API runs them: Postgres's `auto_explain`
//! is loaded into every new session of ours' database and logs each
//! statement's plan with `ANALYZE` and `BUFFERS` (JSON); one request of each
//! list and filter is sent alone, and the plans logged by ours' database
//! while it ran are read back from the server's log (`pg_read_binary_file`)
//! and summed up: which indexes, which sequential scans of a large table,
//! how long.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde_json::Value;
use sqlx::PgPool;

use crate::ours::Ours;

/// The tables the loader grows: a sequential scan of one is linear in it.
const LARGE: &[&str] = &[
    "employees",
    "employment_periods",
    "i9s",
    "i9_requests",
    "audit_log",
    "everify_cases",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// `west.hr`: limited to West Region's groups (no permission 12).
    Hr,
    /// `west.auditor`: as `west.hr`, with permission 12 (the SSN search).
    Auditor,
    /// `admin`: every group.
    Admin,
    /// `ats.bot` through the partner client.
    Partner,
}

impl Who {
    pub fn name(self) -> &'static str {
        match self {
            Who::Hr => "west.hr",
            Who::Auditor => "west.auditor",
            Who::Admin => "admin",
            Who::Partner => "ats.bot",
        }
    }

    fn token(self, ours: &Ours) -> &str {
        match self {
            Who::Hr => &ours.tokens.hr,
            Who::Auditor => &ours.tokens.auditor,
            Who::Admin => &ours.tokens.admin,
            Who::Partner => &ours.tokens.partner,
        }
    }
}

/// One request of a list with one filter.
pub struct Probe {
    pub list: String,
    pub filter: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub callers: Vec<Who>,
}

/// One statement's plan.
pub struct Plan {
    /// `count`, `page` or `other`.
    pub role: &'static str,
    pub query: String,
    pub duration_ms: f64,
    /// The plan, one line per node.
    pub lines: Vec<String>,
    /// Sequential scans of a large table: (table, rows read).
    pub seq_scans: Vec<(String, f64)>,
    /// The indexes used.
    pub indexes: Vec<String>,
    /// Rows an index scan read and its filter threw away (the largest).
    pub filtered: f64,
    pub shared_hit: i64,
    pub shared_read: i64,
}

impl Plan {
    /// How the plan reaches the rows, in a few words.
    pub fn access(&self) -> String {
        let mut parts = Vec::new();
        for (t, rows) in &self.seq_scans {
            parts.push(format!("**Seq Scan {t}** ({} rows)", thousands(*rows)));
        }
        if !self.indexes.is_empty() {
            parts.push(self.indexes.join(", "));
        }
        if self.filtered >= 10_000.0 {
            parts.push(format!(
                "**{} rows read and filtered out**",
                thousands(self.filtered)
            ));
        }
        if parts.is_empty() {
            "small tables only".to_owned()
        } else {
            parts.join("; ")
        }
    }

    pub fn served_by_index(&self) -> bool {
        self.seq_scans.is_empty() && self.filtered < 10_000.0
    }
}

pub fn thousands(v: f64) -> String {
    let n = v.round() as i64;
    let s = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

pub struct Explained {
    pub probe_list: String,
    pub filter: String,
    pub caller: Who,
    pub status: u16,
    /// The request's time as the bench saw it (plans logged: slower).
    pub took_ms: f64,
    pub plans: Vec<Plan>,
}

/// The server's log file: the collector's, or `fallback` (Debian's
/// `/var/log/postgresql/postgresql-<major>-main.log` when not given).
async fn log_file(pool: &PgPool, fallback: Option<&str>) -> anyhow::Result<String> {
    let current: Option<String> = sqlx::query_scalar("SELECT pg_current_logfile()")
        .fetch_one(pool)
        .await?;
    let path = match (current, fallback) {
        (Some(p), _) => {
            if p.starts_with('/') {
                p
            } else {
                let dir: String = sqlx::query_scalar("SHOW data_directory")
                    .fetch_one(pool)
                    .await?;
                format!("{dir}/{p}")
            }
        }
        (None, Some(f)) => f.to_owned(),
        (None, None) => {
            let num: String = sqlx::query_scalar("SHOW server_version_num")
                .fetch_one(pool)
                .await?;
            let major = num.parse::<u32>().unwrap_or(150_000) / 10_000;
            format!("/var/log/postgresql/postgresql-{major}-main.log")
        }
    };
    log_size(pool, &path)
        .await
        .with_context(|| format!("reading the size of the server's log {path} (--postgres-log)"))?;
    Ok(path)
}

async fn log_size(pool: &PgPool, path: &str) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar("SELECT size FROM pg_stat_file($1)")
        .bind(path)
        .fetch_one(pool)
        .await?)
}

async fn read_log(pool: &PgPool, path: &str, from: i64) -> anyhow::Result<(String, i64)> {
    let size = log_size(pool, path).await?;
    if size <= from {
        return Ok((String::new(), size.max(from)));
    }
    let bytes: Vec<u8> = sqlx::query_scalar("SELECT pg_read_binary_file($1, $2, $3)")
        .bind(path)
        .bind(from)
        .bind(size - from)
        .fetch_one(pool)
        .await?;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), size))
}

/// Load `auto_explain` into every new session of ours' database, and end
/// the sessions open (the pools reconnect).
async fn enable(pool: &PgPool, database: &str) -> anyhow::Result<()> {
    for (name, value) in [
        ("session_preload_libraries", "auto_explain"),
        ("auto_explain.log_min_duration", "0"),
        ("auto_explain.log_analyze", "on"),
        ("auto_explain.log_buffers", "on"),
        ("auto_explain.log_timing", "on"),
        ("auto_explain.log_format", "json"),
    ] {
        // Names and values are the constants above; the database's name is ours.
        sqlx::raw_sql(&format!(
            r#"ALTER DATABASE "{database}" SET {name} = '{value}'"#
        ))
        .execute(pool)
        .await
        .with_context(|| format!("ALTER DATABASE ... SET {name}"))?;
    }
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = $1 AND pid <> pg_backend_pid()",
    )
    .bind(database)
    .execute(pool)
    .await?;
    Ok(())
}

/// The plans of every probe, each request sent alone.
pub async fn explain(
    ours: &Ours,
    probes: &[Probe],
    log_fallback: Option<&str>,
) -> anyhow::Result<Vec<Explained>> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&ours.database_url)
        .await?;
    let database: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&pool)
        .await?;
    let path = log_file(&pool, log_fallback).await?;
    enable(&pool, &database).await?;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()?;
    let mut out = Vec::new();
    for probe in probes {
        let url = reqwest::Url::parse_with_params(
            &format!("{}{}", ours.base_url, probe.path),
            &probe.query,
        )
        .context("explain: a probe's URL")?;
        for &who in &probe.callers {
            let send = || client.get(url.clone()).bearer_auth(who.token(ours)).send();
            // Once unlogged-for (the pools reconnect, caches warm), then the one read.
            let warm = send().await.context("explain: warming request")?;
            warm.bytes().await?;
            let from = log_size(&pool, &path).await?;
            let t = Instant::now();
            let response = send().await.context("explain: request")?;
            let status = response.status().as_u16();
            response.bytes().await?;
            let took_ms = t.elapsed().as_secs_f64() * 1000.0;
            // The plans are logged when each statement ends, before the
            // answer; read until the list's statements are there (bounded).
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut text = String::new();
            let mut at = from;
            let plans = loop {
                let (more, size) = read_log(&pool, &path, at).await?;
                text.push_str(&more);
                at = size;
                let plans = parse(&text, &database)?;
                let complete = status != 200
                    || plans.iter().any(|p| p.role == "page")
                    || !fetches_page(&probe.path);
                if complete || Instant::now() > deadline {
                    break plans;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            eprintln!(
                "explain: {} {} as {}: HTTP {status}, {} plans",
                probe.list,
                probe.filter,
                who.name(),
                plans.len()
            );
            out.push(Explained {
                probe_list: probe.list.clone(),
                filter: probe.filter.clone(),
                caller: who,
                status,
                took_ms,
                plans,
            });
        }
    }
    pool.close().await;
    Ok(out)
}

/// The lists built by api/src/list.rs (`fetch_page`: a count and a page).
fn fetches_page(path: &str) -> bool {
    !(path.contains("/legal-holds") || path.contains("/history") || path.contains("/periods"))
}

/// The plans of `database` in a piece of the server's log: each entry is a
/// line `... user@database LOG:  duration: X ms  plan:` and its
/// continuation lines (a tab first), the plan as JSON.
fn parse(log: &str, database: &str) -> anyhow::Result<Vec<Plan>> {
    let marker = format!("@{database} LOG:  duration: ");
    let mut plans = Vec::new();
    let mut lines = log.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(i) = line.find(&marker) else {
            continue;
        };
        let rest = &line[i + marker.len()..];
        let Some((ms, tail)) = rest.split_once(" ms") else {
            continue;
        };
        if !tail.trim_end().ends_with("plan:") {
            continue;
        }
        let duration_ms: f64 = ms.trim().parse().unwrap_or(f64::NAN);
        let mut json = String::new();
        while let Some(next) = lines.peek() {
            match next.strip_prefix('\t') {
                Some(body) => {
                    json.push_str(body);
                    json.push('\n');
                    lines.next();
                }
                None => break,
            }
        }
        let Ok(value) = serde_json::from_str::<Value>(&json) else {
            // An entry cut at the end of the piece read: read again later.
            continue;
        };
        if let Some(plan) = summarize(&value, duration_ms) {
            plans.push(plan);
        }
    }
    Ok(plans)
}

/// A plan worth reporting: the statements of the lists (and of the lists
/// that read without `fetch_page`: a `SELECT` of a large table), not the
/// outbox relay's or the worker's.
fn summarize(value: &Value, duration_ms: f64) -> Option<Plan> {
    let query = value["Query Text"].as_str()?.trim().to_owned();
    let upper = query.to_ascii_uppercase();
    if !upper.starts_with("SELECT") && !upper.starts_with("WITH") {
        return None;
    }
    for background in ["job_outbox", "processed_jobs", "pg_notify", "reminders"] {
        if query.contains(background) {
            return None;
        }
    }
    let role = if upper.starts_with("SELECT COUNT(*)") {
        "count"
    } else if upper.contains(" LIMIT $") && upper.contains(" OFFSET $") {
        "page"
    } else {
        "other"
    };
    let mut plan = Plan {
        role,
        query,
        duration_ms,
        lines: Vec::new(),
        seq_scans: Vec::new(),
        indexes: Vec::new(),
        filtered: 0.0,
        shared_hit: value["Plan"]["Shared Hit Blocks"].as_i64().unwrap_or(0),
        shared_read: value["Plan"]["Shared Read Blocks"].as_i64().unwrap_or(0),
    };
    walk(&value["Plan"], 0, &mut plan);
    if role == "other"
        && plan.seq_scans.is_empty()
        && !LARGE.iter().any(|t| plan.query.contains(&format!(" {t} ")))
    {
        return None;
    }
    Some(plan)
}

fn walk(node: &Value, depth: usize, plan: &mut Plan) {
    let kind = node["Node Type"].as_str().unwrap_or("?");
    let relation = node["Relation Name"].as_str();
    let index = node["Index Name"].as_str();
    let loops = node["Actual Loops"].as_f64().unwrap_or(1.0);
    let rows = node["Actual Rows"].as_f64().unwrap_or(0.0) * loops;
    let removed = (node["Rows Removed by Filter"].as_f64().unwrap_or(0.0)
        + node["Rows Removed by Index Recheck"]
            .as_f64()
            .unwrap_or(0.0))
        * loops;
    let time = node["Actual Total Time"].as_f64().unwrap_or(0.0);
    let mut line = format!("{}{kind}", "  ".repeat(depth));
    if let Some(i) = index {
        line.push_str(&format!(" using {i}"));
        if !plan.indexes.iter().any(|x| x == i) {
            plan.indexes.push(i.to_owned());
        }
    }
    if let Some(r) = relation {
        line.push_str(&format!(" on {r}"));
        if let Some(a) = node["Alias"].as_str().filter(|a| *a != r) {
            line.push_str(&format!(" {a}"));
        }
    }
    line.push_str(&format!(
        " (rows={}, loops={}",
        thousands(rows / loops.max(1.0)),
        thousands(loops)
    ));
    if removed > 0.0 {
        line.push_str(&format!(", removed by filter={}", thousands(removed)));
    }
    line.push_str(&format!(", {time:.3} ms)"));
    if let Some(f) = node["Filter"].as_str().or(node["Index Cond"].as_str()) {
        let f: String = f.chars().take(160).collect();
        line.push_str(&format!(" [{f}]"));
    }
    plan.lines.push(line);
    if let Some(r) = relation {
        if LARGE.contains(&r) {
            if kind == "Seq Scan" {
                plan.seq_scans.push((r.to_owned(), rows + removed));
            } else if removed > plan.filtered {
                plan.filtered = removed;
            }
        }
    }
    if let Some(children) = node["Plans"].as_array() {
        for c in children {
            walk(c, depth + 1, plan);
        }
    }
}

/// The requests: every list of the API and every filter it accepts
/// (docs/api.md, "Filters"), with values found in the grown database.
pub async fn probes(pool: &PgPool) -> anyhow::Result<Vec<Probe>> {
    let one = |sql: &'static str| async move {
        sqlx::query_scalar::<_, Option<String>>(sql)
            .fetch_optional(pool)
            .await
            .with_context(|| format!("explain value: {sql}"))
            .map(|v| v.flatten().unwrap_or_else(|| "none".to_owned()))
    };
    let west = one("SELECT id::TEXT FROM groups WHERE name = 'West Region'").await?;
    let portland = one("SELECT id::TEXT FROM groups WHERE name = 'Portland Warehouse'").await?;
    // A grown employee West Region sees, from the middle of the table.
    let e: Vec<Option<String>> = sqlx::query_scalar(
        "SELECT ARRAY[e.id::TEXT, e.first_name, e.last_name, e.email_address, e.job_title,
                       e.middle_name, e.profile_id, e.custom1, e.custom2, e.date_of_birth::TEXT,
                       e.language_preference::TEXT, e.legal_entity_id::TEXT, e.location_id::TEXT,
                       i.id::TEXT, i.start_date::TEXT, i.date_due::TEXT]
         FROM employees e JOIN i9s i ON i.employee_id = e.id
         WHERE e.profile_id LIKE 'grow-%' AND e.location_id = $1::BIGINT
           AND e.id > (SELECT (min(id) + max(id)) / 2 FROM employees)
         ORDER BY e.id LIMIT 1",
    )
    .bind(portland.parse::<i64>().unwrap_or(0))
    .fetch_optional(pool)
    .await
    .context("explain: a grown employee")?
    .unwrap_or_default();
    if e.len() != 16 {
        bail!("explain: no grown employee in Portland Warehouse");
    }
    let v = |i: usize| e[i].clone().unwrap_or_else(|| "none".to_owned());
    let common_name = crate::seed::last_names()
        .first()
        .cloned()
        .unwrap_or_default();
    let expiration =
        one("SELECT i9_expiration::TEXT FROM i9s WHERE i9_expiration IS NOT NULL ORDER BY id DESC LIMIT 1")
            .await?;
    let candidate = one("SELECT integration_candidate_id FROM employees WHERE integration_candidate_id IS NOT NULL LIMIT 1").await?;
    let case: Vec<Option<String>> = sqlx::query_scalar(
        "SELECT ARRAY[c.case_number, c.i9_id::TEXT, c.employee_id::TEXT, c.legal_entity_id::TEXT]
         FROM everify_cases c JOIN employees e ON e.id = c.employee_id
         WHERE e.location_id = $1::BIGINT ORDER BY c.id DESC LIMIT 1",
    )
    .bind(portland.parse::<i64>().unwrap_or(0))
    .fetch_optional(pool)
    .await?
    .unwrap_or_default();
    let c = |i: usize| {
        case.get(i)
            .cloned()
            .flatten()
            .unwrap_or_else(|| "none".to_owned())
    };
    let user: Vec<Option<String>> = sqlx::query_scalar(
        "SELECT ARRAY[email_address, first_name, last_name, login, coalesce(middle_name, 'Lee'), title]
         FROM users WHERE login = 'west.hr'",
    )
    .fetch_optional(pool)
    .await?
    .unwrap_or_default();
    let u = |i: usize| {
        user.get(i)
            .cloned()
            .flatten()
            .unwrap_or_else(|| "none".to_owned())
    };
    let entity: Vec<Option<String>> = sqlx::query_scalar(
        "SELECT ARRAY[id::TEXT, entity_name, coalesce(everify_id, 'none'), coalesce(nullif(ein, ''), 'none')]
         FROM legal_entities ORDER BY id LIMIT 1",
    )
    .fetch_optional(pool)
    .await?
    .unwrap_or_default();
    let le = |i: usize| {
        entity
            .get(i)
            .cloned()
            .flatten()
            .unwrap_or_else(|| "none".to_owned())
    };
    let role = one("SELECT name FROM roles ORDER BY id LIMIT 1").await?;
    let today = chrono::Utc::now().date_naive();
    let day = |d: i64| (today + chrono::Duration::days(d)).to_string();

    let both = vec![Who::Hr, Who::Admin];
    let mut out = Vec::new();
    let mut add = |list: &str, filter: &str, path: &str, query: &[(&str, String)], who: &[Who]| {
        out.push(Probe {
            list: list.to_owned(),
            filter: filter.to_owned(),
            path: path.to_owned(),
            query: query
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            callers: who.to_vec(),
        });
    };
    let emp = "GET /v1/employees";
    add(emp, "(none)", "/v1/employees", &[], &both);
    for (name, value) in [
        ("custom1", v(7)),
        ("custom2", v(8)),
        ("custom3", "none".to_owned()),
        ("custom4", "none".to_owned()),
        ("custom5", "none".to_owned()),
        ("custom6", "none".to_owned()),
        ("custom7", "none".to_owned()),
        ("custom8", "none".to_owned()),
        ("emailAddress", v(3)),
        ("firstName", v(1)),
        ("integrationCandidateId", candidate),
        ("jobTitle", v(4)),
        ("lastName", v(2)),
        ("middleName", v(5)),
        ("otherName", "none".to_owned()),
        ("profileId", v(6)),
        ("dateOfBirth", v(9)),
        ("languagePreference", v(10)),
        ("legalEntity", le(0)),
        ("locationId", v(12)),
        ("locationIdWithin", west.clone()),
    ] {
        add(
            emp,
            &format!("{name}={value}"),
            "/v1/employees",
            &[(name, value.clone())],
            &both,
        );
    }
    add(
        emp,
        &format!("lastName={common_name} (the most common name)"),
        "/v1/employees",
        &[("lastName", common_name.clone())],
        &both,
    );
    // A seeded employee's number (seed.rs: seed employee 0, Portland Warehouse).
    add(
        emp,
        "socialSecurityNumber=(a seeded one)",
        "/v1/employees",
        &[("socialSecurityNumber", "201-37-0001".to_owned())],
        &[Who::Auditor, Who::Admin],
    );

    let i9 = "GET /v1/i9s";
    add(i9, "(none)", "/v1/i9s", &[], &both);
    for (name, value) in [
        ("firstName", v(1)),
        ("lastName", v(2)),
        ("startDate", v(14)),
        ("i9Expiration", expiration),
        ("employeeId", v(0)),
        ("locationId", v(12)),
        ("locationIdWithin", west.clone()),
        ("i9Status", "Signed Sec 1".to_owned()),
        ("dateDue", v(15)),
        ("dateDueFrom", day(-7)),
        ("dateDueTo", day(-3000)),
        ("startDateFrom", day(-30)),
        ("startDateTo", day(-3000)),
        ("i9ExpirationFrom", day(0)),
        ("i9ExpirationTo", day(90)),
    ] {
        add(
            i9,
            &format!("{name}={value}"),
            "/v1/i9s",
            &[(name, value.clone())],
            &both,
        );
    }
    add(
        i9,
        &format!("lastName={common_name} (the most common name)"),
        "/v1/i9s",
        &[("lastName", common_name.clone())],
        &both,
    );
    add(
        i9,
        "dateDueFrom&dateDueTo (a week)",
        "/v1/i9s",
        &[("dateDueFrom", day(-7)), ("dateDueTo", day(0))],
        &both,
    );
    for q in ["section2-due", "overdue"] {
        add(
            i9,
            &format!("queue={q}"),
            "/v1/i9s",
            &[("queue", q.to_owned())],
            &both,
        );
    }
    for q in ["reverification", "receipt", "expiring"] {
        add(
            i9,
            &format!("queue={q}&withinDays=90"),
            "/v1/i9s",
            &[("queue", q.to_owned()), ("withinDays", "90".to_owned())],
            &both,
        );
    }
    add(
        i9,
        "locationIdWithin&queue=overdue",
        "/v1/i9s",
        &[
            ("locationIdWithin", west.clone()),
            ("queue", "overdue".to_owned()),
        ],
        &both,
    );

    let ev = "GET /v1/everify-cases";
    add(ev, "(none)", "/v1/everify-cases", &[], &both);
    for (name, value) in [
        ("status", "Tentative Nonconfirmation".to_owned()),
        ("unresolved", "true".to_owned()),
        ("overdue", "true".to_owned()),
        ("legalEntity", c(3)),
        ("employeeId", c(2)),
        ("i9Id", c(1)),
        ("caseNumber", c(0)),
    ] {
        add(
            ev,
            &format!("{name}={value}"),
            "/v1/everify-cases",
            &[(name, value.clone())],
            &both,
        );
    }

    let users = "GET /v1/users";
    add(users, "(none)", "/v1/users", &[], &both);
    for (i, name) in [
        "emailAddress",
        "firstName",
        "lastName",
        "login",
        "middleName",
        "title",
    ]
    .iter()
    .enumerate()
    {
        add(
            users,
            &format!("{name}={}", u(i)),
            "/v1/users",
            &[(*name, u(i))],
            &both,
        );
    }
    let groups = "GET /v1/groups";
    add(groups, "(none)", "/v1/groups", &[], &both);
    add(
        groups,
        "name=Portland Warehouse",
        "/v1/groups",
        &[("name", "Portland Warehouse".to_owned())],
        &both,
    );
    add(
        groups,
        "parentId=(West Region)",
        "/v1/groups",
        &[("parentId", west.clone())],
        &both,
    );
    add(
        groups,
        "managed=true",
        "/v1/groups",
        &[("managed", "true".to_owned())],
        &both,
    );
    add(
        "GET /v1/groups/{id}/users",
        "(none)",
        &format!("/v1/groups/{west}/users"),
        &[],
        &both,
    );
    let eins = "GET /v1/eins";
    add(eins, "(none)", "/v1/eins", &[], &both);
    for (i, name) in [(1, "entityName"), (2, "everifyId"), (3, "ein")] {
        add(
            eins,
            &format!("{name}={}", le(i)),
            "/v1/eins",
            &[(name, le(i))],
            &both,
        );
    }
    add("GET /v1/roles", "(none)", "/v1/roles", &[], &both);
    add(
        "GET /v1/roles",
        &format!("name={role}"),
        "/v1/roles",
        &[("name", role.clone())],
        &both,
    );
    add(
        "GET /v1/partners/locations",
        "(none)",
        "/v1/partners/locations",
        &[],
        &[Who::Partner],
    );
    add(
        "GET /v1/partners/locations",
        "name=Portland Warehouse",
        "/v1/partners/locations",
        &[("name", "Portland Warehouse".to_owned())],
        &[Who::Partner],
    );
    add(
        "GET /v1/legal-holds",
        "(none)",
        "/v1/legal-holds",
        &[],
        &[Who::Admin],
    );
    let id = v(0);
    let i9_id = v(13);
    for (list, path) in [
        (
            "GET /v1/employees/{id}/periods",
            format!("/v1/employees/{id}/periods"),
        ),
        (
            "GET /v1/i9s/{id}/supplement-b",
            format!("/v1/i9s/{i9_id}/supplement-b"),
        ),
    ] {
        add(list, "(none)", &path, &[], &both);
    }
    // The histories need permission 11 (west.hr lacks it).
    for (list, path) in [
        (
            "GET /v1/employees/{id}/history",
            format!("/v1/employees/{id}/history"),
        ),
        (
            "GET /v1/i9s/{id}/history",
            format!("/v1/i9s/{i9_id}/history"),
        ),
    ] {
        add(list, "(none)", &path, &[], &[Who::Admin]);
    }
    add(
        "GET /v1/calendar/closed-days",
        "(none)",
        "/v1/calendar/closed-days",
        &[],
        &[Who::Admin],
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logged_plan_is_read_and_summed_up() {
        let log = "2026-12-01 21:00:00.000 UTC [1] postgres@db LOG:  duration: 12.5 ms  plan:\n\
                   \t{\n\t  \"Query Text\": \"SELECT count(*) FROM employees e WHERE e.purged_at IS NULL\",\n\
                   \t  \"Plan\": {\"Node Type\": \"Aggregate\", \"Actual Rows\": 1, \"Actual Loops\": 1,\n\
                   \t    \"Plans\": [{\"Node Type\": \"Seq Scan\", \"Relation Name\": \"employees\", \"Alias\": \"e\",\n\
                   \t      \"Actual Rows\": 1000, \"Actual Loops\": 1, \"Rows Removed by Filter\": 5}]}\n\t}\n\
                   2026-12-01 21:00:00.001 UTC [2] postgres@other LOG:  duration: 1 ms  plan:\n\t{}\n";
        let plans = parse(log, "db").unwrap();
        assert_eq!(plans.len(), 1);
        let p = &plans[0];
        assert_eq!(p.role, "count");
        assert!((p.duration_ms - 12.5).abs() < 1e-9);
        assert_eq!(p.seq_scans, vec![("employees".to_owned(), 1005.0)]);
        assert!(!p.served_by_index());
        assert_eq!(thousands(1_234_567.0), "1,234,567");
    }
}
