//! Keys that are valid but not the ones the data was written with are refused
//! at start, naming the variable and key id: the check itself, and `i9-admin
//! seed` and `migrate` run as the operator runs them. (Rings of several keys:
//! `key_rotation.rs`.)

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::process::Command;

use i9_common::{
    crypto::DataCipher,
    key_check::{verify_or_record, KeyCheck},
    seed,
};
use i9_tests::{fixture, fixture_path, TestDb};
use secrecy::ExposeSecret;

/// Valid keys (32 bytes each), but not the development keys the tests write with.
const OTHER_DATA_KEY: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
const OTHER_HASH_KEY: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=";

fn dev() -> DataCipher {
    DataCipher::from_config(&i9_common::Config::for_tests(""))
}

fn with_data_key(key: [u8; 32]) -> DataCipher {
    let c = i9_common::Config::for_tests("");
    DataCipher::new(&key, c.ssn_hash_keys.current().1.expose_secret())
}

fn with_hash_key(key: &[u8]) -> DataCipher {
    let c = i9_common::Config::for_tests("");
    DataCipher::new(&c.data_keys.current().1.expose_secret().0, key)
}

const WRONG_DATA_KEY: &str =
    "key 1 of DATA_ENCRYPTION_KEYS (or DATA_ENCRYPTION_KEY) is not the key this database's data were written with under id 1";
const WRONG_HASH_KEY: &str =
    "key 1 of SSN_HASH_KEYS (or SSN_HASH_KEY) is not the key this database's SSN hashes were written with under id 1";

/// Keys recorded (one row per key id of each ring).
async fn rows(db: &TestDb) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM key_ring")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_first_start_records_the_keys_and_later_starts_compare() {
    let db = TestDb::new().await;
    assert_eq!(
        verify_or_record(&db.pool, &dev()).await.unwrap(),
        KeyCheck::Recorded
    );
    assert_eq!(
        verify_or_record(&db.pool, &dev()).await.unwrap(),
        KeyCheck::Verified
    );
    assert_eq!(rows(&db).await, 2, "key 1 of each ring");

    let e = verify_or_record(&db.pool, &with_data_key([1; 32]))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(WRONG_DATA_KEY) && !e.contains("SSN_HASH_KEY"),
        "{e}"
    );
    let e = verify_or_record(&db.pool, &with_hash_key(&[2; 32]))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(WRONG_HASH_KEY) && !e.contains("DATA_ENCRYPTION_KEY"),
        "{e}"
    );
    let e = verify_or_record(&db.pool, &DataCipher::new(&[1; 32], &[2; 32]))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(WRONG_DATA_KEY) && e.contains(WRONG_HASH_KEY),
        "{e}"
    );
    assert_eq!(rows(&db).await, 2, "a refused key writes nothing");
}

#[tokio::test]
async fn a_database_written_before_the_check_is_checked_against_its_data() {
    let db = TestDb::new().await;
    seed::load(&db.pool, &dev(), &fixture()).await.unwrap();
    assert_eq!(rows(&db).await, 0, "data, but no check row yet");

    let e = verify_or_record(&db.pool, &with_data_key([1; 32]))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("key 1 of DATA_ENCRYPTION_KEYS (or DATA_ENCRYPTION_KEY) is not the key")
            && e.contains("employees.ssn_ciphertext"),
        "{e}"
    );
    let e = verify_or_record(&db.pool, &with_hash_key(&[2; 32]))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("key 1 of SSN_HASH_KEYS (or SSN_HASH_KEY) is not the key")
            && e.contains("employees.ssn_hash"),
        "{e}"
    );
    assert_eq!(rows(&db).await, 0, "a refused key writes nothing");

    assert_eq!(
        verify_or_record(&db.pool, &dev()).await.unwrap(),
        KeyCheck::Recorded
    );
    assert_eq!(rows(&db).await, 2);
}

/// Run `i9-admin` as an operator would, with the given keys (None: the
/// development keys, which `APP_ENV=development` allows).
fn admin(
    db_url: &str,
    keys: (Option<&str>, Option<&str>),
    args: &[&str],
) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_i9-admin"));
    cmd.args(args)
        .env("DATABASE_URL", db_url)
        .env("APP_ENV", "development")
        .env_remove("DATA_ENCRYPTION_KEYS")
        .env_remove("SSN_HASH_KEYS")
        .env_remove("DATA_ENCRYPTION_KEY_FILE")
        .env_remove("SSN_HASH_KEY_FILE");
    for (name, key) in [("DATA_ENCRYPTION_KEY", keys.0), ("SSN_HASH_KEY", keys.1)] {
        match key {
            Some(k) => cmd.env(name, k),
            None => cmd.env_remove(name),
        };
    }
    // The example organization's callback URL is a local one.
    cmd.env("ALLOW_PRIVATE_CALLBACKS", "true");
    let out = cmd.output().unwrap();
    i9_tests::logs::keep_stderr("i9-admin", &out.stderr);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn seed_and_migrate_refuse_a_key_the_data_was_not_written_with() {
    let db = TestDb::new().await;
    let file = fixture_path();
    let file = file.to_str().unwrap();

    let (ok, out, err) = admin(&db.url, (None, None), &["seed", file]);
    assert!(ok, "{err}");
    assert!(out.contains("keys recorded in key_ring"), "{out}");
    let employees = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM employees")
            .fetch_one(&db.pool)
            .await
            .unwrap()
    };
    let before = employees().await;

    let (ok, out, err) = admin(&db.url, (Some(OTHER_DATA_KEY), None), &["seed", file]);
    assert!(!ok, "refused: {out}");
    assert!(
        err.starts_with(&format!("error: {WRONG_DATA_KEY}")),
        "{err}"
    );
    assert!(out.is_empty(), "nothing seeded: {out}");
    assert!(!err.contains(OTHER_DATA_KEY), "the key is never printed");

    let (ok, _, err) = admin(&db.url, (None, Some(OTHER_HASH_KEY)), &["migrate"]);
    assert!(!ok);
    assert!(err.contains(WRONG_HASH_KEY), "{err}");

    let (ok, out, err) = admin(&db.url, (None, None), &["seed", file]);
    assert!(ok, "{err}");
    assert!(!out.contains("keys recorded"), "already recorded: {out}");
    assert_eq!(employees().await, before);
}
