//! `i9-worker`'s checks at start, before it waits for anything: settings
//! that cannot be right end it with one line naming them; development
//! settings outside development are each warned about once.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::{process::Command, time::Duration};

/// Valid keys that are not the development ones.
const DATA_KEY: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
const HASH_KEY: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=";

/// Run `i9-worker` in production (no APP_ENV), with `env`, against a
/// database that is not there (it gives up after a second); its exit code
/// and stderr.
fn worker(env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mail_dir = std::env::temp_dir().join(format!("i9-mail-{}", uuid::Uuid::new_v4().simple()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_i9-worker"))
        .env_remove("APP_ENV")
        .env_remove("DATA_ENCRYPTION_KEYS")
        .env_remove("SSN_HASH_KEYS")
        .env_remove("WORKER_KINDS")
        .env_remove("SMTP_URL")
        .env_remove("RUST_LOG")
        .env_remove("LOG_FORMAT")
        .env("DATA_ENCRYPTION_KEY", DATA_KEY)
        .env("SSN_HASH_KEY", HASH_KEY)
        .env("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none")
        .env("STARTUP_TIMEOUT_SECS", "1")
        .env("MAIL_DIR", &mail_dir)
        .env("PUBLIC_BASE_URL", "https://i9.example")
        // Required outside development (common/src/config/tests.rs).
        .env("EVERIFY_ADAPTER", "simulator")
        // A port of its own: the tests of this file start workers at once,
        // and the default (9090) may be taken.
        .env("WORKER_HTTP_ADDR", "127.0.0.1:0")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "i9-worker runs on");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    i9_tests::logs::keep_stderr("i9-worker", err.as_bytes());
    let _ = std::fs::remove_dir_all(&mail_dir);
    (status.code(), err)
}

/// The WARN lines naming `setting`.
fn warnings_about(stderr: &str, setting: &str) -> usize {
    stderr
        .lines()
        .filter(|l| l.contains(" WARN ") && l.contains(&format!("setting=\"{setting}\"")))
        .count()
}

#[test]
fn outside_development_mail_to_files_and_other_development_settings_are_warned_about_once() {
    let (code, err) = worker(&[
        ("ALLOW_PRIVATE_CALLBACKS", "true"),
        ("PUBLIC_BASE_URL", "http://i9.example"),
    ]);
    assert_eq!(code, Some(1), "{err}");
    for setting in ["SMTP_URL", "ALLOW_PRIVATE_CALLBACKS", "PUBLIC_BASE_URL"] {
        assert_eq!(warnings_about(&err, setting), 1, "{setting}: {err}");
    }
    assert!(
        err.contains("SMTP_URL is not set: no mail is sent")
            && err.contains("live Section 1 or set-password link"),
        "{err}"
    );
    // Nothing about the API's settings.
    assert_eq!(warnings_about(&err, "TRUSTED_PROXIES"), 0, "{err}");
    // In development, nothing at all.
    let (code, err) = worker(&[
        ("APP_ENV", "development"),
        ("ALLOW_PRIVATE_CALLBACKS", "true"),
    ]);
    assert_eq!(code, Some(1), "{err}");
    for setting in ["SMTP_URL", "ALLOW_PRIVATE_CALLBACKS", "PUBLIC_BASE_URL"] {
        assert_eq!(warnings_about(&err, setting), 0, "{setting}: {err}");
    }
}

#[test]
fn settings_that_cannot_be_right_end_the_start_naming_them() {
    for (name, value, expect) in [
        (
            "RETENTION_PROCESSED_JOBS_SECS",
            "60",
            "i9-worker: error: RETENTION_PROCESSED_JOBS_SECS (60) is too short",
        ),
        (
            "WORKER_KINDS",
            ",",
            "i9-worker: error: WORKER_KINDS (or --kinds) names no job kind",
        ),
        (
            "WORKER_KINDS",
            " , ",
            "i9-worker: error: WORKER_KINDS (or --kinds) names no job kind",
        ),
    ] {
        let (code, err) = worker(&[(name, value)]);
        assert_eq!(code, Some(1), "{name}={value:?}: {err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(last.starts_with(expect), "{name}={value:?}: {err}");
        assert!(!err.contains("Postgres"), "refused before any wait: {err}");
    }
    // A retention that covers the schedules passes (and the worker goes on
    // to wait for its database).
    let (code, err) = worker(&[("RETENTION_PROCESSED_JOBS_SECS", "174618")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("Postgres at 127.0.0.1:1"), "{err}");
}
