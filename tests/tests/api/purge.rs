//! The worker's purge: rows that only matter for a while go once their
//! retention is over, exactly those, and records never do
//! (docs/operations.md, "Purging").

use std::time::Duration;

use i9_tests::{spawn_app, TestApp};
use i9_workers::purge::{purge, purge_if_first, Purged, Retention, LOCK_KEY};
use sqlx::Executor;
use uuid::Uuid;

async fn exec(app: &TestApp, sql: &str) {
    app.pool().execute(sql).await.unwrap();
}

async fn count(app: &TestApp, table: &str) -> i64 {
    // Table names come from this file only.
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(app.pool())
        .await
        .unwrap()
}

/// Old and new rows of every purged table: for each, the old ones are the
/// first `n` the purge must delete.
async fn seed_rows(app: &TestApp) {
    let admin: i64 = sqlx::query_scalar("SELECT id FROM users WHERE login = 'admin'")
        .fetch_one(app.pool())
        .await
        .unwrap();
    let client: i64 =
        sqlx::query_scalar("SELECT id FROM oauth_clients WHERE client_id = 'acme-hr-portal'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    // Sign-ins: an old one with no token left (goes), an old one with a live
    // refresh token (stays), a new one with no token (stays: it may still refresh).
    let (old_empty, old_live, new_empty) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    for (grant, age) in [
        (old_empty, "30 days"),
        (old_live, "30 days"),
        (new_empty, "1 hour"),
    ] {
        sqlx::query(
            "INSERT INTO oauth_grants (id, client_id, user_id, scopes, created_at)
             VALUES ($1, $2, $3, ARRAY['read'], now() - $4::interval)",
        )
        .bind(grant)
        .bind(client)
        .bind(admin)
        .bind(age)
        .execute(app.pool())
        .await
        .unwrap();
    }
    for (table, expires) in [
        ("access_tokens", "now() - interval '1 minute'"),
        ("access_tokens", "now() + interval '1 hour'"),
        ("refresh_tokens", "now() - interval '1 minute'"),
        ("refresh_tokens", "now() + interval '1 day'"),
    ] {
        sqlx::query(&format!(
            "INSERT INTO {table} (token_hash, grant_id, scopes, expires_at)
             VALUES ($1, $2, ARRAY['read'], {expires})"
        ))
        .bind(Uuid::new_v4().as_bytes().to_vec())
        .bind(old_live)
        .execute(app.pool())
        .await
        .unwrap();
    }
    for expires in ["now() - interval '1 minute'", "now() + interval '1 hour'"] {
        sqlx::query(&format!(
            "INSERT INTO password_set_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, {expires})"
        ))
        .bind(Uuid::new_v4().as_bytes().to_vec())
        .bind(admin)
        .execute(app.pool())
        .await
        .unwrap();
    }
    for expires in ["now() - interval '1 minute'", "now() + interval '1 hour'"] {
        sqlx::query(&format!(
            "INSERT INTO account_sessions (token_hash, user_id, expires_at) VALUES ($1, $2, {expires})"
        ))
        .bind(Uuid::new_v4().as_bytes().to_vec())
        .bind(admin)
        .execute(app.pool())
        .await
        .unwrap();
    }
    for age in ["25 hours", "1 hour"] {
        sqlx::query(
            "INSERT INTO idempotency_keys (user_id, idempotency_key, request_path, request_hash, created_at)
             VALUES ($1, $2, 'POST /v1/employees', '\\x00', now() - $3::interval)",
        )
        .bind(admin)
        .bind(format!("key-{age}"))
        .bind(age)
        .execute(app.pool())
        .await
        .unwrap();
    }
    // A partner's replaced signing secret whose overlap ended (goes), one still signing (stays).
    exec(
        app,
        "INSERT INTO previous_signing_secrets (oauth_client_id, secret_ciphertext, valid_until)
         SELECT id, '\\x02', t FROM oauth_clients,
                (VALUES (now() - interval '1 minute'), (now() + interval '1 day')) v(t)
         WHERE client_id = 'greenhouse-ats'",
    )
    .await;
    // Throttle rows: every failure forgotten and no delay (goes); failures
    // not yet forgotten, or a delay still running (stay).
    exec(
        app,
        "INSERT INTO throttle
           (key, kind, failures, level, updated_at, blocked_until, forgotten_at) VALUES
           ('\\x01', 'username', 3, 3, now() - interval '2 hours', NULL, now() - interval '1 hour'),
           ('\\x02', 'address', 3, 3, now(), NULL, now() + interval '36 seconds'),
           ('\\x03', 'address', 9, 9, now() - interval '2 hours', now() + interval '1 minute', now() - interval '1 minute'),
           ('\\x04', 'address', 9, 9, now() - interval '2 hours', now() - interval '90 minutes', now() - interval '1 hour')",
    )
    .await;
    // Done long ago, a claim abandoned long ago (both go); done now, a live claim (stay).
    for (done, claimed) in [
        ("now() - interval '31 days'", "NULL"),
        ("NULL", "now() - interval '31 days'"),
        ("now()", "NULL"),
        ("NULL", "now() + interval '1 minute'"),
    ] {
        sqlx::query(&format!(
            "INSERT INTO processed_jobs (job_id, kind, processed_at, claimed_until)
             VALUES ($1, 'send_login_email', {done}, {claimed})"
        ))
        .bind(Uuid::new_v4())
        .execute(app.pool())
        .await
        .unwrap();
    }
    // A process without a heartbeat for 2 minutes (goes: it counts as gone
    // after 90 s), one with a heartbeat 10 s ago (stays).
    exec(
        app,
        "INSERT INTO processes (binary_name, host, pid, heartbeat_at, data_key_id, data_key_ids,
                                hash_key_id, hash_key_ids) VALUES
           ('i9-worker', 'gone', 1, now() - interval '2 minutes', 1, '{1}', 1, '{1}'),
           ('i9-api', 'live', 2, now() - interval '10 seconds', 1, '{1}', 1, '{1}')",
    )
    .await;
    // Published long ago (goes); published now, and never published (stay).
    for published in ["now() - interval '8 days'", "now()", "NULL"] {
        sqlx::query(&format!(
            "INSERT INTO job_outbox (job_id, kind, payload, created_at, published_at)
             VALUES ($1, 'create_i9', '{{}}', now() - interval '9 days', {published})"
        ))
        .bind(Uuid::new_v4())
        .execute(app.pool())
        .await
        .unwrap();
    }
}

fn retention() -> Retention {
    Retention {
        interval: Duration::from_secs(600),
        idempotency: Duration::from_secs(24 * 3600),
        processed_jobs: Duration::from_secs(30 * 24 * 3600),
        outbox: Duration::from_secs(7 * 24 * 3600),
        refresh_tokens: Duration::from_secs(14 * 24 * 3600),
    }
}

#[tokio::test]
async fn a_purge_deletes_exactly_the_rows_past_their_retention() {
    let app = spawn_app().await;
    // Wipe what the example organisation's seeding left, so counts are exact.
    for table in [
        "access_tokens",
        "refresh_tokens",
        "oauth_grants",
        "password_set_tokens",
        "account_sessions",
        "previous_signing_secrets",
        "idempotency_keys",
        "throttle",
        "processed_jobs",
        "job_outbox",
        "processes",
    ] {
        exec(&app, &format!("DELETE FROM {table}")).await;
    }
    seed_rows(&app).await;
    let employees = count(&app, "employees").await;
    let audit = count(&app, "audit_log").await;

    let purged = purge(app.pool(), &retention()).await.unwrap();
    assert_eq!(
        purged,
        Purged::from([
            ("idempotency_keys", 1),
            ("access_tokens", 1),
            ("refresh_tokens", 1),
            ("oauth_grants", 1),
            ("password_set_tokens", 1),
            ("account_sessions", 1),
            ("previous_signing_secrets", 1),
            ("throttle", 2),
            ("processed_jobs", 2),
            ("job_outbox", 1),
            ("processes", 1),
        ])
    );
    for (table, left) in [
        ("idempotency_keys", 1),
        ("access_tokens", 1),
        ("refresh_tokens", 1),
        ("oauth_grants", 2),
        ("password_set_tokens", 1),
        ("account_sessions", 1),
        ("previous_signing_secrets", 1),
        ("throttle", 2),
        ("processed_jobs", 2),
        ("job_outbox", 2),
        ("processes", 1),
    ] {
        assert_eq!(count(&app, table).await, left, "{table}");
    }
    let unpublished: i64 =
        sqlx::query_scalar("SELECT count(*) FROM job_outbox WHERE published_at IS NULL")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(unpublished, 1, "a job not yet published is never purged");
    assert_eq!(count(&app, "employees").await, employees);
    assert_eq!(count(&app, "audit_log").await, audit);

    // A second round finds nothing more.
    let again = purge(app.pool(), &retention()).await.unwrap();
    assert_eq!(again.values().sum::<u64>(), 0, "{again:?}");
}

#[tokio::test]
async fn one_worker_purges_at_a_time() {
    let app = spawn_app().await;
    seed_rows(&app).await;
    let mut holder = app.pool().acquire().await.unwrap();
    let lock: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(LOCK_KEY)
        .fetch_one(&mut *holder)
        .await
        .unwrap();
    assert!(lock);
    assert_eq!(
        purge_if_first(app.pool(), &retention()).await.unwrap(),
        None,
        "another worker is purging"
    );
    assert_eq!(count(&app, "throttle").await, 4, "nothing purged");
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(LOCK_KEY)
        .execute(&mut *holder)
        .await
        .unwrap();
    let purged = purge_if_first(app.pool(), &retention()).await.unwrap();
    assert_eq!(purged.map(|p| p["throttle"]), Some(2));
}
