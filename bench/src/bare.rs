//! The bare program: axum and sqlx with nothing else. `POST /employees`
//! parses the same JSON body with serde and runs one transaction of two
//! inserts, the employee and then its I-9. `GET /employees/{id}` reads one
//! row of a table as wide as ours' employee record by primary key, and
//! `PATCH /employees/{id}` updates one (one `UPDATE ... RETURNING`).
//! `GET /lists/employees` and `GET /lists/i9s` run the very count and page
//! SQL that ours' lists run for a `lastName` filter and a caller limited to
//! some groups (api/src/list.rs builds it), on ours' database through a pool
//! of their own.

use std::{collections::HashMap, time::Duration};

use anyhow::Context as _;
use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    routing::{get, post},
    Json, Router,
};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use sqlx::{postgres::PgPoolOptions, FromRow, PgPool};

use crate::{load::I9Target, Cleanup};

/// The columns our `POST /v1/employees` writes for such a body, and an I-9
/// with the columns the brief names.
const SCHEMA: &str = r#"
CREATE TABLE employees (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    first_name  TEXT NOT NULL CHECK (length(first_name) BETWEEN 1 AND 40),
    last_name   TEXT NOT NULL CHECK (length(last_name) BETWEEN 1 AND 40),
    location_id BIGINT NOT NULL,
    start_date  DATE,
    profile_id  TEXT CHECK (length(profile_id) BETWEEN 1 AND 30),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX employees_profile_id_key ON employees (lower(profile_id));
CREATE TABLE i9s (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    employee_id  BIGINT NOT NULL REFERENCES employees (id),
    status       TEXT NOT NULL,
    date_created TIMESTAMPTZ NOT NULL DEFAULT now(),
    first_name   TEXT NOT NULL,
    last_name    TEXT NOT NULL
);
CREATE INDEX i9s_employee_idx ON i9s (employee_id);
"#;

/// A location id the bare program accepts (it has no groups table).
const LOCATION_ID: i64 = 1;

pub struct Bare {
    pub base_url: String,
    /// The bench's own connections, for polling `i9s`.
    pub poll_pool: PgPool,
    pub location_id: i64,
}

impl Bare {
    pub fn i9_target(&self) -> I9Target {
        I9Target {
            url: format!("{}/employees", self.base_url),
            token: None,
            location_id: LOCATION_ID,
        }
    }

    /// Copy ours' employees into the wide table (same ids, same values; the
    /// SSN stays encrypted and is shown masked).
    pub async fn copy_employees(&self, ours: &PgPool) -> anyhow::Result<u64> {
        let rows: serde_json::Value = sqlx::query_scalar(&format!(
            "SELECT coalesce(json_agg(w), '[]') FROM ({WIDE_FROM_OURS}) w"
        ))
        .fetch_one(ours)
        .await
        .context("reading ours' employees")?;
        let done = sqlx::query(
            "INSERT INTO wide_employees
             SELECT * FROM jsonb_populate_recordset(NULL::wide_employees, $1)",
        )
        .bind(rows)
        .execute(&self.poll_pool)
        .await
        .context("filling the bare program's wide table")?;
        sqlx::query("ANALYZE wide_employees")
            .execute(&self.poll_pool)
            .await?;
        Ok(done.rows_affected())
    }
}

/// The bare program's employee: as wide as ours' record (the columns
/// `GET /v1/employees/{id}` reads), one row per employee of ours' database.
const WIDE_SCHEMA: &str = r#"
CREATE TABLE wide_employees (
    id BIGINT PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    middle_name TEXT,
    date_of_birth DATE,
    start_date DATE,
    terminated_date DATE,
    profile_id TEXT,
    other_name TEXT,
    job_title TEXT,
    email_address TEXT,
    location_id BIGINT NOT NULL,
    legal_entity_id BIGINT,
    language_preference SMALLINT,
    custom1 TEXT,
    custom2 TEXT,
    custom3 TEXT,
    custom4 TEXT,
    custom5 TEXT,
    custom6 TEXT,
    custom7 TEXT,
    custom8 TEXT,
    notification_email1 TEXT,
    notification_email2 TEXT,
    address_street TEXT,
    address_street2 TEXT,
    address_apartment TEXT,
    address_city TEXT,
    address_state TEXT,
    address_country TEXT,
    address_zip TEXT,
    work_number TEXT,
    work_extension TEXT,
    home_number TEXT,
    home_extension TEXT,
    cell_number TEXT,
    cell_extension TEXT,
    integration_client_system TEXT,
    integration_client_process TEXT,
    integration_hr_url TEXT,
    integration_transaction_id TEXT,
    integration_request_id TEXT,
    integration_candidate_id TEXT,
    integration_service_id TEXT,
    integration_report_url TEXT,
    employee_return_url TEXT,
    ssn_ciphertext BYTEA,
    ssn_last4 TEXT,
    i9_status TEXT,
    i9_expiration DATE,
    latest_i9_id BIGINT,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
"#;

/// The rows of [`WIDE_SCHEMA`] from ours' database: its employees, their
/// current period and latest I-9, as ours' `GET` reads them.
const WIDE_FROM_OURS: &str = r#"SELECT
    e.id AS id,
    e.first_name AS first_name,
    e.last_name AS last_name,
    e.middle_name AS middle_name,
    e.date_of_birth AS date_of_birth,
    p.start_date AS start_date,
    p.terminated_date AS terminated_date,
    e.profile_id AS profile_id,
    e.other_name AS other_name,
    e.job_title AS job_title,
    e.email_address AS email_address,
    e.location_id AS location_id,
    e.legal_entity_id AS legal_entity_id,
    e.language_preference AS language_preference,
    e.custom1 AS custom1,
    e.custom2 AS custom2,
    e.custom3 AS custom3,
    e.custom4 AS custom4,
    e.custom5 AS custom5,
    e.custom6 AS custom6,
    e.custom7 AS custom7,
    e.custom8 AS custom8,
    e.notification_email1 AS notification_email1,
    e.notification_email2 AS notification_email2,
    e.address_street AS address_street,
    e.address_street2 AS address_street2,
    e.address_apartment AS address_apartment,
    e.address_city AS address_city,
    e.address_state AS address_state,
    e.address_country AS address_country,
    e.address_zip AS address_zip,
    e.work_number AS work_number,
    e.work_extension AS work_extension,
    e.home_number AS home_number,
    e.home_extension AS home_extension,
    e.cell_number AS cell_number,
    e.cell_extension AS cell_extension,
    e.integration_client_system AS integration_client_system,
    e.integration_client_process AS integration_client_process,
    e.integration_hr_url AS integration_hr_url,
    e.integration_transaction_id AS integration_transaction_id,
    e.integration_request_id AS integration_request_id,
    e.integration_candidate_id AS integration_candidate_id,
    e.integration_service_id AS integration_service_id,
    e.integration_report_url AS integration_report_url,
    e.employee_return_url AS employee_return_url,
    e.ssn_ciphertext AS ssn_ciphertext,
    e.ssn_last4 AS ssn_last4,
    li.status AS i9_status,
    li.i9_expiration AS i9_expiration,
    li.id AS latest_i9_id,
    now() AS updated_at
FROM employees e
LEFT JOIN LATERAL (
    SELECT i.id, i.status, i.i9_expiration FROM i9s i WHERE i.employee_id = e.id ORDER BY i.id DESC LIMIT 1
) li ON TRUE
LEFT JOIN LATERAL (
    SELECT start_date, terminated_date FROM employment_periods p
    WHERE p.employee_id = e.id ORDER BY p.id DESC LIMIT 1
) p ON TRUE"#;

#[derive(FromRow, Serialize)]
#[serde(rename_all = "camelCase")]
struct WideEmployee {
    id: i64,
    first_name: String,
    last_name: String,
    middle_name: Option<String>,
    date_of_birth: Option<NaiveDate>,
    start_date: Option<NaiveDate>,
    terminated_date: Option<NaiveDate>,
    profile_id: Option<String>,
    other_name: Option<String>,
    job_title: Option<String>,
    email_address: Option<String>,
    location_id: i64,
    legal_entity_id: Option<i64>,
    language_preference: Option<i16>,
    custom1: Option<String>,
    custom2: Option<String>,
    custom3: Option<String>,
    custom4: Option<String>,
    custom5: Option<String>,
    custom6: Option<String>,
    custom7: Option<String>,
    custom8: Option<String>,
    notification_email1: Option<String>,
    notification_email2: Option<String>,
    address_street: Option<String>,
    address_street2: Option<String>,
    address_apartment: Option<String>,
    address_city: Option<String>,
    address_state: Option<String>,
    address_country: Option<String>,
    address_zip: Option<String>,
    work_number: Option<String>,
    work_extension: Option<String>,
    home_number: Option<String>,
    home_extension: Option<String>,
    cell_number: Option<String>,
    cell_extension: Option<String>,
    integration_client_system: Option<String>,
    integration_client_process: Option<String>,
    integration_hr_url: Option<String>,
    integration_transaction_id: Option<String>,
    integration_request_id: Option<String>,
    integration_candidate_id: Option<String>,
    integration_service_id: Option<String>,
    integration_report_url: Option<String>,
    employee_return_url: Option<String>,
    #[serde(skip)]
    ssn_ciphertext: Option<Vec<u8>>,
    #[serde(skip)]
    ssn_last4: Option<String>,
    /// Masked from the last four digits, as ours shows it without permission 12.
    #[sqlx(skip)]
    social_security_number: Option<String>,
    i9_status: Option<String>,
    i9_expiration: Option<NaiveDate>,
    latest_i9_id: Option<i64>,
    updated_at: DateTime<Utc>,
}

fn masked(last4: Option<&str>) -> Option<String> {
    last4.map(|l| format!("***-**-{l}"))
}

type Answer<T> = Result<Json<T>, (StatusCode, String)>;

fn internal(e: sqlx::Error) -> (StatusCode, String) {
    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// One row by primary key.
async fn get_one(State(s): State<AppState>, Path(id): Path<i64>) -> Answer<WideEmployee> {
    let mut row: WideEmployee = sqlx::query_as("SELECT * FROM wide_employees WHERE id = $1")
        .bind(id)
        .fetch_optional(&s.pool)
        .await
        .map_err(internal)?
        .ok_or((StatusCode::NOT_FOUND, "no such employee".to_owned()))?;
    row.social_security_number = masked(row.ssn_ciphertext.as_ref().and(row.ssn_last4.as_deref()));
    Ok(Json(row))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Change {
    job_title: Option<String>,
    cell_number: Option<String>,
}

/// One `UPDATE ... RETURNING` of the fields sent.
async fn update(
    State(s): State<AppState>,
    Path(id): Path<i64>,
    Json(change): Json<Change>,
) -> Answer<WideEmployee> {
    let mut row: WideEmployee = sqlx::query_as(
        "UPDATE wide_employees
         SET job_title = coalesce($2, job_title), cell_number = coalesce($3, cell_number),
             updated_at = now()
         WHERE id = $1 RETURNING *",
    )
    .bind(id)
    .bind(change.job_title)
    .bind(change.cell_number)
    .fetch_optional(&s.pool)
    .await
    .map_err(internal)?
    .ok_or((StatusCode::NOT_FOUND, "no such employee".to_owned()))?;
    row.social_security_number = masked(row.ssn_ciphertext.as_ref().and(row.ssn_last4.as_deref()));
    Ok(Json(row))
}

/// The page size ours' lists use by default (api/src/list.rs, `MAX_PAGE_SIZE`).
const PAGE_SIZE: i64 = 50;

/// `GET /v1/employees?lastName=` of a caller limited to some groups: the
/// count and the page exactly as api/src/list.rs builds them
/// (`fetch_page` with the `PageSql` of api/src/routes/employees/mod.rs,
/// the `lastName` filter, `Restrict::Employee`).
pub const EMPLOYEES_COUNT: &str = "SELECT count(*) FROM employees e WHERE e.purged_at IS NULL \
     AND lower(e.last_name) = lower($1) AND (e.location_id = ANY($2))";
pub const EMPLOYEES_PAGE: &str = "SELECT e.id, li.status AS latest_i9_status, li.i9_expiration, \
     e.first_name, e.last_name,
         e.profile_id, e.ssn_ciphertext, e.ssn_last4 FROM employees e LEFT JOIN LATERAL (
        SELECT i.id, i.status, i.i9_expiration FROM i9s i WHERE i.employee_id = e.id ORDER BY i.id DESC LIMIT 1
    ) li ON TRUE WHERE e.purged_at IS NULL AND lower(e.last_name) = lower($1) \
     AND (e.location_id = ANY($2)) ORDER BY e.id LIMIT $3 OFFSET $4";

/// `GET /v1/i9s?lastName=` likewise (api/src/routes/i9s.rs, `list`).
pub const I9S_COUNT: &str = "SELECT count(*) FROM i9s i JOIN employees e ON e.id = i.employee_id \
     WHERE i.purged_at IS NULL AND lower(i.last_name) = lower($1) AND (e.location_id = ANY($2))";
pub const I9S_PAGE: &str = "SELECT i.id, i.first_name, i.last_name, i.email_address,
                          i.status AS i9_status, i.date_due, i.start_date, i.employee_id,
                          i.i9_expiration,
                          LEAST(i.i9_expiration, i.receipt_due_date, i9_revocation_due(i.id))
                              AS due_date,
                          CASE WHEN i9_revocation_due(i.id)
                                    <= LEAST(i.i9_expiration, i.receipt_due_date, i9_revocation_due(i.id))
                               THEN 'revocation'
                               WHEN i.i9_expiration <= i.receipt_due_date
                                    OR i.receipt_due_date IS NULL AND i.i9_expiration IS NOT NULL
                               THEN 'reverification'
                               WHEN i.receipt_due_date IS NOT NULL THEN 'receipt' END AS due_kind \
     FROM i9s i JOIN employees e ON e.id = i.employee_id WHERE i.purged_at IS NULL \
     AND lower(i.last_name) = lower($1) AND (e.location_id = ANY($2)) ORDER BY i.id LIMIT $3 OFFSET $4";

#[derive(FromRow, Serialize)]
#[serde(rename_all = "camelCase")]
struct EmployeeItem {
    id: i64,
    #[serde(skip)]
    latest_i9_status: Option<String>,
    #[sqlx(skip)]
    i9_status: String,
    i9_expiration: Option<NaiveDate>,
    first_name: String,
    last_name: String,
    #[sqlx(skip)]
    social_security_number: Option<String>,
    profile_id: Option<String>,
    #[serde(skip)]
    ssn_ciphertext: Option<Vec<u8>>,
    #[serde(skip)]
    ssn_last4: Option<String>,
}

#[derive(FromRow, Serialize)]
#[serde(rename_all = "camelCase")]
struct I9Item {
    id: i64,
    first_name: String,
    last_name: String,
    email_address: Option<String>,
    i9_status: String,
    date_due: Option<NaiveDate>,
    start_date: Option<NaiveDate>,
    employee_id: i64,
    i9_expiration: Option<NaiveDate>,
    due_date: Option<NaiveDate>,
    due_kind: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Page<T> {
    search_result: Vec<T>,
    total: i64,
}

async fn page<T>(s: &AppState, count: &str, select: &str, last_name: &str) -> Answer<Page<T>>
where
    T: for<'r> FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    // Unnamed statements, planned with their values each time, as ours sends
    // its lists (api/src/list.rs, `fetch_page`).
    let total: i64 = sqlx::query_scalar(count)
        .persistent(false)
        .bind(last_name)
        .bind(&s.groups)
        .fetch_one(&s.lists)
        .await
        .map_err(internal)?;
    let rows: Vec<T> = sqlx::query_as(select)
        .persistent(false)
        .bind(last_name)
        .bind(&s.groups)
        .bind(PAGE_SIZE)
        .bind(0_i64)
        .fetch_all(&s.lists)
        .await
        .map_err(internal)?;
    Ok(Json(Page {
        search_result: rows,
        total,
    }))
}

fn last_name(q: &HashMap<String, String>) -> Result<&str, (StatusCode, String)> {
    q.get("lastName")
        .map(String::as_str)
        .ok_or((StatusCode::BAD_REQUEST, "lastName is required".to_owned()))
}

async fn list_employees(
    State(s): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Answer<Page<EmployeeItem>> {
    let Json(mut page) =
        page::<EmployeeItem>(&s, EMPLOYEES_COUNT, EMPLOYEES_PAGE, last_name(&q)?).await?;
    for r in &mut page.search_result {
        r.i9_status = r
            .latest_i9_status
            .clone()
            .unwrap_or_else(|| "None".to_owned());
        r.social_security_number = masked(r.ssn_ciphertext.as_ref().and(r.ssn_last4.as_deref()));
    }
    Ok(Json(page))
}

async fn list_i9s(
    State(s): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Answer<Page<I9Item>> {
    page(&s, I9S_COUNT, I9S_PAGE, last_name(&q)?).await
}

#[derive(Clone)]
struct AppState {
    /// The bare program's own database.
    pool: PgPool,
    /// Ours' database, for the lists' SQL.
    lists: PgPool,
    /// The groups whose employees the lists' caller sees.
    groups: Vec<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewEmployee {
    first_name: String,
    last_name: String,
    location_id: i64,
    start_date: Option<NaiveDate>,
    profile_id: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Employee {
    id: i64,
    first_name: String,
    last_name: String,
    location_id: i64,
    start_date: Option<NaiveDate>,
    profile_id: Option<String>,
    created_at: DateTime<Utc>,
}

async fn create(
    State(AppState { pool, .. }): State<AppState>,
    Json(input): Json<NewEmployee>,
) -> Result<(StatusCode, Json<Employee>), (StatusCode, String)> {
    let internal = |e: sqlx::Error| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
    let mut tx = pool.begin().await.map_err(internal)?;
    let (id, created_at): (i64, DateTime<Utc>) = sqlx::query_as(
        "INSERT INTO employees (first_name, last_name, location_id, start_date, profile_id)
         VALUES ($1, $2, $3, $4, $5) RETURNING id, created_at",
    )
    .bind(&input.first_name)
    .bind(&input.last_name)
    .bind(input.location_id)
    .bind(input.start_date)
    .bind(&input.profile_id)
    .fetch_one(&mut *tx)
    .await
    .map_err(internal)?;
    sqlx::query(
        "INSERT INTO i9s (employee_id, status, first_name, last_name)
         VALUES ($1, 'Section 1 Incomplete', $2, $3)",
    )
    .bind(id)
    .bind(&input.first_name)
    .bind(&input.last_name)
    .execute(&mut *tx)
    .await
    .map_err(internal)?;
    tx.commit().await.map_err(internal)?;
    Ok((
        StatusCode::CREATED,
        Json(Employee {
            id,
            first_name: input.first_name,
            last_name: input.last_name,
            location_id: input.location_id,
            start_date: input.start_date,
            profile_id: input.profile_id,
            created_at,
        }),
    ))
}

/// Start the bare program on a free loopback port with a database of its own.
/// `poll_connections` extra connections serve the bench's polling.
/// `ours_db` is ours' database (for the lists) and `groups` the groups whose
/// employees the lists' caller sees.
pub async fn start(
    run_id: &str,
    poll_connections: usize,
    ours_db: &str,
    groups: Vec<i64>,
    cleanup: &mut Cleanup,
) -> anyhow::Result<Bare> {
    let db_url = cleanup
        .create_database(&format!("i9_bench_{run_id}_bare"))
        .await?;
    // Idle connections close soon: the server's connection slots (100 by
    // default) are shared by every pool of the run, ours' included.
    let pool = PgPoolOptions::new()
        .max_connections(32)
        .acquire_timeout(Duration::from_secs(5))
        .idle_timeout(Duration::from_secs(2))
        .connect(&db_url)
        .await
        .context("connecting the bare program's database")?;
    cleanup.pool(&pool);
    sqlx::raw_sql(SCHEMA)
        .execute(&pool)
        .await
        .context("creating the bare program's tables")?;
    sqlx::raw_sql(WIDE_SCHEMA)
        .execute(&pool)
        .await
        .context("creating the bare program's wide table")?;
    let lists = PgPoolOptions::new()
        .max_connections(32)
        .acquire_timeout(Duration::from_secs(5))
        .idle_timeout(Duration::from_secs(2))
        .connect(ours_db)
        .await
        .context("connecting the bare lists to ours' database")?;
    cleanup.pool(&lists);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the bare program")?;
    let addr = listener.local_addr()?;
    let router = Router::new()
        .route("/employees", post(create))
        .route("/employees/{id}", get(get_one).patch(update))
        .route("/lists/employees", get(list_employees))
        .route("/lists/i9s", get(list_i9s))
        .with_state(AppState {
            pool,
            lists,
            groups,
        });
    let stopped = cleanup.stopped();
    cleanup.task(
        "bare program",
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router)
                .with_graceful_shutdown(stopped)
                .await
            {
                eprintln!("bare program stopped: {e}");
            }
        }),
    );

    let poll_pool = PgPoolOptions::new()
        .max_connections(u32::try_from(poll_connections + 2).unwrap_or(16))
        .acquire_timeout(Duration::from_secs(10))
        .connect(&db_url)
        .await
        .context("connecting the polling pool")?;
    cleanup.pool(&poll_pool);
    Ok(Bare {
        base_url: format!("http://{addr}"),
        poll_pool,
        location_id: LOCATION_ID,
    })
}
