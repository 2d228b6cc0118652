//! What `i9-api` writes to its log, read from the real binary's stderr with
//! its default log settings: each request is logged under its route's
//! template, so the link tokens of the employee pages, a query string's
//! social security number and the path of an unknown URL never appear.

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
    let mut child = Command::new(env!("CARGO_BIN_EXE_i9-api"))
        .env("DATABASE_URL", db_url)
        .env("AMQP_URL", amqp_url())
        .env("BIND_ADDR", format!("127.0.0.1:{port}"))
        .env("PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("API_NO_RELAY", "1")
        .env("APP_ENV", "development")
        .env_remove("DATA_ENCRYPTION_KEY")
        .env_remove("SSN_HASH_KEY")
        // The binary's own default filter and format, as deployed.
        .env_remove("RUST_LOG")
        .env_remove("LOG_FORMAT")
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
