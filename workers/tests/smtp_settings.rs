//! `i9-worker` refuses, at once and before waiting for anything, an
//! `SMTP_URL` that would send its password without TLS (finding 9 of issue
//! 8): one line naming the settings, never the password.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::{process::Command, time::Duration};

fn worker(smtp_url: &str, extra: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_i9-worker"));
    cmd.env("SMTP_URL", smtp_url)
        // Nothing listens here: a worker that got as far as waiting for its
        // database would wait STARTUP_TIMEOUT_SECS and say so instead.
        .env("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none")
        .env("STARTUP_TIMEOUT_SECS", "600")
        .env("APP_ENV", "development")
        .env_remove("SMTP_ALLOW_PLAINTEXT_AUTH")
        .env_remove("SMTP_CA_FILE")
        .envs(extra.iter().copied());
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return (status.code(), err);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return (None, "still running".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn credentials_without_tls_stop_the_worker_naming_the_settings() {
    let (code, err) = worker("smtp://mailer:hunter2-pw@127.0.0.1:2525", &[]);
    assert_eq!(code, Some(1), "{err}");
    let line = err.trim_end();
    assert_eq!(line.lines().count(), 1, "{err}");
    assert!(
        line.starts_with("i9-worker: error: SMTP_URL carries a user name and password but no TLS"),
        "{err}"
    );
    assert!(
        line.contains("smtps://") && line.contains("tls=required"),
        "{err}"
    );
    assert!(line.contains("SMTP_ALLOW_PLAINTEXT_AUTH=true"), "{err}");
    assert!(!err.contains("hunter2-pw"), "{err}");

    // STARTTLS only if offered is no protection either.
    let (code, err) = worker(
        "smtp://mailer:hunter2-pw@127.0.0.1:2525?tls=opportunistic",
        &[],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("SMTP_ALLOW_PLAINTEXT_AUTH"), "{err}");

    // With the opt-out the mail setting passes, and the worker goes on to
    // wait for its database (which is not there).
    let (code, err) = worker(
        "smtp://mailer:hunter2-pw@127.0.0.1:2525",
        &[
            ("SMTP_ALLOW_PLAINTEXT_AUTH", "true"),
            ("STARTUP_TIMEOUT_SECS", "1"),
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("Postgres") && !err.contains("SMTP_URL"),
        "{err}"
    );
    assert!(!err.contains("hunter2-pw"), "{err}");
}
