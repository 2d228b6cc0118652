//! What `i9-api` writes to its log, read from the real binary's stderr with
//! its default log settings: each request is logged under its route's
//! template, so the link tokens of the employee pages, a query string's
//! social security number and the path of an unknown URL never appear; and
//! once only, a 503 included, its reason counted on `/metrics` and written
//! in a rate-limited WARN line.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::{
    io::Read,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
};

use i9_common::{
    crypto::{new_token, token_hash, DataCipher},
    seed, Config,
};
use i9_tests::{amqp_url, eventually, fixture, TestDb, ADMIN, PORTAL};
use secrecy::ExposeSecret;
use serde_json::{json, Value};

struct Api {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Api {
    /// What the process wrote so far. Its stderr is a pipe, not a terminal:
    /// plain text, without a single colour escape sequence.
    fn log(&self) -> String {
        let log = self.stderr.lock().unwrap().clone();
        assert!(
            !log.contains('\u{1b}'),
            "escape sequences in a log that is not a terminal: {log}"
        );
        log
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(db_url: &str, port: u16) -> Api {
    start_with(db_url, port, &[])
}

fn start_with(db_url: &str, port: u16, env: &[(&str, &str)]) -> Api {
    let mut child = Command::new(env!("CARGO_BIN_EXE_i9-api"))
        .env("DATABASE_URL", db_url)
        .env("AMQP_URL", amqp_url().expose_secret())
        .env("BIND_ADDR", format!("127.0.0.1:{port}"))
        .env("PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("API_NO_RELAY", "1")
        .env("APP_ENV", "development")
        .env_remove("DATA_ENCRYPTION_KEY")
        .env_remove("SSN_HASH_KEY")
        // The binary's own default filter and format, as deployed.
        .env_remove("RUST_LOG")
        .env_remove("LOG_FORMAT")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stderr.take().unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = stderr.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    Api { child, stderr }
}

#[tokio::test]
async fn request_logs_name_the_route_template_never_a_token_or_the_query() {
    let db = TestDb::new().await;
    let cipher = DataCipher::from_config(&Config::for_tests(&db.url));
    seed::load(&db.pool, &cipher, &fixture()).await.unwrap();
    // A live set-password link of a user.
    let password_token = new_token("");
    sqlx::query(
        "INSERT INTO password_set_tokens (token_hash, user_id, expires_at)
         SELECT $1, id, now() + interval '1 hour' FROM users WHERE login = 'west.hr'",
    )
    .bind(token_hash(&password_token))
    .execute(&db.pool)
    .await
    .unwrap();

    let port = free_port();
    let api = start(&db.url, port);
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    eventually("i9-api answers", || async {
        http.get(format!("{base}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
    })
    .await;

    let form = [
        ("grant_type", "password"),
        ("client_id", PORTAL.0),
        ("client_secret", PORTAL.1),
        ("username", ADMIN.0),
        ("password", ADMIN.1),
    ];
    let tokens: Value = http
        .post(format!("{base}/oauth2/access_token"))
        .form(&form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();

    // An employee with an I-9: the answer carries the live Section 1 link.
    let created: Value = http
        .post(format!("{base}/v1/employees"))
        .bearer_auth(&access)
        .json(&json!({"firstName": "Lena", "lastName": "Okafor", "socialSecurityNumber": "219-09-9999",
                      "startDate": "2026-12-01", "locationId": 3, "createI9": "yes"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let link = created["i9FormSection1Link"].as_str().unwrap().to_owned();
    let section1_token = link.rsplit('/').next().unwrap().to_owned();
    assert!(section1_token.len() > 20, "{link}");

    let section1 = http.get(&link).send().await.unwrap();
    assert_eq!(section1.status(), 200);
    let signed = http
        .post(&link)
        .form(&[("lastName", "Okafor")])
        .send()
        .await
        .unwrap();
    assert!(signed.status().is_success() || signed.status().is_client_error());
    let page = http
        .get(format!("{base}/account/set-password/{password_token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let set = http
        .post(format!("{base}/account/set-password/{password_token}"))
        .form(&[("password", "short"), ("confirm", "short")])
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), 422);
    // A search by SSN in the query string, and a path that matches no route.
    let search = http
        .get(format!(
            "{base}/v1/employees?socialSecurityNumber=219-09-9999"
        ))
        .bearer_auth(&access)
        .send()
        .await
        .unwrap();
    assert!(search.status().is_success() || search.status() == 403);
    let unknown_path = format!("/no-such-page/{}", new_token("probe-"));
    let unknown = http
        .get(format!("{base}{unknown_path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);

    // Requests are logged as they are answered, in order: once the last one
    // is in the log, every one is.
    eventually("the log has every request", || async {
        api.log().contains(r#"route="unmatched""#)
    })
    .await;
    let log = api.log();
    for template in [
        r#"route="/i9/section1/{token}""#,
        r#"route="/account/set-password/{token}""#,
        r#"route="/v1/employees""#,
        r#"route="unmatched""#,
    ] {
        assert!(log.contains(template), "{template} in:\n{log}");
    }
    for (what, secret) in [
        ("the Section 1 token", section1_token.as_str()),
        ("the set-password token", password_token.as_str()),
        ("the social security number", "219-09-9999"),
        ("the unknown path", unknown_path.as_str()),
        ("the access token", access.as_str()),
        ("the refresh token", refresh.as_str()),
        ("the password", ADMIN.1),
    ] {
        assert!(!log.contains(secret), "{what} is in the log:\n{log}");
    }
    assert_eq!(
        log.matches(r#"route="/i9/section1/{token}""#).count(),
        2,
        "one line per request to the Section 1 page:\n{log}"
    );
}

/// The value of the Prometheus series `series` (name and labels) in `text`.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// The `i9_` series docs/operations.md's "Metrics" table of the API names,
/// with their type (the worker's table follows it; tests/tests/metrics.rs).
fn documented_series() -> Vec<(&'static str, &'static str)> {
    let doc = include_str!("../../docs/operations.md");
    let table = doc
        .split("\n## Metrics\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .and_then(|s| s.split("\nThe worker's").next())
        .unwrap();
    let series: Vec<(&str, &str)> = table
        .lines()
        .filter(|l| l.starts_with("| `i9_"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`'), cells[2])
        })
        .collect();
    assert!(series.len() >= 9, "{table}");
    series
}

/// Before any event (and before any request but the checks of readiness),
/// `/metrics` lists every `i9_` series of the docs' table, every counter at
/// zero: an alert on one does not wait for its first event.
#[tokio::test]
async fn every_series_the_docs_name_is_listed_from_the_start_at_zero() {
    let db = TestDb::new().await;
    let port = free_port();
    let api = start(&db.url, port);
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    eventually("i9-api answers", || async {
        http.get(format!("{base}/healthz")).send().await.is_ok()
    })
    .await;
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for (name, kind) in documented_series() {
        let lines: Vec<&str> = metrics
            .lines()
            .filter(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with([' ', '{']))
            })
            .collect();
        assert!(!lines.is_empty(), "{name} is not listed: {metrics}");
        assert!(
            metrics.contains(&format!("# TYPE {name} {kind}")),
            "{name} is a {kind}: {metrics}"
        );
        if kind == "counter" {
            for line in &lines {
                assert!(line.ends_with(" 0"), "{line}");
            }
        }
    }
    // The timeouts, for every route.
    for route in i9_api::ROUTES {
        let series = format!(r#"i9_request_timeouts_total{{route="{route}"}}"#);
        assert_eq!(metric(&metrics, &series), Some(0.0), "{series}: {metrics}");
    }
    drop(api);
}

#[tokio::test]
async fn shed_and_throttled_sign_ins_are_logged_once_each_and_counted_by_reason() {
    const FLOOD: usize = 200;
    let db = TestDb::new().await;
    let cipher = DataCipher::from_config(&Config::for_tests(&db.url));
    seed::load(&db.pool, &cipher, &fixture()).await.unwrap();
    let port = free_port();
    // One password check at a time, one second's wait for it: a flood of
    // concurrent sign-ins is mostly shed. Addresses are not throttled here;
    // a username is after three failures.
    let api = start_with(
        &db.url,
        port,
        &[
            ("PASSWORD_HASH_CONCURRENCY", "1"),
            ("PASSWORD_HASH_WAIT_SECS", "1"),
            ("SIGN_IN_ADDRESS_FAILURES", "1000000"),
            ("SIGN_IN_USERNAME_FAILURES", "3"),
        ],
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    eventually("i9-api answers", || async {
        http.get(format!("{base}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
    })
    .await;
    let sign_in = |username: String| {
        let http = http.clone();
        let url = format!("{base}/oauth2/access_token");
        async move {
            http.post(url)
                .form(&[
                    ("grant_type", "password"),
                    ("client_id", PORTAL.0),
                    ("client_secret", PORTAL.1),
                    ("username", username.as_str()),
                    ("password", "wrong-password"),
                ])
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    // The flood: each a username of its own.
    let mut set = tokio::task::JoinSet::new();
    for i in 0..FLOOD {
        set.spawn(sign_in(format!("nobody-{i}")));
    }
    let mut statuses = Vec::new();
    while let Some(status) = set.join_next().await {
        statuses.push(status.unwrap());
    }
    let shed = statuses.iter().filter(|s| **s == 503).count();
    assert!(shed > 0, "{statuses:?}");
    assert_eq!(
        shed + statuses.iter().filter(|s| **s == 400).count(),
        FLOOD,
        "{statuses:?}"
    );
    // One username, one wrong password after another, until it is delayed.
    let mut throttled = 0;
    for _ in 0..12 {
        match sign_in(ADMIN.0.to_owned()).await {
            429 => throttled += 1,
            s => assert_eq!(s, 400),
        }
        if throttled == 2 {
            break;
        }
    }
    assert_eq!(throttled, 2);

    let answered = |log: &str| {
        log.lines()
            .filter(|l| {
                l.contains("finished processing request")
                    && l.contains(r#"route="/oauth2/access_token""#)
            })
            .count()
    };
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        metric(
            &metrics,
            r#"i9_requests_shed_total{route="/oauth2/access_token"}"#
        ),
        Some(shed as f64),
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, r#"i9_sign_ins_throttled_total{kind="username"}"#),
        Some(2.0),
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, r#"i9_sign_ins_throttled_total{kind="address"}"#),
        Some(0.0),
        "{metrics}"
    );
    for zero in [
        "i9_database_unavailable_total",
        r#"i9_requests_shed_total{route="/account/set-password/{token}"}"#,
        r#"i9_http_connections_refused_total{limit="per_address"}"#,
    ] {
        assert_eq!(metric(&metrics, zero), Some(0.0), "{zero} in {metrics}");
    }

    let log = api.log();
    let token_requests = answered(&log);
    assert!(token_requests >= FLOOD + 2, "{log}");
    // One line per request, a 503 included: no second line at ERROR from
    // the failure classifier, and no ERROR at all.
    let shed_lines = log
        .lines()
        .filter(|l| l.contains("finished processing request") && l.contains("status=503"))
        .count();
    assert_eq!(shed_lines, shed, "{log}");
    assert_eq!(log.matches("response failed").count(), 0, "{log}");
    assert_eq!(log.matches(" ERROR ").count(), 0, "{log}");
    // The reason, at WARN, at most once per 10 s with the count since the last.
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("requests answered 503 busy: password checks are saturated"))
        .collect();
    assert!(!warnings.is_empty(), "{log}");
    let counts: Vec<usize> = warnings
        .iter()
        .filter_map(|l| l.split("count=").nth(1)?.split(' ').next()?.parse().ok())
        .collect();
    assert_eq!(counts.len(), warnings.len(), "{warnings:?}");
    assert_eq!(counts[0], 1, "the first is written at once: {warnings:?}");
    let reported: usize = counts.iter().sum();
    assert!(reported <= shed, "{log}");
    assert!(
        warnings.len() < shed.max(2),
        "one line per 10 s, not per request: {log}"
    );
}
