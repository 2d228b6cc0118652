//! `i9-api` started as an operator starts it: `--help` prints help and exits;
//! a wrong `DATABASE_URL` or a key the data was not written with ends the
//! process with a non-zero code and one line naming the problem.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::{process::Stdio, time::Duration};

use i9_common::{crypto::DataCipher, key_check, Config};
use i9_tests::TestDb;
use tokio::process::Command;

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Run `i9-api` with `env`; fail the test if it has not exited within 60 s
/// (it would be serving instead).
async fn i9_api(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_i9-api"));
    cmd.args(args)
        .env_remove("APP_ENV")
        .env_remove("DATA_ENCRYPTION_KEY")
        .env_remove("SSN_HASH_KEY")
        .env("BIND_ADDR", "127.0.0.1:0")
        .env("API_NO_RELAY", "1")
        .env("RUST_LOG", "info")
        .env_remove("LOG_FORMAT")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("i9-api exited instead of running on")
        .unwrap();
    i9_tests::logs::keep_stderr("i9-api", &out.stderr);
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test]
async fn help_prints_the_settings_and_exits() {
    let run = i9_api(
        &["--help"],
        &[("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none")],
    )
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    for word in [
        "Usage: i9-api",
        "--no-relay",
        "API_NO_RELAY",
        "DATABASE_URL",
        "STARTUP_TIMEOUT_SECS",
    ] {
        assert!(run.stdout.contains(word), "{word} in {}", run.stdout);
    }
    assert!(!run.stderr.contains("not reachable"), "{}", run.stderr);
}

#[tokio::test]
async fn a_wrong_database_url_ends_the_process_naming_host_and_port_but_not_the_password() {
    let run = i9_api(
        &[],
        &[
            ("DATABASE_URL", "postgres://postgres:hunter2@127.0.0.1:1/i9"),
            ("STARTUP_TIMEOUT_SECS", "2"),
        ],
    )
    .await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "i9-api: error: Postgres at 127.0.0.1:1 (database i9) not reachable within"
        ) && last.ends_with("check DATABASE_URL"),
        "{last}"
    );
    let retries = run
        .stderr
        .lines()
        .filter(|l| l.contains("Postgres not reachable yet") && l.contains("127.0.0.1:1"))
        .count();
    assert!(retries >= 1, "each failure is logged: {}", run.stderr);
    assert!(!run.stderr.contains("hunter2") && !run.stdout.contains("hunter2"));
}

#[tokio::test]
async fn a_data_key_the_data_was_not_written_with_ends_the_process_naming_it() {
    let db = TestDb::new().await;
    let dev = DataCipher::from_config(&Config::for_tests(&db.url));
    key_check::verify_or_record(&db.pool, &dev).await.unwrap();

    let run = i9_api(
        &[],
        &[
            ("DATABASE_URL", &db.url),
            (
                "DATA_ENCRYPTION_KEY",
                "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=",
            ),
            ("STARTUP_TIMEOUT_SECS", "10"),
        ],
    )
    .await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("i9-api: error: DATA_ENCRYPTION_KEY is not the key"),
        "{last}"
    );
    assert!(!run.stderr.contains("AQEBAQEB"), "the key is never printed");
}
