//! "Not available right now" is a 503 with `Retry-After`, never a 500: a
//! connection Postgres terminated, a read-only standby, a refused connection,
//! a full pool or server. And `/readyz` checks RabbitMQ on one connection,
//! however many probes arrive.

use std::{str::FromStr, time::Duration};

use axum::response::IntoResponse;
use i9_api::error::ApiError;
use i9_common::db::is_unavailable;
use i9_tests::{eventually, spawn, spawn_app, Stack, TestApp, ADMIN};
use serde_json::{json, Value};
use sqlx::{
    postgres::{PgConnectOptions, PgPoolOptions},
    Connection, PgConnection,
};

/// The status the API answers for `e`, returned by a handler with `?`.
fn status(e: sqlx::Error) -> u16 {
    ApiError::from(e).into_response().status().as_u16()
}

/// The status for `e` wrapped in `anyhow` with a context, as some code passes it on.
fn wrapped_status(e: sqlx::Error) -> u16 {
    ApiError::Internal(anyhow::Error::new(e).context("loading the employee"))
        .into_response()
        .status()
        .as_u16()
}

async fn pid_of(conn: &mut PgConnection) -> i32 {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(conn)
        .await
        .unwrap()
}

async fn terminate(app: &TestApp, pid: i32) {
    // Waits (up to 5 s) until the backend is gone.
    let done: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1, 5000)")
        .bind(pid)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert!(done, "backend {pid} terminated");
}

#[tokio::test]
async fn a_request_whose_connection_postgres_terminated_is_a_503_and_the_next_succeeds() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let location: i64 = sqlx::query_scalar("SELECT location_id FROM employees WHERE id = $1")
        .bind(maria)
        .fetch_one(app.pool())
        .await
        .unwrap();
    let path = format!("/v1/employees/{maria}");
    let body = json!({"firstName": "Maria", "lastName": "Lopez-Okafor", "locationId": location});

    // Hold the employee's row so that the API's PATCH waits on its lock.
    let mut holder = PgConnection::connect(&app.db.url).await.unwrap();
    let holder_pid = pid_of(&mut holder).await;
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::query("SELECT id FROM employees WHERE id = $1 FOR UPDATE")
        .bind(maria)
        .execute(&mut holder)
        .await
        .unwrap();
    let patch = {
        let (http, url, token, body) = (
            app.http.clone(),
            app.url(&path),
            token.clone(),
            body.clone(),
        );
        tokio::spawn(async move {
            http.patch(url)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap()
        })
    };
    let waiting = || async {
        sqlx::query_scalar::<_, i32>(
            "SELECT pid FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1",
        )
        .bind(holder_pid)
        .fetch_all(app.pool())
        .await
        .unwrap()
    };
    eventually("the API's PATCH waits on the row lock", || async {
        !waiting().await.is_empty()
    })
    .await;
    let blocked = waiting().await;
    assert_eq!(blocked.len(), 1, "one backend waits: the PATCH's");
    terminate(&app, blocked[0]).await;

    let r = tokio::time::timeout(Duration::from_secs(30), patch)
        .await
        .expect("the PATCH is answered")
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(
        r.headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned()),
        Some("5".to_owned())
    );
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "application/problem+json"
    );
    let problem: Value = r.json().await.unwrap();
    assert_eq!(
        (problem["type"].as_str(), problem["status"].as_u64()),
        (Some("/problems/unavailable"), Some(503))
    );
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();

    let last_name = || async {
        sqlx::query_scalar::<_, String>("SELECT last_name FROM employees WHERE id = $1")
            .bind(maria)
            .fetch_one(app.pool())
            .await
            .unwrap()
    };
    assert_eq!(
        last_name().await,
        "Lopez",
        "the terminated write left nothing"
    );
    // The same API process, no restart: the next request succeeds.
    let r = app.patch_json(&path, &token, &body).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    assert_eq!(last_name().await, "Lopez-Okafor");
}

#[tokio::test]
async fn every_error_that_means_the_database_is_unavailable_is_a_503_even_inside_anyhow() {
    let app = spawn_app().await;

    // 57P01: a connection Postgres terminated (a restart, an administrator).
    let mut conn = PgConnection::connect(&app.db.url).await.unwrap();
    let pid = pid_of(&mut conn).await;
    terminate(&app, pid).await;
    let e = sqlx::query("SELECT 1")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert!(is_unavailable(&e), "{e:?}");
    assert_eq!(status(e), 503);
    let e = sqlx::query("SELECT 1")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(wrapped_status(e), 503, "the dead connection, used again");

    // 25006: a read-only standby after a failover.
    let mut conn = PgConnection::connect(&app.db.url).await.unwrap();
    sqlx::query("SET default_transaction_read_only = on")
        .execute(&mut conn)
        .await
        .unwrap();
    let e = sqlx::query("UPDATE employees SET last_name = last_name")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(
        e.as_database_error().and_then(|d| d.code()).as_deref(),
        Some("25006")
    );
    assert!(is_unavailable(&e));
    let e2 = sqlx::query("UPDATE employees SET last_name = last_name")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(status(e), 503);
    assert_eq!(wrapped_status(e2), 503);

    // Refused connections: nothing listens on port 1.
    let refused = || async {
        PgConnection::connect("postgres://postgres@127.0.0.1:1/postgres")
            .await
            .unwrap_err()
    };
    assert!(matches!(refused().await, sqlx::Error::Io(_)));
    assert_eq!(status(refused().await), 503);
    assert_eq!(wrapped_status(refused().await), 503);

    // A pool that gave up waiting for a connection.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_millis(200))
        .connect(&app.db.url)
        .await
        .unwrap();
    let held = pool.acquire().await.unwrap();
    let e = pool.acquire().await.unwrap_err();
    assert!(matches!(e, sqlx::Error::PoolTimedOut));
    assert_eq!(wrapped_status(e), 503);
    drop(held);

    // 53300: too many connections (here for a role allowed none).
    let role = format!("i9_no_conn_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!(r#"CREATE ROLE "{role}" LOGIN CONNECTION LIMIT 0"#))
        .execute(app.pool())
        .await
        .unwrap();
    let options = PgConnectOptions::from_str(&app.db.url)
        .unwrap()
        .username(&role);
    let e = PgConnection::connect_with(&options).await.unwrap_err();
    sqlx::query(&format!(r#"DROP ROLE "{role}""#))
        .execute(app.pool())
        .await
        .unwrap();
    assert_eq!(
        e.as_database_error().and_then(|d| d.code()).as_deref(),
        Some("53300"),
        "{e}"
    );
    assert_eq!(wrapped_status(e), 503);

    // And what is not unavailability stays a 500 (or its own status).
    let e = sqlx::query("SELECT * FROM no_such_table")
        .execute(app.pool())
        .await
        .unwrap_err();
    assert!(!is_unavailable(&e));
    assert_eq!(wrapped_status(e), 500);
    let e = sqlx::query(
        "INSERT INTO key_ring (kind, key_id, check_value) VALUES ('data', 7, ''), ('data', 7, '')",
    )
    .execute(app.pool())
    .await
    .unwrap_err();
    assert_eq!(
        e.as_database_error().and_then(|d| d.code()).as_deref(),
        Some("23505")
    );
    // A write that lost a race with another: a conflict, not unavailability.
    assert_eq!(wrapped_status(e), 409);
}

#[tokio::test]
async fn readiness_probes_share_one_rabbitmq_connection() {
    // Through a proxy, and with no relay or worker: every connection the proxy
    // relays is the readiness check's.
    let app = spawn(
        Stack {
            proxy: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    let proxy = app.proxy.as_ref().unwrap();
    assert_eq!(proxy.accepted(), 0, "opened lazily");

    let flood = || async {
        let probes = (0..100).map(|_| {
            let (http, url) = (app.http.clone(), app.url("/readyz"));
            tokio::spawn(async move {
                let r = http.get(url).send().await.unwrap();
                (r.status().as_u16(), r.json::<Value>().await.unwrap())
            })
        });
        let mut answers = Vec::new();
        for p in probes.collect::<Vec<_>>() {
            answers.push(p.await.unwrap());
        }
        answers
    };
    let answers = flood().await;
    assert!(
        answers.iter().all(|(s, _)| *s == 200),
        "{:?}",
        answers.iter().find(|(s, _)| *s != 200)
    );
    assert_eq!(proxy.accepted(), 1, "100 probes, one connection");

    proxy.cut();
    eventually("/readyz reports RabbitMQ down", || async {
        app.http
            .get(app.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status()
            == 503
    })
    .await;
    let r = app.http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"status": "unavailable", "postgres": "ok", "rabbitmq": "unavailable"})
    );
    assert_eq!(proxy.accepted(), 1, "refused while cut");

    proxy.restore();
    eventually("/readyz recovers with RabbitMQ", || async {
        app.http
            .get(app.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status()
            == 200
    })
    .await;
    let answers = flood().await;
    assert!(answers.iter().all(|(s, _)| *s == 200));
    assert_eq!(
        proxy.accepted(),
        2,
        "one reconnection after the cut, shared again"
    );
}

#[tokio::test]
async fn a_relay_whose_link_fails_at_once_backs_off_instead_of_reconnecting_in_a_loop() {
    // A job no queue is bound for: every publish is returned, right after a
    // connection that opened fine. The relay used to reset its backoff on
    // each open, and so reconnect about five times a second.
    let app = spawn(
        Stack {
            proxy: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    sqlx::query(
        "INSERT INTO job_outbox (job_id, kind, payload) VALUES (gen_random_uuid(), 'no_such_kind', '{}')",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let proxy = app.proxy.as_ref().unwrap();
    let relay = tokio::spawn(i9_common::relay::run(
        app.pool().clone(),
        i9_common::relay::RelayConfig::new(proxy.amqp_url(), app.topology.clone()),
        app.stop_signal(),
    ));
    let attempts = || async {
        sqlx::query_scalar::<_, i32>("SELECT attempts FROM job_outbox")
            .fetch_one(app.pool())
            .await
            .unwrap()
    };
    eventually("a first failed publish", || async { attempts().await >= 1 }).await;
    let first = std::time::Instant::now();
    eventually("a fourth failed publish", || async {
        attempts().await >= 4
    })
    .await;
    let elapsed = first.elapsed();
    let (connections, attempts) = (proxy.accepted() as i32, attempts().await);
    relay.abort();
    // This test's topology, declared by the relay, leaves the shared broker
    // (before the assertions, so that a failure leaves nothing behind).
    let conn = i9_common::amqp::connect(&i9_tests::amqp_url())
        .await
        .unwrap();
    app.topology
        .delete(&conn.create_channel().await.unwrap(), &[])
        .await
        .unwrap();

    // Waits of 200, 400 and 800 ms at least between the four: a lower bound,
    // which a slow machine only makes longer.
    assert!(elapsed >= Duration::from_millis(1400), "{elapsed:?}");
    assert!(
        (attempts..=attempts + 1).contains(&connections),
        "one connection per attempt (the next one may be opening): {connections} for {attempts}"
    );
}
