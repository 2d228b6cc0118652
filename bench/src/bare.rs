//! The bare program: axum and sqlx with nothing else. `POST /employees`
//! parses the same JSON body with serde and runs one transaction of two
//! inserts, the employee and then its I-9.

use std::time::Duration;

use anyhow::Context as _;
use axum::{extract::State, http::StatusCode, routing::post, Json, Router};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use sqlx::{postgres::PgPoolOptions, PgPool};

use crate::{load::Target, Cleanup};

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
}

impl Bare {
    pub fn target(&self) -> Target {
        Target {
            name: "bare",
            url: format!("{}/employees", self.base_url),
            token: None,
            location_id: LOCATION_ID,
        }
    }
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
    State(pool): State<PgPool>,
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
pub async fn start(
    run_id: &str,
    poll_connections: usize,
    cleanup: &mut Cleanup,
) -> anyhow::Result<Bare> {
    let db_url = cleanup
        .create_database(&format!("i9_bench_{run_id}_bare"))
        .await?;
    let pool = PgPoolOptions::new()
        .max_connections(32)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&db_url)
        .await
        .context("connecting the bare program's database")?;
    cleanup.pool(&pool);
    sqlx::raw_sql(SCHEMA)
        .execute(&pool)
        .await
        .context("creating the bare program's tables")?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the bare program")?;
    let addr = listener.local_addr()?;
    let router = Router::new()
        .route("/employees", post(create))
        .with_state(pool);
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
    })
}
