//! `i9-api` started as an operator starts it: `--help` prints help and exits;
//! a wrong `DATABASE_URL`, missing keys, the development keys outside
//! `APP_ENV=development`, or a key the data was not written with end the
//! process with a non-zero code and one line naming the problem; Postgres
//! is reached over TLS, and TLS that cannot work ends the start at once;
//! development settings outside development are each warned about once.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::{process::Stdio, time::Duration};

use secrecy::ExposeSecret;
use sqlx::Connection;
use tokio::io::{AsyncBufReadExt, BufReader};

use i9_common::{crypto::DataCipher, db, key_check, startup, Config};
use i9_tests::{private_postgres::PrivatePostgres, TestDb};
use tokio::process::Command;

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// The development keys, as published in `common/src/keys.rs`.
const DEV_DATA_KEY: &str = "ZGV2LW9ubHktZGF0YS1lbmNyeXB0aW9uLWtleS0zMmI=";
const DEV_HASH_KEY: &str = "ZGV2LW9ubHktc3NuLXNlYXJjaC1oYXNoLWtleS0zMmJ5dGU=";
/// A valid key that is neither.
const REAL_KEY: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";

/// `i9-api` with no key setting from the test's own environment, and
/// `APP_ENV=development` unless `env` says otherwise (an empty value is unset).
/// `EVERIFY_ADAPTER=simulator` unless `env` says otherwise: outside
/// development the start also requires it, a rule of its own (tested in
/// common/src/config/tests.rs), which these tests of other settings set aside.
fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    configure(Command::new(env!("CARGO_BIN_EXE_i9-api")), args, env)
}

/// `i9-api` started by `sh -c "<shell>; exec i9-api"` (to set a limit first).
fn command_after(shell: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("{shell} && exec \"$0\""))
        .arg(env!("CARGO_BIN_EXE_i9-api"));
    configure(cmd, &[], env)
}

fn configure(mut cmd: Command, args: &[&str], env: &[(&str, &str)]) -> Command {
    cmd.args(args).env("APP_ENV", "development");
    for ring in ["DATA_ENCRYPTION_KEY", "SSN_HASH_KEY"] {
        for name in [ring.to_owned(), format!("{ring}S")] {
            cmd.env_remove(&name).env_remove(format!("{name}_FILE"));
        }
    }
    cmd.env("BIND_ADDR", "127.0.0.1:0")
        .env("EVERIFY_ADAPTER", "simulator")
        .env("API_NO_RELAY", "1")
        .env("RUST_LOG", "info")
        .env_remove("LOG_FORMAT")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Run `i9-api` with `env`; fail the test if it has not exited within 60 s
/// (it would be serving instead).
async fn i9_api(args: &[&str], env: &[(&str, &str)]) -> Run {
    run_to_exit(command(args, env)).await
}

async fn run_to_exit(mut cmd: Command) -> Run {
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
        last.starts_with(
            "i9-api: error: key 1 of DATA_ENCRYPTION_KEYS (or DATA_ENCRYPTION_KEY) is not the key"
        ),
        "{last}"
    );
    assert!(!run.stderr.contains("AQEBAQEB"), "the key is never printed");
}

/// The one line an `i9-api` that refused to start printed, after checking it
/// exited with 1 and printed no key.
fn refusal(run: &Run) -> &str {
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    for key in [DEV_DATA_KEY, DEV_HASH_KEY, REAL_KEY] {
        assert!(!run.stderr.contains(&key[..12]), "a key is never printed");
    }
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("i9-api: error: "), "{}", run.stderr);
    last
}

#[tokio::test]
async fn without_app_env_development_and_without_keys_the_api_refuses_to_start_naming_them() {
    // No database is reached: the keys are refused first.
    let unreachable = ("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none");
    for app_env in ["", "production", "staging"] {
        let run = i9_api(&[], &[unreachable, ("APP_ENV", app_env)]).await;
        let last = refusal(&run);
        assert!(
            last.contains("no keys: set DATA_ENCRYPTION_KEYS (or DATA_ENCRYPTION_KEY, or either's _FILE) and SSN_HASH_KEYS")
                && last.contains("only with APP_ENV=development"),
            "{app_env:?}: {last}"
        );
        if app_env.is_empty() {
            assert!(last.ends_with("APP_ENV is not set"), "{last}");
        }
        assert!(!run.stderr.contains("not reachable"), "{}", run.stderr);
    }
    // One key given: the other is named.
    let run = i9_api(
        &[],
        &[
            unreachable,
            ("APP_ENV", "production"),
            ("DATA_ENCRYPTION_KEY", REAL_KEY),
        ],
    )
    .await;
    let last = refusal(&run);
    assert!(
        last.contains("set SSN_HASH_KEYS") && !last.contains("DATA_ENCRYPTION_KEYS"),
        "{last}"
    );
}

#[tokio::test]
async fn outside_development_the_development_keys_are_refused_however_they_are_written() {
    let unreachable = ("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none");
    // The same bytes: padded with space, without base64 padding, as a ring entry.
    let spaced = format!("  {DEV_DATA_KEY}\n");
    let unpadded = DEV_DATA_KEY.trim_end_matches('=');
    let ring = format!("2:{REAL_KEY},1:{unpadded}");
    for (app_env, name, value) in [
        ("production", "DATA_ENCRYPTION_KEY", DEV_DATA_KEY),
        ("production", "DATA_ENCRYPTION_KEY", spaced.as_str()),
        ("", "DATA_ENCRYPTION_KEY", unpadded),
        ("production", "DATA_ENCRYPTION_KEYS", ring.as_str()),
    ] {
        let run = i9_api(
            &[],
            &[
                unreachable,
                ("APP_ENV", app_env),
                (name, value),
                ("SSN_HASH_KEY", REAL_KEY),
            ],
        )
        .await;
        let last = refusal(&run);
        assert!(
            last.contains("DATA_ENCRYPTION_KEYS key 1 is a built-in development key"),
            "{name}={value:?}: {last}"
        );
    }
    let run = i9_api(
        &[],
        &[
            unreachable,
            ("APP_ENV", "prod"),
            ("DATA_ENCRYPTION_KEY", REAL_KEY),
            ("SSN_HASH_KEY", &format!(" {DEV_HASH_KEY} ")),
        ],
    )
    .await;
    assert!(
        refusal(&run).contains("SSN_HASH_KEYS key 1 is a built-in development key"),
        "{}",
        run.stderr
    );
}

/// It also logs the key ids of both rings, registers in `processes` with them
/// while it runs, and deletes its row when SIGTERM stops it.
#[tokio::test]
async fn with_app_env_development_the_api_starts_on_the_development_keys() {
    let db = TestDb::new().await;
    // The development data key as key 1 of a ring whose current key is 2.
    let data_ring = format!("2:{REAL_KEY},1:{DEV_DATA_KEY}");
    let mut child = command(
        &[],
        &[
            ("DATABASE_URL", &db.url),
            ("APP_ENV", "development"),
            ("DATA_ENCRYPTION_KEYS", &data_ring),
            ("STARTUP_TIMEOUT_SECS", "30"),
        ],
    )
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut keys_line = None;
    let listening = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("keys match the data") {
                keys_line = Some(line.clone());
            }
            if line.contains("i9-api listening") {
                return true;
            }
        }
        false
    })
    .await
    .expect("i9-api neither listened nor exited within 60 s");
    assert!(listening, "i9-api exited: {:?}", child.wait().await);
    let keys_line = keys_line.expect("the key check's line");
    assert!(
        keys_line.contains("data_keys=2 (current), 1 ssn_hash_keys=1 (current)"),
        "{keys_line}"
    );
    // It recorded the keys of both rings.
    let recorded: Vec<(String, i64)> =
        sqlx::query_as("SELECT kind, key_id FROM key_ring ORDER BY kind, key_id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        recorded,
        [
            ("data".to_owned(), 1),
            ("data".to_owned(), 2),
            ("ssn_hash".to_owned(), 1)
        ]
    );
    // It is registered with its key ids, current first.
    let pid = child.id().unwrap();
    let registered: Vec<(String, i64, Vec<i64>, Vec<i64>)> =
        sqlx::query_as("SELECT binary_name, pid, data_key_ids, hash_key_ids FROM processes")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        registered,
        [("i9-api".to_owned(), i64::from(pid), vec![2, 1], vec![1])]
    );
    // SIGTERM: a clean shutdown deletes the row.
    let killed = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let exit = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("i9-api stops within 30 s of SIGTERM")
        .unwrap();
    assert!(exit.success(), "{exit:?}");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM processes")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(left, 0, "its row is deleted at shutdown");
}

/// A second valid key, for the hash ring.
const REAL_HASH_KEY: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=";

/// The settings of a production start that gets as far as waiting for a
/// database that is not there (one second), with `env` added.
fn production(env: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = [
        ("APP_ENV", ""),
        ("DATA_ENCRYPTION_KEY", REAL_KEY),
        ("SSN_HASH_KEY", REAL_HASH_KEY),
        ("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none"),
        ("STARTUP_TIMEOUT_SECS", "1"),
        ("PUBLIC_BASE_URL", "https://i9.example"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    for (k, v) in env {
        all.retain(|(name, _)| name != k);
        all.push(((*k).to_owned(), (*v).to_owned()));
    }
    all
}

fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// The WARN lines naming `setting`.
fn warnings_about(stderr: &str, setting: &str) -> usize {
    stderr
        .lines()
        .filter(|l| l.contains(" WARN ") && l.contains(&format!("setting=\"{setting}\"")))
        .count()
}

#[tokio::test]
async fn outside_development_each_development_setting_is_warned_about_once() {
    let risky = [
        ("ALLOW_PRIVATE_CALLBACKS", "true"),
        ("PUBLIC_BASE_URL", "http://i9.example"),
        ("TRUSTED_PROXIES", "0.0.0.0/1, 10.0.0.0/8"),
    ];
    let env = production(&risky);
    let run = i9_api(&[], &pairs(&env)).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    for (setting, risk) in [
        (
            "ALLOW_PRIVATE_CALLBACKS",
            "partner callbacks may go over plain http",
        ),
        (
            "PUBLIC_BASE_URL",
            "PUBLIC_BASE_URL (http://i9.example) is plain http",
        ),
        (
            "TRUSTED_PROXIES",
            "TRUSTED_PROXIES lists 0.0.0.0/1, so wide",
        ),
    ] {
        assert_eq!(
            warnings_about(&run.stderr, setting),
            1,
            "{setting}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(risk), "{risk}: {}", run.stderr);
    }
    assert!(
        !run.stderr.contains("10.0.0.0/8, so wide"),
        "{}",
        run.stderr
    );
    // The same settings in development: nothing to say.
    let mut env = env;
    env.retain(|(k, _)| k != "APP_ENV");
    env.push(("APP_ENV".into(), "development".into()));
    let run = i9_api(&[], &pairs(&env)).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    for (setting, _) in risky {
        assert_eq!(
            warnings_about(&run.stderr, setting),
            0,
            "{setting}: {}",
            run.stderr
        );
    }
}

#[tokio::test]
async fn settings_that_cannot_be_right_end_the_start_naming_them() {
    for (name, value, expect) in [
        (
            "TRUSTED_PROXIES",
            "10.0.0.1, 0.0.0.0/0",
            "TRUSTED_PROXIES: \"0.0.0.0/0\" is every address",
        ),
        (
            "TRUSTED_PROXIES",
            "::/0",
            "TRUSTED_PROXIES: \"::/0\" is every address",
        ),
        (
            "TRUSTED_PROXIES",
            "10.0.0.0/33",
            "prefix length of 33, out of range: an IPv4 network's is 0 to 32",
        ),
        (
            "DATABASE_URL",
            "mysql://i9:hunter2@db:3306/i9",
            "DATABASE_URL must be a postgres:// or postgresql:// URL, not mysql://",
        ),
        (
            "DATABASE_URL",
            "http://i9:hunter2@db/i9",
            "DATABASE_URL must be a postgres:// or postgresql:// URL, not http://",
        ),
        (
            "PUBLIC_BASE_URL",
            "i9.example.com",
            "PUBLIC_BASE_URL must be an absolute URL starting with https:// (or http://)",
        ),
        (
            "PUBLIC_BASE_URL",
            "ftp://i9.example.com",
            "PUBLIC_BASE_URL must be an https:// (or http://) URL, not ftp://",
        ),
        (
            "PUBLIC_BASE_URL",
            "https://",
            "PUBLIC_BASE_URL has no host after https://",
        ),
        (
            "PUBLIC_BASE_URL",
            "https://i9:hunter2@i9.example.com",
            "PUBLIC_BASE_URL must not carry a user name or password",
        ),
        (
            "PUBLIC_BASE_URL",
            "https://i9.example.com?x=1",
            "PUBLIC_BASE_URL must not have a query (?…) or fragment (#…)",
        ),
        (
            "DATABASE_URL",
            "postgres://i9:hunter2@127.0.0.1:1/none?sslmode=verify-full&sslrootcert=/nonexistent.pem",
            "DATABASE_URL: sslrootcert=/nonexistent.pem cannot be read (No such file or directory",
        ),
        (
            "AMQP_PREFIX",
            "",
            "AMQP_PREFIX is set but empty (\"\"): it must be non-empty when set",
        ),
        (
            "DATABASE_URL_FILE",
            "/nonexistent/i9-db-url",
            "set DATABASE_URL or DATABASE_URL_FILE, not both",
        ),
        (
            "RUST_LOG",
            "warning",
            "RUST_LOG: \"warning\" is not a level: a level is off, error, warn, info, debug or trace",
        ),
    ] {
        let run = i9_api(&[], &pairs(&production(&[(name, value)]))).await;
        let last = refusal(&run);
        assert!(last.contains(expect), "{name}={value}: {last}");
        assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
        assert!(
            !run.stderr.contains("not reachable"),
            "refused before any wait: {}",
            run.stderr
        );
    }
}

#[tokio::test]
async fn an_open_file_limit_below_the_connection_cap_is_raised_or_warned_about() {
    let env = production(&[]);
    // The hard limit allows it: the soft one is raised, nothing to say.
    let run = run_to_exit(command_after(
        "ulimit -Sn 512 && ulimit -Hn 8192",
        &pairs(&env),
    ))
    .await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(
        warnings_about(&run.stderr, "HTTP_MAX_CONNECTIONS"),
        0,
        "{}",
        run.stderr
    );
    // It does not: one warning, with what to do.
    let run = run_to_exit(command_after("ulimit -n 512", &pairs(&env))).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(
        warnings_about(&run.stderr, "HTTP_MAX_CONNECTIONS"),
        1,
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "HTTP_MAX_CONNECTIONS (4096) is above what the open-file limit (512, `ulimit -n`"
        ) && run.stderr.contains("Raise the limit to at least 4372"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn the_api_reaches_postgres_over_tls_and_tls_that_cannot_work_ends_the_start_at_once() {
    let pg = tokio::task::spawn_blocking(PrivatePostgres::start_with_tls)
        .await
        .unwrap();
    let ca = pg.ca.ca_file.display().to_string();
    let verified = pg.url(
        "localhost",
        "i9",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    // `i9-admin migrate`'s work over TLS: the database is created and migrated.
    db::migrate(&Config::for_tests(&verified)).await.unwrap();

    // i9-api starts on it and answers /readyz; every connection is TLS
    // (the server takes no other: pg_hba.conf has hostssl lines only).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bind = format!("127.0.0.1:{port}");
    let mut child = command(
        &[],
        &[
            ("DATABASE_URL", &verified),
            ("BIND_ADDR", &bind),
            ("AMQP_URL", i9_tests::amqp_url().expose_secret()),
            ("STARTUP_TIMEOUT_SECS", "30"),
        ],
    )
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let listening = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("i9-api listening") {
                return true;
            }
        }
        false
    })
    .await
    .expect("i9-api neither listened nor exited within 60 s");
    assert!(listening, "i9-api exited: {:?}", child.wait().await);
    let ready = reqwest::get(format!("http://{bind}/readyz")).await.unwrap();
    assert_eq!(ready.status(), 200);
    let mut conn = sqlx::PgConnection::connect(&verified).await.unwrap();
    let (tls, clear): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl)
         FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = 'i9'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert!(tls >= 2, "the API's connection and ours: {tls}");
    assert_eq!(clear, 0);
    conn.close().await.unwrap();
    child.kill().await.unwrap();

    // A server certificate the client cannot verify: refused at once, not
    // retried until STARTUP_TIMEOUT_SECS.
    let unverified = pg.url("localhost", "i9", "sslmode=verify-full");
    let run = i9_api(
        &[],
        &[
            ("DATABASE_URL", &unverified),
            ("STARTUP_TIMEOUT_SECS", "600"),
        ],
    )
    .await;
    let last = refusal(&run);
    assert!(
        last.contains(&format!("Postgres at localhost:{} (database i9) cannot be reached over TLS: ", pg.port))
            && last.contains("certificate")
            && last.ends_with("check DATABASE_URL (sslmode, sslrootcert) and the server's TLS settings (docs/operations.md, \"TLS to Postgres\")"),
        "{last}"
    );
    assert!(
        !run.stderr.contains("not reachable yet"),
        "no retry: {}",
        run.stderr
    );

    // A server without TLS, and sslmode=require: the same, at once.
    let pg = tokio::task::spawn_blocking(move || {
        pg.restart_without_tls();
        pg
    })
    .await
    .unwrap();
    let run = i9_api(
        &[],
        &[
            (
                "DATABASE_URL",
                &pg.url("127.0.0.1", "i9", "sslmode=require"),
            ),
            ("STARTUP_TIMEOUT_SECS", "600"),
        ],
    )
    .await;
    let last = refusal(&run);
    assert!(
        last.contains("cannot be reached over TLS") && last.contains("does not support TLS"),
        "{last}"
    );
    assert!(
        !run.stderr.contains("not reachable yet"),
        "no retry: {}",
        run.stderr
    );
    // The server itself is fine: without TLS asked for, it is reached.
    startup::wait_for_postgres(
        &pg.url("127.0.0.1", "i9", "sslmode=disable").into(),
        std::time::Instant::now() + Duration::from_secs(30),
    )
    .await
    .unwrap();
}
