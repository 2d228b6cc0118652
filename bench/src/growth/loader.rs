//! The loader of `i9-bench growth`: grows ours' database to `--rows` more
//! employees, each with what `POST /v1/employees` with `createI9: "yes"`
//! leaves (its period of employment, its I-9 request with a Section 1 link
//! token, its I-9, the audit entries), and some E-Verify cases and legal
//! holds; and the bare program's tables to as many rows. Set-based SQL
//! (`INSERT ... SELECT ... FROM generate_series`), one statement per table,
//! every value made from the row's number `n` at run time.
//!
//! The rows are copies of the seeded employees (employee `n` copies seeded
//! employee `n mod seeded`: its group, legal entity, encrypted SSN, address,
//! custom fields, and its I-9's form version and onboarding), with their own
//! names, `profileId`, SSN hash and last four digits, birth date, dates of
//! hire and I-9 status. So the groups share as in the seed (four in five in
//! West Region). The names follow a skewed distribution, as a large
//! employer's do: 21% of the rows carry one of the seed's 200 last names
//! (its first name most often: about 8,400 rows at 1,000,000, its 200th
//! about 640), the others one of 150,000 made-up names (about 5 rows each);
//! a fifth carry one of the seed's 20 first names, the others one of 900.
//!
//! The statements run with `session_replication_role = replica` (no
//! triggers, no foreign key checks: the rows are consistent by
//! construction), so the loader sets what the triggers would: the I-9s'
//! `retention_date` (from the period's dates of hire and termination). The
//! SSN uniqueness trigger is skipped; the unique index on `ssn_hash` still
//! holds (the hashes are SHA-256 of distinct texts).

use std::time::{Duration, Instant};

use anyhow::Context as _;
use sqlx::{Connection, PgConnection};

use crate::seed;

/// A pseudo-random 32-bit number of row `n` (Knuth's multiplicative hash).
const ROWS: &str =
    "SELECT n, (n * 2654435761) % 4294967296 AS h FROM generate_series(1, $1::BIGINT) n";

/// The date of hire of row `n`: the last 30 days for the open I-9s (status
/// below), else 30 days to ten years ago.
const START: &str = "(CASE WHEN g.n % 100 < 5 THEN CURRENT_DATE - (g.h % 30)::INT \
                      ELSE CURRENT_DATE - (30 + g.h % 3620)::INT END)";
/// One in ten completed employees has left.
const TERMINATED: &str = "(CASE WHEN g.n % 10 = 7 THEN \
     LEAST(CURRENT_DATE - 1, CURRENT_DATE - (30 + g.h % 3620)::INT + 30 + (g.h % 1500)::INT) END)";
/// The I-9's status: mostly done, 5% open (2% Section 1 to sign, 2% Section
/// 2 to do, 1% Section 2 signed), 1% parked.
const STATUS: &str = "(CASE WHEN g.n % 100 < 2 THEN 'Section 1 Incomplete' \
     WHEN g.n % 100 < 4 THEN 'Signed Sec 1' WHEN g.n % 100 < 5 THEN 'Signed Sec 2' \
     WHEN g.n % 100 < 6 THEN 'Parked' WHEN g.n % 100 < 20 THEN 'Approved' ELSE 'Completed' END)";

/// Syllables of the made-up names.
const SYL_A: &str = "(ARRAY['al','bar','cor','dal','el','fen','gor','hal','is','jor','kel','lan','mar','nor','ol','pel','quin','ros','sal','tor','ul','val','wen','yar','zel','ash','bel','cal','dor','est','fal','gil','har','ing','jas','kin','lor','mor','nel','or','per','ral','sten','tam','ver','wil','xan','yor','zan','ard'])";
const SYL_B: &str = "(ARRAY['a','e','i','o','u','an','en','in','on','un','ar','er','ir','or','ur','al','el','il','ol','ul','as','es','is','os','us','ad','ed','id','od','ud','am','em','im','om','um','ab','eb','ib','ob','ub','ag','eg','ig','og','ug','av','ev','iv','ov','uv'])";
const SYL_C: &str = "(ARRAY['son','ton','ley','man','ford','field','wood','by','well','ridge','croft','dale','hurst','more','stead','wick','worth','brook','gate','holm','s','ez','ski','sen','berg','stein','ov','ini','elli','escu','ard','ault','eau','ier','ova','ic','ek','as','is','os','en','er','el','an','ar','on','in','ett','ott','ins','ers','ings','land','mont','ville','burn','combe','ham','ing','cott'])";

/// What the load took, per step.
pub struct Loaded {
    pub rows: u64,
    pub steps: Vec<(String, Duration)>,
    pub total: Duration,
}

impl Loaded {
    fn step(&mut self, name: &str, t: Instant) {
        let took = t.elapsed();
        eprintln!("  {name}: {:.1} s", took.as_secs_f64());
        self.steps.push((name.to_owned(), took));
    }
}

async fn max_id(conn: &mut PgConnection, table: &str) -> anyhow::Result<i64> {
    sqlx::query_scalar(&format!("SELECT coalesce(max(id), 0)::BIGINT FROM {table}"))
        .fetch_one(&mut *conn)
        .await
        .with_context(|| format!("max(id) of {table}"))
}

/// Grow ours' database (at `url`) by `rows` employees with their records.
pub async fn grow_ours(
    url: &str,
    rows: u64,
    seeded_at: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Loaded> {
    let t0 = Instant::now();
    let mut out = Loaded {
        rows,
        steps: Vec::new(),
        total: Duration::ZERO,
    };
    let mut conn = PgConnection::connect(url)
        .await
        .context("connecting the loader")?;
    let n = i64::try_from(rows)?;
    sqlx::raw_sql(
        "SET session_replication_role = replica; SET synchronous_commit = off;
         SET maintenance_work_mem = '256MB'; SET work_mem = '64MB';",
    )
    .execute(&mut conn)
    .await
    .context("loader session settings (superuser needed for session_replication_role)")?;

    // The templates: the seeded employees and their I-9s, numbered from 0.
    let t = Instant::now();
    sqlx::raw_sql(
        "CREATE TEMP TABLE grow_tmpl AS
         SELECT (row_number() OVER (ORDER BY e.id) - 1)::BIGINT AS k, e.id AS employee_id,
                i.id AS i9_id, r.id AS request_id
         FROM employees e
         JOIN LATERAL (SELECT id FROM i9s WHERE employee_id = e.id ORDER BY id DESC LIMIT 1) i ON TRUE
         LEFT JOIN i9_requests r ON r.i9_id = i.id
         WHERE e.profile_id LIKE 'seed-%';
         CREATE UNIQUE INDEX ON grow_tmpl (k);
         ANALYZE grow_tmpl;",
    )
    .execute(&mut conn)
    .await
    .context("the loader's templates")?;
    // The audit entries the seed wrote (not those of the measured requests).
    sqlx::raw_sql(
        "CREATE TEMP TABLE grow_audit (k BIGINT, user_id BIGINT, client_id BIGINT, action TEXT,
                                       resource_type TEXT, detail JSONB)",
    )
    .execute(&mut conn)
    .await?;
    sqlx::query(
        "INSERT INTO grow_audit
         SELECT t.k, a.user_id, a.client_id, a.action, a.resource_type, a.detail
         FROM grow_tmpl t JOIN audit_log a
           ON a.resource_type = 'employee' AND a.resource_id = t.employee_id::TEXT
         WHERE a.occurred_at <= $1
         UNION ALL
         SELECT t.k, a.user_id, a.client_id, a.action, a.resource_type, a.detail
         FROM grow_tmpl t JOIN audit_log a
           ON a.resource_type = 'i9' AND a.resource_id = t.i9_id::TEXT
         WHERE a.occurred_at <= $1",
    )
    .bind(seeded_at)
    .execute(&mut conn)
    .await
    .context("the loader's audit templates")?;
    sqlx::raw_sql("ANALYZE grow_audit")
        .execute(&mut conn)
        .await?;
    let templates: i64 = sqlx::query_scalar("SELECT count(*) FROM grow_tmpl")
        .fetch_one(&mut conn)
        .await?;
    anyhow::ensure!(templates > 0, "no seeded employees to copy");
    let e0 = max_id(&mut conn, "employees").await? + 1000;
    let p0 = max_id(&mut conn, "employment_periods").await? + 1000;
    let i0 = max_id(&mut conn, "i9s").await? + 1000;
    out.step("templates", t);

    let last_names = seed::last_names();
    let first_names: Vec<String> = seed::FIRST.iter().map(|s| (*s).to_owned()).collect();
    let t = Instant::now();
    let sql = format!(
        "INSERT INTO employees (id, first_name, last_name, middle_name, ssn_ciphertext, ssn_hash,
             ssn_last4, date_of_birth, profile_id, job_title, email_address, location_id,
             legal_entity_id, language_preference, custom1, custom2, address_street, address_city,
             address_state, address_country, address_zip, cell_number, created_at, updated_at)
         OVERRIDING SYSTEM VALUE
         SELECT $2 + g.n, f.first_name, f.last_name, te.middle_name, te.ssn_ciphertext,
                sha256(convert_to('i9-bench growth ' || g.n, 'UTF8')),
                lpad((g.n % 10000)::TEXT, 4, '0'), DATE '1950-01-01' + (g.h % 18000)::INT,
                'grow-' || g.n, te.job_title,
                lower(f.first_name || '.' || f.last_name || '.' || g.n) || '@mail.example',
                te.location_id, te.legal_entity_id, CASE WHEN g.n % 7 = 0 THEN 2 ELSE 1 END,
                te.custom1, 'Badge G' || g.n, (1 + g.h % 900) || ' Harbor Way', te.address_city,
                te.address_state, te.address_country, te.address_zip,
                '503-555-' || lpad((g.n % 10000)::TEXT, 4, '0'), now(), now()
         FROM ({ROWS}) g
         JOIN grow_tmpl t ON t.k = g.n % $3
         JOIN employees te ON te.id = t.employee_id
         CROSS JOIN LATERAL (SELECT
             CASE WHEN g.n % 5 = 0 THEN ($5::TEXT[])[1 + (g.n / 5) % 20]
                  ELSE initcap({SYL_A}[1 + (g.h / 7) % 50] || {SYL_C}[1 + (g.h / 401) % 18])
             END AS first_name,
             CASE WHEN g.n % 100 < 21
                  THEN ($4::TEXT[])[LEAST(200, GREATEST(1,
                           ceil(200 * power((g.h % 1000003) / 1000003.0, 1.647))::INT))]
                  ELSE initcap({SYL_A}[1 + ((g.h / 128) % 150000) % 50]
                               || {SYL_B}[1 + ((g.h / 128) % 150000) / 50 % 50]
                               || {SYL_C}[1 + ((g.h / 128) % 150000) / 2500 % 60])
             END AS last_name) f"
    );
    sqlx::query(&sql)
        .bind(n)
        .bind(e0)
        .bind(templates)
        .bind(&last_names)
        .bind(&first_names)
        .execute(&mut conn)
        .await
        .context("loading employees")?;
    out.step("employees", t);

    let t = Instant::now();
    let sql = format!(
        "INSERT INTO employment_periods (id, employee_id, start_date, terminated_date, created_at)
         OVERRIDING SYSTEM VALUE
         SELECT $3 + g.n, $2 + g.n, {START}, {TERMINATED}, now() FROM ({ROWS}) g"
    );
    sqlx::query(&sql)
        .bind(n)
        .bind(e0)
        .bind(p0)
        .execute(&mut conn)
        .await
        .context("loading periods of employment")?;
    out.step("employment_periods", t);

    let t = Instant::now();
    let sql = format!(
        "INSERT INTO i9s (id, employee_id, employment_period_id, status, remote, onboarding_type,
             form_version, attestation, date_created, date_completed, date_due, date_approved,
             start_date, i9_expiration, retention_date, signed_date_employee, signed_date_employer,
             first_name, last_name, middle_initial, date_of_birth, ssn_ciphertext, ssn_last4,
             email_address, phone_number, address_street, address_apartment, address_city,
             address_state, address_zip, created_at, updated_at)
         OVERRIDING SYSTEM VALUE
         SELECT $4 + g.n, e.id, p.id, s.status, ti.remote, ti.onboarding_type, ti.form_version,
                CASE WHEN s.status <> 'Section 1 Incomplete' THEN 'citizen' END,
                (p.start_date - 7)::TIMESTAMPTZ,
                CASE WHEN s.status IN ('Completed', 'Approved') THEN (p.start_date + 2)::TIMESTAMPTZ END,
                p.start_date + 3,
                CASE WHEN s.status = 'Approved' THEN (p.start_date + 3)::TIMESTAMPTZ END,
                p.start_date,
                CASE WHEN g.n % 10 = 3 THEN CURRENT_DATE - 30 + (g.h % 1095)::INT END,
                i9_retention_date(p.start_date, p.terminated_date),
                CASE WHEN s.status <> 'Section 1 Incomplete' THEN p.start_date - 1 END,
                CASE WHEN s.status NOT IN ('Section 1 Incomplete', 'Signed Sec 1')
                     THEN p.start_date + 1 END,
                e.first_name, e.last_name, left(e.middle_name, 1), e.date_of_birth,
                e.ssn_ciphertext, e.ssn_last4, e.email_address, e.cell_number, e.address_street,
                NULL, e.address_city, e.address_state, e.address_zip, now(), now()
         FROM ({ROWS}) g
         JOIN employees e ON e.id = $2 + g.n
         JOIN employment_periods p ON p.id = $3 + g.n
         JOIN grow_tmpl t ON t.k = g.n % $5
         JOIN i9s ti ON ti.id = t.i9_id
         CROSS JOIN LATERAL (SELECT {STATUS} AS status) s"
    );
    sqlx::query(&sql)
        .bind(n)
        .bind(e0)
        .bind(p0)
        .bind(i0)
        .bind(templates)
        .execute(&mut conn)
        .await
        .context("loading I-9s")?;
    out.step("i9s", t);

    let t = Instant::now();
    let sql = format!(
        "INSERT INTO i9_requests (id, employee_id, remote, onboarding_type, section1_token_hash,
             section1_token_ciphertext, section1_expires_at, section1_used_at, i9_id, created_at)
         SELECT gen_random_uuid(), $2 + g.n, coalesce(tr.remote, FALSE), tr.onboarding_type,
                sha256(convert_to('i9-bench growth token ' || g.n, 'UTF8')),
                coalesce(tr.section1_token_ciphertext, '\\x00'::BYTEA),
                ({START})::TIMESTAMPTZ + INTERVAL '30 days',
                CASE WHEN g.n % 100 >= 2 THEN ({START} - 1)::TIMESTAMPTZ END,
                $3 + g.n, ({START} - 7)::TIMESTAMPTZ
         FROM ({ROWS}) g
         JOIN grow_tmpl t ON t.k = g.n % $4
         LEFT JOIN i9_requests tr ON tr.id = t.request_id"
    );
    sqlx::query(&sql)
        .bind(n)
        .bind(e0)
        .bind(i0)
        .bind(templates)
        .execute(&mut conn)
        .await
        .context("loading I-9 requests")?;
    out.step("i9_requests", t);

    let t = Instant::now();
    let sql = format!(
        "INSERT INTO audit_log (occurred_at, user_id, client_id, action, resource_type, resource_id,
             request_id, detail)
         SELECT now(), a.user_id, a.client_id, a.action, a.resource_type,
                CASE a.resource_type WHEN 'employee' THEN ($2 + g.n)::TEXT ELSE ($3 + g.n)::TEXT END,
                'grow-' || g.n, a.detail
         FROM ({ROWS}) g JOIN grow_audit a ON a.k = g.n % $4"
    );
    sqlx::query(&sql)
        .bind(n)
        .bind(e0)
        .bind(i0)
        .bind(templates)
        .execute(&mut conn)
        .await
        .context("loading audit entries")?;
    out.step("audit_log", t);

    // E-Verify: a closed case for half the completed I-9s, an open one
    // (Tentative Nonconfirmation, its next step due around today) for one
    // in a thousand.
    let t = Instant::now();
    let sql = format!(
        "INSERT INTO everify_cases (i9_id, employee_id, legal_entity_id, program, case_number,
             status, result, agency, created_on, due_on, result_issued_on, next_step,
             next_step_due_on, closure_reason, employed_at_closure, closed_on,
             created_by_user_id, creator_name, created_at, updated_at)
         SELECT i.id, i.employee_id, coalesce(e.legal_entity_id, le.id), 'simulator',
                'GRW' || lpad(g.n::TEXT, 12, '0'),
                CASE WHEN o.open THEN 'Tentative Nonconfirmation' ELSE 'Closed' END,
                CASE WHEN o.open THEN 'Tentative Nonconfirmation' ELSE 'Employment Authorized' END,
                CASE WHEN o.open THEN 'SSA' END,
                i.start_date + 1, i.start_date + 3, i.start_date + 1,
                CASE WHEN o.open THEN 'notify' END,
                CASE WHEN o.open THEN CURRENT_DATE - 10 + (g.h % 20)::INT END,
                CASE WHEN o.open THEN NULL ELSE 'EMPLOYEE_CONTINUES_TO_WORK_AFTER_EA' END,
                CASE WHEN o.open THEN NULL ELSE TRUE END,
                CASE WHEN o.open THEN NULL ELSE i.start_date + 1 END,
                u.id, 'Ada Admin', now(), now()
         FROM ({ROWS}) g
         CROSS JOIN LATERAL (SELECT g.n % 1000 = 6 AS open) o
         JOIN i9s i ON i.id = $2 + g.n
         JOIN employees e ON e.id = i.employee_id
         CROSS JOIN (SELECT min(id) AS id FROM legal_entities) le
         CROSS JOIN (SELECT min(id) AS id FROM users) u
         WHERE g.n % 100 >= 6 AND g.n % 2 = 0"
    );
    sqlx::query(&sql)
        .bind(n)
        .bind(i0)
        .execute(&mut conn)
        .await
        .context("loading E-Verify cases")?;
    out.step("everify_cases", t);

    let t = Instant::now();
    sqlx::query(
        "INSERT INTO legal_holds (employee_id, reason, set_at)
         SELECT $2 + n, 'Litigation hold (i9-bench growth)', now()
         FROM generate_series(1, $1::BIGINT) n WHERE n % 10000 = 1",
    )
    .bind(n)
    .bind(e0)
    .execute(&mut conn)
    .await
    .context("loading legal holds")?;
    for table in ["employees", "employment_periods", "i9s"] {
        sqlx::query(&format!(
            "SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
        ))
        .execute(&mut conn)
        .await
        .with_context(|| format!("moving {table}'s id sequence"))?;
    }
    sqlx::raw_sql("RESET session_replication_role")
        .execute(&mut conn)
        .await?;
    out.step("legal_holds, sequences", t);

    let t = Instant::now();
    // Each alone: several statements in one string run as one transaction.
    sqlx::raw_sql(
        "VACUUM (ANALYZE) employees, employment_periods, i9s, i9_requests, audit_log,
                          everify_cases, legal_holds",
    )
    .execute(&mut conn)
    .await
    .context("VACUUM (ANALYZE) after the load")?;
    sqlx::raw_sql("CHECKPOINT")
        .execute(&mut conn)
        .await
        .context("CHECKPOINT after the load")?;
    out.step("VACUUM (ANALYZE), CHECKPOINT", t);
    conn.close().await.ok();
    out.total = t0.elapsed();
    Ok(out)
}

/// Grow the bare program's wide table (copies of its rows, new ids) and its
/// own `employees` and `i9s` (which its `POST` writes) by `rows` each.
pub async fn grow_bare(url: &str, rows: u64) -> anyhow::Result<Loaded> {
    let t0 = Instant::now();
    let mut out = Loaded {
        rows,
        steps: Vec::new(),
        total: Duration::ZERO,
    };
    let mut conn = PgConnection::connect(url)
        .await
        .context("connecting the bare loader")?;
    let n = i64::try_from(rows)?;
    sqlx::raw_sql("SET synchronous_commit = off")
        .execute(&mut conn)
        .await?;
    let t = Instant::now();
    let columns: String = sqlx::query_scalar(
        "SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position)
         FROM information_schema.columns
         WHERE table_name = 'wide_employees' AND column_name NOT IN ('id', 'profile_id')",
    )
    .fetch_one(&mut conn)
    .await?;
    let t_columns: String = columns
        .split(", ")
        .map(|c| format!("w.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let w0 = max_id(&mut conn, "wide_employees").await? + 1000;
    let sql = format!(
        "WITH tmpl AS (SELECT (row_number() OVER (ORDER BY id) - 1)::BIGINT AS k, * FROM wide_employees)
         INSERT INTO wide_employees (id, profile_id, {columns})
         SELECT $2 + g.n, 'grow-' || g.n, {t_columns}
         FROM generate_series(1, $1::BIGINT) g(n)
         JOIN tmpl w ON w.k = g.n % (SELECT count(*) FROM tmpl)"
    );
    sqlx::query(&sql)
        .bind(n)
        .bind(w0)
        .execute(&mut conn)
        .await
        .context("growing the bare wide table")?;
    out.step("wide_employees", t);
    let t = Instant::now();
    sqlx::raw_sql(
        "CREATE TEMP TABLE grow_n (n BIGINT);
         INSERT INTO grow_n SELECT generate_series(1, (SELECT count(*) FROM wide_employees WHERE profile_id LIKE 'grow-%'));
         WITH e AS (
             INSERT INTO employees (first_name, last_name, location_id, start_date, profile_id)
             SELECT 'Grown', 'Row' || n, 1, CURRENT_DATE - (n % 3650)::INT, 'grow-' || n FROM grow_n
             RETURNING id, first_name, last_name)
         INSERT INTO i9s (employee_id, status, first_name, last_name)
         SELECT id, 'Completed', first_name, last_name FROM e;",
    )
    .execute(&mut conn)
    .await
    .context("growing the bare employees and I-9s")?;
    out.step("employees, i9s", t);
    let t = Instant::now();
    sqlx::raw_sql("VACUUM (ANALYZE) wide_employees, employees, i9s")
        .execute(&mut conn)
        .await?;
    out.step("VACUUM (ANALYZE)", t);
    conn.close().await.ok();
    out.total = t0.elapsed();
    Ok(out)
}
