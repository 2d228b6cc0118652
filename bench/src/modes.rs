//! The two benchmark modes: what each measures, in which order, and the
//! requests of each side (docs of each row in [`report`]).

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use reqwest::{header::CONTENT_TYPE, StatusCode};

use crate::{
    bare::Bare,
    load::{self, ProfileIds, Target},
    ours::Ours,
    report::{Row, RowKind},
    seed::Seeded,
    Args,
};

/// A random element of `items` (not empty).
fn pick<T>(items: &[T], r: u64) -> &T {
    // The seeded lists hold at most 200,000 items.
    &items[usize::try_from(r % items.len() as u64).unwrap_or(0)]
}

pub async fn measure(
    settings: &load::Settings,
    kind: RowKind,
    ours: Target,
    bare: Target,
) -> anyhow::Result<Row> {
    eprintln!("{}: ours...", kind.title());
    let ours_result = load::throughput(&ours, settings).await?;
    eprintln!("{}: bare...", kind.title());
    let bare_result = load::throughput(&bare, settings).await?;
    Ok(Row {
        kind,
        ours: ours_result,
        bare: bare_result,
    })
}

/// The requests of the reads, ours' and the bare program's, in the order
/// they are measured (and probed).
pub fn read_targets(ours: &Ours, bare: &Bare, seeded: &Seeded) -> Vec<(RowKind, Target, Target)> {
    let visible = Arc::new(seeded.visible.clone());
    let names = Arc::new(seeded.last_names.clone());
    let get_ours = |name: &str, token: &str| {
        let (base, token, visible) = (ours.base_url.clone(), token.to_owned(), visible.clone());
        Target::new(name, StatusCode::OK, move |c, r| {
            c.get(format!("{base}/v1/employees/{}", pick(&visible, r)))
                .bearer_auth(&token)
        })
    };
    let list_ours = |path: &'static str| {
        let (base, token, names) = (ours.base_url.clone(), ours.tokens.hr.clone(), names.clone());
        Target::new("ours", StatusCode::OK, move |c, r| {
            c.get(format!("{base}{path}?lastName={}", pick(&names, r)))
                .bearer_auth(&token)
        })
    };
    let list_bare = |path: &'static str| {
        let (base, names) = (bare.base_url.clone(), names.clone());
        Target::new("bare", StatusCode::OK, move |c, r| {
            c.get(format!("{base}{path}?lastName={}", pick(&names, r)))
        })
    };
    let get_bare = || {
        let (base, visible) = (bare.base_url.clone(), visible.clone());
        Target::new("bare", StatusCode::OK, move |c, r| {
            c.get(format!("{base}/employees/{}", pick(&visible, r)))
        })
    };
    vec![
        (
            RowKind::GetEmployee,
            get_ours("ours", &ours.tokens.hr),
            get_bare(),
        ),
        (
            RowKind::GetEmployeeFullSsn,
            get_ours("ours", &ours.tokens.auditor),
            get_bare(),
        ),
        (
            RowKind::ListEmployees,
            list_ours("/v1/employees"),
            list_bare("/lists/employees"),
        ),
        (
            RowKind::ListI9s,
            list_ours("/v1/i9s"),
            list_bare("/lists/i9s"),
        ),
    ]
}

/// The requests of the writes (POST, PATCH, the partner operation).
pub fn write_targets(
    ours: &Ours,
    bare: &Bare,
    seeded: &Seeded,
    ids: &Arc<ProfileIds>,
) -> Vec<(RowKind, Target, Target)> {
    let post_ours = Target::post_employee(
        "ours",
        format!("{}/v1/employees", ours.base_url),
        Some(ours.tokens.admin.clone()),
        ours.location_id,
        ids.clone(),
    );
    let post_bare = || {
        Target::post_employee(
            "bare",
            format!("{}/employees", bare.base_url),
            None,
            bare.location_id,
            ids.clone(),
        )
    };
    let employees = Arc::new(seeded.employees.clone());
    let patch = |name: &str, url: String, token: Option<String>| {
        let employees = employees.clone();
        Target::new(name, StatusCode::OK, move |c, r| {
            let e = pick(&employees, r);
            // A PATCH always sends the three fields a record cannot go without.
            let body = serde_json::json!({
                "firstName": e.first_name,
                "lastName": e.last_name,
                "locationId": e.location_id,
                "jobTitle": format!("Shift Lead {}", r % 1000),
                "cellNumber": format!("503-555-{:04}", r % 10_000),
            });
            let mut request = c
                .patch(format!("{url}/{}", e.id))
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string());
            if let Some(token) = &token {
                request = request.bearer_auth(token);
            }
            request
        })
    };
    let partner = {
        let url = format!("{}/v1/partners/i9s/section1", ours.base_url);
        let (token, location, ids) = (ours.tokens.partner.clone(), ours.location_id, ids.clone());
        Target::new("ours", StatusCode::CREATED, move |c, _| {
            let candidate = format!("cand-{}", ids.next());
            let body = serde_json::json!({
                "integrationCandidateId": candidate,
                "onboardingType": "on-site",
                "firstName": "Bench",
                "lastName": "Partner",
                "emailAddress": "bench.partner@mail.example",
                "startDate": "2026-12-01",
                "locationId": location,
            });
            c.post(&url)
                .bearer_auth(&token)
                .header(CONTENT_TYPE, "application/json")
                .header("Idempotency-Key", format!("hire-{candidate}"))
                .body(body.to_string())
        })
    };
    vec![
        (RowKind::PostEmployee, post_ours, post_bare()),
        (
            RowKind::PatchEmployee,
            patch(
                "ours",
                format!("{}/v1/employees", ours.base_url),
                Some(ours.tokens.admin.clone()),
            ),
            patch("bare", format!("{}/employees", bare.base_url), None),
        ),
        (RowKind::PartnerPush, partner, post_bare()),
    ]
}

pub async fn reads(
    args: &Args,
    ours: &Ours,
    bare: &Bare,
    seeded: &Seeded,
) -> anyhow::Result<Vec<Row>> {
    let settings = settings(args);
    let mut rows = Vec::new();
    for (kind, o, b) in read_targets(ours, bare, seeded) {
        rows.push(measure(&settings, kind, o, b).await?);
    }
    Ok(rows)
}

/// The writes; the time to an I-9 runs after the POSTs (before the partner
/// pushes, whose I-9s and callbacks keep the worker busy).
pub async fn writes(
    args: &Args,
    ours: &Ours,
    bare: &Bare,
    seeded: &Seeded,
    ids: &Arc<ProfileIds>,
) -> anyhow::Result<(Vec<Row>, load::I9Result, load::I9Result)> {
    let settings = settings(args);
    let mut rows = Vec::new();
    let mut i9 = None;
    for (kind, o, b) in write_targets(ours, bare, seeded, ids) {
        if kind == RowKind::PartnerPush {
            // The bare program first: ours' pushes leave I-9s and callbacks
            // for the worker to finish after the measured window.
            eprintln!("{}: bare...", kind.title());
            let bare_result = load::throughput(&b, &settings).await?;
            eprintln!("{}: ours...", kind.title());
            let ours_result = load::throughput(&o, &settings).await?;
            rows.push(Row {
                kind,
                ours: ours_result,
                bare: bare_result,
            });
        } else {
            rows.push(measure(&settings, kind, o, b).await?);
        }
        if kind == RowKind::PostEmployee {
            let s = load::I9Settings {
                samples: args.i9_samples,
                concurrency: args.i9_concurrency,
            };
            eprintln!("time to I-9: ours ({} samples)...", args.i9_samples);
            let o = load::time_to_i9(&ours.i9_target(), &ours.poll_pool, &s, ids).await?;
            eprintln!("time to I-9: bare...");
            let b = load::time_to_i9(&bare.i9_target(), &bare.poll_pool, &s, ids).await?;
            i9 = Some((o, b));
        }
    }
    let (o, b) = i9.context("no time-to-I-9 samples")?;
    Ok((rows, o, b))
}

fn settings(args: &Args) -> load::Settings {
    load::Settings {
        connections: args.connections,
        warmup: Duration::from_secs(args.warmup),
        duration: Duration::from_secs(args.duration),
    }
}

/// One request of each of ours' targets, sent alone while Postgres logs
/// every statement of ours' database, each between two marker statements
/// (`SELECT 'i9-bench probe: <row> begin'` and `... end`) of the bench's
/// own connection: the statements of other backends between a pair are
/// that request's round trips (read them in the server's log).
pub async fn probe(
    ours: &Ours,
    database: &str,
    targets: &[(RowKind, Target, Target)],
) -> anyhow::Result<()> {
    let admin = sqlx::PgPool::connect(&ours.database_url).await?;
    sqlx::raw_sql(&format!(
        r#"ALTER DATABASE "{database}" SET log_min_duration_statement = 0"#
    ))
    .execute(&admin)
    .await
    .context("ALTER DATABASE ... SET log_min_duration_statement")?;
    // New connections read the setting: end the others (the pools reconnect).
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = $1 AND pid <> pg_backend_pid()",
    )
    .bind(database)
    .execute(&admin)
    .await?;
    admin.close().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let marker = sqlx::PgPool::connect(&ours.database_url).await?;
    let client = reqwest::Client::new();
    for (kind, target, _) in targets {
        // Once to warm the token cache and the pools, then the probed one.
        for round in ["warm", "probe"] {
            let label = format!("i9-bench probe: {} {round}", kind.title());
            sqlx::query(&format!("SELECT '{label} begin'"))
                .execute(&marker)
                .await?;
            let response = (target.build)(&client, rand::random()).send().await?;
            let status = response.status();
            response.bytes().await?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            sqlx::query(&format!("SELECT '{label} end'"))
                .execute(&marker)
                .await?;
            eprintln!("probe: {label}: HTTP {status}");
        }
    }
    marker.close().await;
    Ok(())
}
