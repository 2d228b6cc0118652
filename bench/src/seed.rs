//! The records the reads and the `PATCH`es work on, created in ours through
//! its API as an employer would: `POST /v1/employees` as `admin` with an SSN,
//! most of the record's fields and `createI9: "yes"`, the outbox relay and
//! the worker creating each I-9; then polled until every I-9 exists.
//!
//! Four in five employees are in West Region (Portland Warehouse and Seattle
//! Office, alternately), which `west.hr` and `west.auditor` see; the fifth is
//! in Boston Office, which they do not (so a list's group condition leaves
//! rows out). Last names come from 200 names, so a `lastName` search finds
//! about 40 employees a West Region user sees: one page.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _};
use reqwest::StatusCode;
use sqlx::PgPool;

use crate::ours::Ours;

pub const FIRST: &[&str] = &[
    "Ana", "Ben", "Carla", "David", "Elena", "Frank", "Grace", "Hugo", "Irene", "Jamal", "Kara",
    "Liam", "Mona", "Nikhil", "Olga", "Pedro", "Quinn", "Rosa", "Sam", "Tara",
];
const LAST_HEAD: &[&str] = &[
    "Bar", "Cal", "Dun", "Fer", "Gar", "Hal", "Kin", "Lor", "Mor", "Nor",
];
const LAST_TAIL: &[&str] = &[
    "ton", "ley", "wood", "son", "field", "ford", "by", "man", "well", "ridge", "croft", "dale",
    "hurst", "more", "stead", "wick", "worth", "brook", "gate", "holm",
];
const SEED_CONCURRENCY: usize = 16;
const SEED_DEADLINE: Duration = Duration::from_secs(600);
const I9_DEADLINE: Duration = Duration::from_secs(300);

/// The last names the seed uses.
pub fn last_names() -> Vec<String> {
    LAST_HEAD
        .iter()
        .flat_map(|h| LAST_TAIL.iter().map(move |t| format!("{h}{t}")))
        .collect()
}

/// A seeded employee: what a `PATCH` must send again (docs/api.md,
/// "Writing employees": `firstName`, `lastName`, `locationId`).
#[derive(Debug, Clone)]
pub struct Employee {
    pub id: i64,
    pub first_name: String,
    pub last_name: String,
    pub location_id: i64,
}

pub struct Seeded {
    /// Ids of the seeded employees `west.hr` and `west.auditor` see.
    pub visible: Vec<i64>,
    /// Those employees.
    pub employees: Vec<Employee>,
    pub last_names: Vec<String>,
    pub took: Duration,
}

/// The body of seeded employee `i`.
fn employee(i: usize, location_id: i64, last_names: &[String]) -> serde_json::Value {
    let first = FIRST[i % FIRST.len()];
    let last = &last_names[(i / FIRST.len()) % last_names.len()];
    // Unique and well formed (area 201 or 202, group 37, serial from 1).
    let ssn = format!("{:03}-{:02}-{:04}", 201 + i / 9000, 37, 1 + i % 9000);
    serde_json::json!({
        "firstName": first,
        "lastName": last,
        "middleName": "Lee",
        "socialSecurityNumber": ssn,
        "dateOfBirth": format!("19{:02}-{:02}-{:02}", 60 + i % 40, 1 + i % 12, 1 + i % 28),
        "startDate": "2026-11-02",
        "profileId": format!("seed-{i}"),
        "jobTitle": "Warehouse Associate",
        "emailAddress": format!("{}.{}.{i}@mail.example", first.to_lowercase(), last.to_lowercase()),
        "locationId": location_id,
        "languagePreference": 1,
        "custom1": "Shift B",
        "custom2": format!("Badge {i}"),
        "addressStreet": format!("{} Harbor Way", 1 + i % 900),
        "addressCity": "Portland",
        "addressState": "OR",
        "addressCountry": "US",
        "addressZip": "97201",
        "cellNumber": format!("503-555-{:04}", i % 10_000),
        "createI9": "yes",
    })
}

async fn group_id(pool: &PgPool, name: &str) -> anyhow::Result<i64> {
    sqlx::query_scalar("SELECT id FROM groups WHERE name = $1")
        .bind(name)
        .fetch_one(pool)
        .await
        .with_context(|| format!("group {name:?} in the fixture"))
}

/// Create `count` employees with their I-9s in ours.
pub async fn seed(ours: &Ours, count: usize) -> anyhow::Result<Seeded> {
    let t0 = Instant::now();
    let pool = &ours.poll_pool;
    let west = [
        group_id(pool, "Portland Warehouse").await?,
        group_id(pool, "Seattle Office").await?,
    ];
    let boston = group_id(pool, "Boston Office").await?;
    let names = Arc::new(last_names());
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(SEED_CONCURRENCY)
        .build()?;
    let url = Arc::new(format!("{}/v1/employees", ours.base_url));
    let token = Arc::new(ours.tokens.admin.clone());
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = t0 + SEED_DEADLINE;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..SEED_CONCURRENCY {
        let (client, url, token, next, names) = (
            client.clone(),
            url.clone(),
            token.clone(),
            next.clone(),
            names.clone(),
        );
        tasks.spawn(async move {
            let mut visible = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                if Instant::now() > deadline {
                    bail!("seeding took longer than {} s", SEED_DEADLINE.as_secs());
                }
                let location = if i % 5 == 4 { boston } else { west[i % 2] };
                let response = client
                    .post(url.as_str())
                    .bearer_auth(token.as_str())
                    .json(&employee(i, location, &names))
                    .send()
                    .await
                    .context("seeding POST")?;
                let status = response.status();
                let body = response.text().await.context("seeding POST body")?;
                if status != StatusCode::CREATED {
                    let body: String = body.chars().take(300).collect();
                    bail!("seeding employee {i}: HTTP {status}: {body}");
                }
                let id = serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["id"].as_i64())
                    .context("seeding POST answered without id")?;
                if location != boston {
                    let body = employee(i, location, &names);
                    visible.push(Employee {
                        id,
                        first_name: body["firstName"].as_str().unwrap_or_default().to_owned(),
                        last_name: body["lastName"].as_str().unwrap_or_default().to_owned(),
                        location_id: location,
                    });
                }
            }
            anyhow::Ok(visible)
        });
    }
    let mut visible = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        visible.extend(joined.context("a seeding task failed")??);
    }
    visible.sort_unstable_by_key(|e: &Employee| e.id);

    // Every seeded employee's I-9, created by the worker.
    let i9_deadline = Instant::now() + I9_DEADLINE;
    loop {
        let with_i9: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM employees e WHERE e.profile_id LIKE 'seed-%'
             AND EXISTS (SELECT 1 FROM i9s i WHERE i.employee_id = e.id)",
        )
        .fetch_one(pool)
        .await?;
        if with_i9 >= i64::try_from(count)? {
            break;
        }
        if Instant::now() > i9_deadline {
            bail!(
                "only {with_i9} of {count} seeded I-9s exist after {} s",
                I9_DEADLINE.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    sqlx::raw_sql("ANALYZE")
        .execute(pool)
        .await
        .context("ANALYZE after the seed")?;
    Ok(Seeded {
        visible: visible.iter().map(|e| e.id).collect(),
        employees: visible,
        last_names: names.to_vec(),
        took: t0.elapsed(),
    })
}
