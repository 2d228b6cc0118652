//! The process registry and what depends on it (docs/operations.md, "Keys
//! and rotation"): `i9-admin rekey` does not mark a key unused while a live
//! process writes under it, nor an SSN hash key while replayable idempotency
//! records need it, and says who; a start whose ring lacks a live process's
//! current key is refused, naming both; `i9-admin keys status` counts the
//! stored values under each key id and lists the live processes; a
//! registration renews its heartbeat, comes back when its row was deleted,
//! and ends with its row; a rekey failing on an SSN another employee holds
//! names both employees, never the SSN.

#![allow(clippy::unwrap_used)] // a test: panics are failures

mod support;

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use i9_common::{
    crypto::DataCipher,
    key_check,
    processes::{Registration, STALE_AFTER},
    rekey::ENCRYPTED_COLUMNS,
    Config,
};
use i9_tests::{eventually, spawn_app, TestDb, ADMIN};
use serde_json::json;
use sqlx::PgPool;
use support::{
    admin, config_with, insert_with, register, DATA_KEY_2, DEV_DATA_KEY, DEV_HASH_KEY, HASH_KEY_2,
};

/// The rings [2, 1] as `i9-admin` reads them.
fn rings_2_1() -> (String, String) {
    (
        format!("2:{DATA_KEY_2},1:{DEV_DATA_KEY}"),
        format!("2:{HASH_KEY_2},1:{DEV_HASH_KEY}"),
    )
}

/// `i9-admin` with the rings [2, 1]; fails the test if it printed a key.
fn admin_2_1(db_url: &str, args: &[&str]) -> (bool, String, String) {
    let (data, hash) = rings_2_1();
    let (ok, out, err) = admin(db_url, &data, &hash, args);
    for key in [DATA_KEY_2, HASH_KEY_2, DEV_DATA_KEY, DEV_HASH_KEY] {
        assert!(
            !out.contains(&key[..12]) && !err.contains(&key[..12]),
            "a key is never printed"
        );
    }
    (ok, out, err)
}

/// Whether `key_ring` marks key `id` of `kind` unused.
async fn unused(pool: &PgPool, kind: &str, id: i64) -> bool {
    sqlx::query_scalar(
        "SELECT unused_since IS NOT NULL FROM key_ring WHERE kind = $1 AND key_id = $2",
    )
    .bind(kind)
    .bind(id)
    .fetch_one(pool)
    .await
    .unwrap()
}

async fn processes(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM processes")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The host and pid a registration recorded.
async fn whereabouts(pool: &PgPool, r: &Registration) -> (String, i64) {
    sqlx::query_as("SELECT host, pid FROM processes WHERE id = $1")
        .bind(r.id())
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A row of a process on another host, as its registration writes it, its
/// last heartbeat `age` seconds ago.
async fn insert_process(pool: &PgPool, binary: &str, host: &str, keys: &[i64], age: i64) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO processes (binary_name, host, pid, started_at, heartbeat_at,
                                data_key_id, data_key_ids, hash_key_id, hash_key_ids)
         VALUES ($1, $2, 4242, now() - interval '1 hour', now() - make_interval(secs => $3),
                 $4[1], $4, $4[1], $4)
         RETURNING id",
    )
    .bind(binary)
    .bind(host)
    .bind(age as f64)
    .bind(keys)
    .fetch_one(pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn rekey_leaves_a_key_in_use_while_a_live_process_writes_under_it() {
    let app = spawn_app().await;
    let pool = app.pool().clone();
    // Step 2: a process with key 2 in its rings, key 1 still current. The
    // first process started with key 2 records it.
    let old = register(&pool, &config_with(&app, &[1, 2], &[1, 2]), "i9-api")
        .await
        .unwrap();
    let recorded: i64 = sqlx::query_scalar("SELECT count(*) FROM key_ring")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(recorded, 4, "keys 1 and 2 of each ring");
    // Step 3 half done: one process restarted with key 2 current; a worker
    // elsewhere not yet (its last heartbeat 40 s ago); one that stopped
    // without deleting its row 2 minutes ago, gone.
    let _new = register(&pool, &config_with(&app, &[2, 1], &[2, 1]), "i9-api")
        .await
        .unwrap();
    insert_process(&pool, "i9-worker", "worker-7", &[1, 2], 40).await;
    let gone = insert_process(&pool, "i9-worker", "worker-9", &[1], 120).await;

    let (ok, out, err) = admin_2_1(&app.db.url, &["rekey"]);
    assert!(!ok, "exits non-zero while a key is held:\n{out}");
    assert!(
        out.contains("every value is under data key 2 and SSN hash key 2"),
        "{out}"
    );
    assert!(!out.contains("no stored value uses key(s) 1"), "{out}");
    assert!(!unused(&pool, "data", 1).await && !unused(&pool, "ssn_hash", 1).await);
    for key in [
        "key 1 of DATA_ENCRYPTION_KEYS (or DATA_ENCRYPTION_KEY)",
        "key 1 of SSN_HASH_KEYS (or SSN_HASH_KEY)",
    ] {
        assert!(
            out.contains(&format!(
                "{key} is still the current key of 2 live process(es), which write under it:"
            )),
            "{out}"
        );
    }
    let (host, pid) = whereabouts(&pool, &old).await;
    assert!(
        out.contains(&format!("  i9-api on {host} (pid {pid}, last heartbeat ")),
        "{out}"
    );
    let worker = out
        .lines()
        .find(|l| l.starts_with("  i9-worker on worker-7 (pid 4242, last heartbeat "))
        .unwrap_or_else(|| panic!("the worker is named:\n{out}"));
    let age: u64 = worker
        .split("last heartbeat ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (40..STALE_AFTER.as_secs()).contains(&age),
        "how long since its heartbeat: {worker}"
    );
    assert!(!out.contains("worker-9"), "a process gone is not named");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM processes WHERE id = $1")
        .bind(gone)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(left, 0, "whoever looks deletes the row of a process gone");
    assert!(
        out.contains(
            "  restart them with key 2 current in DATA_ENCRYPTION_KEYS (first in the ring), then \
             run rekey again"
        ),
        "{out}"
    );
    assert!(
        err.contains(
            "error: key 1 of DATA_ENCRYPTION_KEYS (or DATA_ENCRYPTION_KEY), key 1 of \
             SSN_HASH_KEYS (or SSN_HASH_KEY) still in use (above): not marked unused"
        ),
        "{err}"
    );

    // Both restart with key 2 current: the old process ends (its row goes),
    // the worker elsewhere too.
    old.end().await;
    sqlx::query("DELETE FROM processes WHERE host = 'worker-7'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(processes(&pool).await, 1, "the process with key 2 current");
    let (ok, out, err) = admin_2_1(&app.db.url, &["rekey"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("no stored value uses key(s) 1 of DATA_ENCRYPTION_KEYS any more")
            && out.contains("no stored value uses key(s) 1 of SSN_HASH_KEYS any more"),
        "{out}"
    );
    assert!(unused(&pool, "data", 1).await && unused(&pool, "ssn_hash", 1).await);
    let (ok, status, err) = admin_2_1(&app.db.url, &["keys", "status"]);
    assert!(ok, "{err}");
    assert_eq!(
        status
            .lines()
            .filter(|l| l.starts_with("  key 1: in ring, unused since "))
            .count(),
        2,
        "{status}"
    );
}

#[tokio::test]
async fn a_start_whose_ring_lacks_a_live_processs_current_key_is_refused() {
    let app = spawn_app().await;
    let pool = app.pool().clone();
    let old = register(&pool, &config_with(&app, &[1, 2], &[1, 2]), "i9-worker")
        .await
        .unwrap();
    let (host, pid) = whereabouts(&pool, &old).await;
    let holder = format!(": i9-worker on {host} (pid {pid}, last heartbeat ");

    let e = register(&pool, &config_with(&app, &[2], &[2]), "i9-api")
        .await
        .unwrap_err()
        .to_string();
    for (key, variable) in [
        (
            "key 1 of DATA_ENCRYPTION_KEYS (or DATA_ENCRYPTION_KEY)",
            "DATA_ENCRYPTION_KEYS",
        ),
        ("key 1 of SSN_HASH_KEYS (or SSN_HASH_KEY)", "SSN_HASH_KEYS"),
    ] {
        assert!(
            e.contains(&format!(
                "{key} is the current key of live processes, which {variable} lacks: this \
                 process could not read what they write. Keep key 1 in the ring until they run \
                 with another current key (one without a heartbeat for 90 s counts as gone){holder}"
            )),
            "{e}"
        );
    }
    assert!(
        !e.contains("may still use key 1"),
        "the processes are named instead: {e}"
    );
    assert_eq!(
        processes(&pool).await,
        1,
        "a refused start registers nothing"
    );
    // `i9-admin` checks the same.
    let only_2 = (format!("2:{DATA_KEY_2}"), format!("2:{HASH_KEY_2}"));
    let (ok, _, err) = admin(&app.db.url, &only_2.0, &only_2.1, &["rekey"]);
    assert!(!ok && err.contains(&holder), "{err}");

    // With key 1 in the ring, not current, a process starts.
    let _both = register(&pool, &config_with(&app, &[2, 1], &[2, 1]), "i9-api")
        .await
        .unwrap();
    // The old process stops without deleting its row: 90 s after its last
    // heartbeat it holds nothing. The data still uses key 1, though.
    sqlx::query(
        "UPDATE processes SET heartbeat_at = now() - make_interval(secs => $2) WHERE id = $1",
    )
    .bind(old.id())
    .bind(STALE_AFTER.as_secs_f64() + 1.0)
    .execute(&pool)
    .await
    .unwrap();
    drop(old);
    let e = register(&pool, &config_with(&app, &[2], &[2]), "i9-api")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("this database's data may still use key 1, which DATA_ENCRYPTION_KEYS lacks")
            && !e.contains("live processes"),
        "{e}"
    );
    let (ok, out, err) = admin_2_1(&app.db.url, &["rekey"]);
    assert!(ok, "{out}{err}");
    let _only_2 = register(&pool, &config_with(&app, &[2], &[2]), "i9-api")
        .await
        .unwrap();
    assert_eq!(
        processes(&pool).await,
        2,
        "the two with key 2 current; the row of the one gone is deleted"
    );
}

/// The `count` printed under `key N:` of `variable`'s section for `column`.
fn counted(out: &str, variable: &str, key: u32, column: &str) -> i64 {
    let section = out
        .split_once(&format!("{variable} (this environment's ring"))
        .unwrap_or_else(|| panic!("no section for {variable}:\n{out}"))
        .1;
    let block = section
        .split_once(&format!("\n  key {key}: "))
        .unwrap_or_else(|| panic!("no key {key} in {variable}:\n{out}"))
        .1;
    block
        .lines()
        .skip(1) // the key's state
        .take_while(|l| !l.starts_with("  key ") && l.starts_with("  "))
        .find(|l| l.split_whitespace().next() == Some(column))
        .unwrap_or_else(|| panic!("no {column} under key {key} of {variable}:\n{out}"))
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn keys_status_counts_the_values_under_each_key_and_lists_the_live_processes() {
    let app = spawn_app().await;
    let pool = app.pool().clone();
    let config = config_with(&app, &[2, 1], &[2, 1]);
    let new = DataCipher::from_config(&config);
    let api = register(&pool, &config, "i9-api").await.unwrap();
    let (host, pid) = whereabouts(&pool, &api).await;
    // One employee written under key 2; everything else under key 1.
    let location = app.group_id("Portland Warehouse").await;
    let mut conn = pool.acquire().await.unwrap();
    insert_with(&mut conn, &new, location, "678-90-1234")
        .await
        .unwrap();
    drop(conn);
    // Idempotency records: one made now under hash key 2, two an hour ago
    // under key 1, one 25 hours ago under key 1 (no longer replayable).
    let admin_id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE login = 'admin'")
        .fetch_one(&pool)
        .await
        .unwrap();
    for (n, (cipher, age)) in [
        (&new, "0 hours"),
        (&app.cipher, "1 hour"),
        (&app.cipher, "1 hour"),
        (&app.cipher, "25 hours"),
    ]
    .into_iter()
    .enumerate()
    {
        sqlx::query(
            "INSERT INTO idempotency_keys (user_id, idempotency_key, request_path, request_hash, created_at)
             VALUES ($1, $2, 'POST /v1/employees', $3, now() - $4::interval)",
        )
        .bind(admin_id)
        .bind(format!("key-{n}"))
        .bind(cipher.request_fingerprint(format!("request {n}").as_bytes()))
        .bind(age)
        .execute(&pool)
        .await
        .unwrap();
    }
    let last_expires: DateTime<Utc> = sqlx::query_scalar(
        "SELECT created_at + interval '24 hours' FROM idempotency_keys WHERE idempotency_key = 'key-2'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();

    let (ok, out, err) = admin_2_1(&app.db.url, &["keys", "status"]);
    assert!(ok, "{err}");
    assert!(out.contains("  key 2: current\n"), "{out}");
    assert!(out.contains("  key 1: in ring\n"), "{out}");
    for c in ENCRYPTED_COLUMNS {
        let stored: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM {} WHERE {} IS NOT NULL",
            c.table, c.column
        ))
        .fetch_one(&pool)
        .await
        .unwrap();
        let under_2 = i64::from(c.name() == "employees.ssn_ciphertext");
        let name = c.name();
        assert_eq!(
            counted(&out, "DATA_ENCRYPTION_KEYS", 2, &name),
            under_2,
            "{name}"
        );
        assert_eq!(
            counted(&out, "DATA_ENCRYPTION_KEYS", 1, &name),
            stored - under_2,
            "{name}"
        );
    }
    let hashes: i64 =
        sqlx::query_scalar("SELECT count(*) FROM employees WHERE ssn_hash IS NOT NULL")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(hashes > 1);
    let hash = "SSN_HASH_KEYS";
    assert_eq!(counted(&out, hash, 2, "employees.ssn_hash"), 1);
    assert_eq!(counted(&out, hash, 1, "employees.ssn_hash"), hashes - 1);
    assert_eq!(counted(&out, hash, 2, "idempotency_keys.request_hash"), 1);
    assert_eq!(counted(&out, hash, 1, "idempotency_keys.request_hash"), 2);
    assert!(
        out.contains(&format!(
            "the last replayable until {}",
            last_expires.to_rfc3339_opts(SecondsFormat::Secs, true)
        )),
        "{out}"
    );
    assert!(
        out.contains("live processes (a heartbeat within 90 s): 1"),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("  i9-api "))
        .unwrap_or_else(|| panic!("the process is listed:\n{out}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[1], host, "{line}");
    assert_eq!(fields[2], pid.to_string(), "{line}");
    assert_eq!(
        fields[fields.len() - 4..],
        ["2", "(2,1)", "2", "(2,1)"],
        "the data and hash keys, current first: {line}"
    );
    assert!(!out.contains("678-90-1234") && !out.contains("678901234"));
}

#[tokio::test]
async fn a_registration_renews_its_heartbeat_comes_back_when_deleted_and_ends_with_its_row() {
    let db = TestDb::new().await;
    let config = Config::for_tests(&db.url);
    let cipher = DataCipher::from_config(&config);
    key_check::verify_or_record(&db.pool, &cipher)
        .await
        .unwrap();
    let registration = Registration::start(
        &db.pool,
        "i9-worker",
        &config.host_name,
        &cipher,
        Duration::from_millis(50),
    )
    .await
    .unwrap();
    let row: (String, i64, i64, Vec<i64>, i64, Vec<i64>) = sqlx::query_as(
        "SELECT binary_name, pid, data_key_id, data_key_ids, hash_key_id, hash_key_ids
         FROM processes",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        row,
        (
            "i9-worker".to_owned(),
            i64::from(std::process::id()),
            1,
            vec![1],
            1,
            vec![1]
        )
    );

    sqlx::query("UPDATE processes SET heartbeat_at = now() - interval '1 minute'")
        .execute(&db.pool)
        .await
        .unwrap();
    eventually("the heartbeat renews the row", || async {
        sqlx::query_scalar::<_, bool>(
            "SELECT heartbeat_at > now() - interval '30 seconds' FROM processes",
        )
        .fetch_one(&db.pool)
        .await
        .unwrap()
    })
    .await;

    // Its row deleted as if it had paused past 90 s, and meanwhile its
    // current keys marked unused: it registers again, and they are in use.
    // Both in one transaction, as `rekey` would see them: a heartbeat
    // between the two statements would register again before the keys were
    // marked, and the test would then find them marked.
    let mut tx = db.pool.begin().await.unwrap();
    sqlx::query("DELETE FROM processes")
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("UPDATE key_ring SET unused_since = now()")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    eventually("it registers again, under the same id", || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM processes WHERE id = $1")
            .bind(registration.id())
            .fetch_one(&db.pool)
            .await
            .unwrap()
            == 1
    })
    .await;
    let marked: i64 =
        sqlx::query_scalar("SELECT count(*) FROM key_ring WHERE unused_since IS NOT NULL")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(marked, 0, "its current keys are in use again");

    registration.end().await;
    assert_eq!(
        processes(&db.pool).await,
        0,
        "a clean shutdown deletes the row"
    );
}

#[tokio::test]
async fn rekey_names_both_employees_holding_one_ssn_never_the_ssn() {
    let app = spawn_app().await;
    let pool = app.pool().clone();
    let location = app.group_id("Portland Warehouse").await;
    // A writer restarted with hash key 2 current, and one never given key 2
    // (step 2 skipped): neither finds the other's hash of the same number.
    let new = DataCipher::from_config(&config_with(&app, &[2, 1], &[2, 1]));
    let old = DataCipher::from_config(&config_with(&app, &[1], &[1]));
    let mut conn = pool.acquire().await.unwrap();
    let first = insert_with(&mut conn, &new, location, "678-90-1234")
        .await
        .unwrap();
    let second = insert_with(&mut conn, &old, location, "678-90-1234")
        .await
        .unwrap();
    drop(conn);

    let (ok, out, err) = admin_2_1(&app.db.url, &["rekey"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!(
            "  failed: employees {second}: employee {first} holds the same SSN: resolve the \
             duplicate by hand\n"
        )),
        "{out}"
    );
    assert!(out.contains("employees.ssn_hash: 1 value(s) still under an older key"));
    assert!(err.contains("1 value(s) could not be rewritten"), "{err}");
    for text in [&out, &err] {
        assert!(!text.contains("678-90-1234") && !text.contains("678901234"));
    }
}

#[tokio::test]
async fn rekey_keeps_a_hash_key_while_replayable_idempotency_records_need_it() {
    let app = spawn_app().await;
    let pool = app.pool().clone();
    let token = app.token(ADMIN).await;
    let portland = app.group_id("Portland Warehouse").await;
    // A create with an Idempotency-Key: its fingerprint under hash key 1.
    let r = app
        .http
        .post(app.url("/v1/employees"))
        .bearer_auth(&token)
        .header("Idempotency-Key", "retry-me")
        .json(
            &json!({"firstName": "Re", "lastName": "Try", "locationId": portland,
                      "socialSecurityNumber": "678-90-1234"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let expires: DateTime<Utc> =
        sqlx::query_scalar("SELECT created_at + interval '24 hours' FROM idempotency_keys")
            .fetch_one(&pool)
            .await
            .unwrap();

    let (ok, out, err) = admin_2_1(&app.db.url, &["rekey"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("every value is under data key 2 and SSN hash key 2"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "key 1 of SSN_HASH_KEYS (or SSN_HASH_KEY) made the fingerprints of 1 idempotency \
             record(s) still replayable: a retry matches its record only while the ring has the \
             key; the last expires at {} (UTC): run rekey again after that",
            expires.to_rfc3339_opts(SecondsFormat::Secs, true)
        )),
        "{out}"
    );
    assert!(
        err.contains("key 1 of SSN_HASH_KEYS (or SSN_HASH_KEY) still in use"),
        "{err}"
    );
    assert!(unused(&pool, "data", 1).await, "the data key is free");
    assert!(!unused(&pool, "ssn_hash", 1).await);

    // A day later the record is no longer replayable.
    sqlx::query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'")
        .execute(&pool)
        .await
        .unwrap();
    let (ok, out, err) = admin_2_1(&app.db.url, &["rekey"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("no stored value uses key(s) 1 of SSN_HASH_KEYS any more"),
        "{out}"
    );
    assert!(unused(&pool, "ssn_hash", 1).await);
}

/// What an operator trial found: a ring whose current key a live process
/// lacks, or whose current key `rekey` retired, would write what others
/// cannot read (or find). Such a start, `rekey` and any `i9-admin` command
/// are refused before they write anything, naming the processes or the key.
#[tokio::test]
async fn a_current_key_that_live_processes_lack_or_rekey_retired_is_refused_before_any_write() {
    let app = spawn_app().await;
    let pool = app.pool().clone();
    let dev = DataCipher::from_config(&config_with(&app, &[1], &[1]));
    let mut conn = pool.acquire().await.unwrap();
    let employee = insert_with(&mut conn, &dev, 3, "123-45-6781")
        .await
        .unwrap();
    drop(conn);
    let stored = |pool: PgPool| async move {
        sqlx::query_as::<_, (Vec<u8>, Vec<u8>)>(
            "SELECT ssn_ciphertext, ssn_hash FROM employees WHERE id = $1",
        )
        .bind(employee)
        .fetch_one(&pool)
        .await
        .unwrap()
    };
    let before = stored(pool.clone()).await;

    // A worker elsewhere still runs with key 1 alone: step 2 was skipped.
    insert_process(&pool, "i9-worker", "worker-3", &[1], 5).await;
    let err = register(&pool, &config_with(&app, &[2, 1], &[2, 1]), "i9-api")
        .await
        .unwrap_err()
        .to_string();
    for key in [
        "key 2 of DATA_ENCRYPTION_KEYS is first in the ring, so this process would write under \
         it, but live processes do not have it in their ring and could not read what it writes",
        "key 2 of SSN_HASH_KEYS is first in the ring, so this process would write under it, but \
         live processes do not have it in their ring and could not find",
    ] {
        assert!(err.contains(key), "{err}");
    }
    assert!(err.contains("i9-worker on worker-3 (pid 4242"), "{err}");
    // rekey is refused the same way, and rewrites nothing, records nothing.
    let (ok, out, err) = admin_2_1(&app.db.url, &["rekey"]);
    assert!(!ok && !out.contains("re-encrypted"), "{out}\n{err}");
    assert!(err.contains("i9-worker on worker-3"), "{err}");
    assert_eq!(stored(pool.clone()).await, before, "no value rewritten");
    let key_2_rows: i64 = sqlx::query_scalar("SELECT count(*) FROM key_ring WHERE key_id = 2")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(key_2_rows, 0, "key 2 not recorded by a refused start");

    // Done right: the worker restarted with key 2 in its ring (step 2)...
    sqlx::query("DELETE FROM processes")
        .execute(&pool)
        .await
        .unwrap();
    let step2 = register(&pool, &config_with(&app, &[1, 2], &[1, 2]), "i9-worker")
        .await
        .unwrap();
    let step3 = register(&pool, &config_with(&app, &[2, 1], &[2, 1]), "i9-api")
        .await
        .unwrap();
    step2.end().await;
    // ... and, once every process has key 2 current, rekey retires key 1.
    let (ok, out, err) = admin_2_1(&app.db.url, &["rekey"]);
    assert!(ok, "{out}\n{err}");
    assert!(unused(&pool, "data", 1).await && unused(&pool, "ssn_hash", 1).await);
    assert_ne!(stored(pool.clone()).await, before, "rewritten under key 2");

    // An old configuration comes back with key 1 first: refused, and key 1
    // stays retired; so is an i9-admin command run with a stale ring.
    let err = register(&pool, &config_with(&app, &[1, 2], &[1, 2]), "i9-worker")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "key 1 of DATA_ENCRYPTION_KEYS (or DATA_ENCRYPTION_KEY) is first in the ring, so this \
             process would write under it, but `i9-admin rekey` retired it"
        ),
        "{err}"
    );
    assert!(unused(&pool, "data", 1).await && unused(&pool, "ssn_hash", 1).await);
    let secret_before: Vec<u8> = sqlx::query_scalar(
        "SELECT signing_secret_ciphertext FROM oauth_clients WHERE client_id = 'greenhouse-ats'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let (ok, out, err) = admin(
        &app.db.url,
        &format!("1:{DEV_DATA_KEY},2:{DATA_KEY_2}"),
        &format!("2:{HASH_KEY_2},1:{DEV_HASH_KEY}"),
        &["partners", "rotate-secret", "greenhouse-ats"],
    );
    assert!(!ok && !out.contains("whsec_"), "{out}\n{err}");
    assert!(err.contains("retired it"), "{err}");
    let secret_after: Vec<u8> = sqlx::query_scalar(
        "SELECT signing_secret_ciphertext FROM oauth_clients WHERE client_id = 'greenhouse-ats'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(secret_after, secret_before, "nothing written");
    step3.end().await;
}
