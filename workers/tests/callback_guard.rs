//! The SSRF guard of partner status callbacks (finding 12 of issue 8), end to
//! end: a callback towards any blocked address is refused before a
//! connection is made, once, and recorded; and the worker never sends a
//! callback through a proxy named in its environment.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::{
    net::IpAddr,
    process::{Child, Command, Stdio},
};

use i9_common::destination::BLOCKED;
use i9_tests::{amqp_url, eventually, spawn, Stack, TcpProxy, ATS_BOT};
use ipnet::IpNet;
use secrecy::ExposeSecret;
use serde_json::json;

/// A listening port that counts the connections made to it.
async fn connection_counter() -> TcpProxy {
    TcpProxy::start("127.0.0.1:9").await
}

fn url_of(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("https://{v4}:{port}/i9-status"),
        IpAddr::V6(v6) => format!("https://[{v6}]:{port}/i9-status"),
    }
}

#[tokio::test]
async fn a_callback_to_each_blocked_range_is_refused_without_a_connection() {
    let app = spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        |c| c.allow_private_callbacks = false,
    )
    .await;
    let counter = connection_counter().await;
    let port = counter.port;
    // An address inside each blocked range, then the forms that hide one.
    let mut cases: Vec<(String, String)> = BLOCKED
        .iter()
        .map(|(range, _)| {
            let net: IpNet = range.parse().unwrap();
            let inside = net.hosts().next().unwrap_or(net.network());
            (url_of(inside, port), (*range).to_owned())
        })
        .collect();
    for (url, range) in [
        (format!("https://[::ffff:127.0.0.1]:{port}/"), "127.0.0.0/8"),
        (format!("https://[::ffff:a00:1]:{port}/"), "10.0.0.0/8"),
        (format!("https://[64:ff9b::7f00:1]:{port}/"), "127.0.0.0/8"),
        (
            format!("https://[64:ff9b::a9fe:a9fe]:{port}/"),
            "169.254.0.0/16",
        ),
        (format!("https://localhost:{port}/i9-status"), "loopback"),
        (format!("https://[5f00::1]:{port}/"), "2000::/3"),
        // http, even to a public address, while private callbacks are off.
        ("http://93.184.215.14/i9-status".to_owned(), "https"),
        (format!("http://127.0.0.1:{port}/i9-status"), "https"),
    ] {
        cases.push((url, range.to_owned()));
    }
    let mut events = Vec::new();
    for (n, (url, _)) in cases.iter().enumerate() {
        events.push(app.status_event_towards(&format!("guard-{n}"), url).await);
    }
    let total = cases.len() as i64;
    eventually("every callback is given up", || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM partner_events WHERE dead_at IS NOT NULL",
        )
        .fetch_one(app.pool())
        .await
        .unwrap()
            == total
    })
    .await;

    // One attempt each, recorded as refused and naming the reason.
    for ((url, reason), event) in cases.iter().zip(&events) {
        let attempts: Vec<(Option<i32>, Option<String>)> =
            sqlx::query_as("SELECT http_status, error FROM callback_attempts WHERE event_id = $1")
                .bind(event)
                .fetch_all(app.pool())
                .await
                .unwrap();
        assert_eq!(attempts.len(), 1, "{url}: {attempts:?}");
        let (status, error) = &attempts[0];
        let error = error.as_deref().unwrap_or_default();
        assert_eq!(*status, None, "{url}");
        assert!(error.starts_with("refused: "), "{url}: {error}");
        assert!(
            error.contains(reason.as_str()),
            "{url}: {error} names {reason}"
        );
    }
    let refused: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM callback_attempts WHERE error LIKE 'refused: %' AND http_status IS NULL",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(refused, total);
    assert_eq!(counter.accepted(), 0, "no connection reached the listener");
}

struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_worker_never_sends_a_callback_through_a_proxy_from_its_environment() {
    let app = spawn(
        Stack {
            jobs: true,
            no_worker: true,
            ..Stack::default()
        },
        |c| c.allow_private_callbacks = true,
    )
    .await;
    let receiver = app.partner_endpoint().await;
    // A proxy that would relay to the partner: a request through it would
    // still arrive, but the proxy would count its connection.
    let target = receiver
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let proxy = TcpProxy::start(Box::leak(target.into_boxed_str())).await;
    let proxy_url = format!("http://127.0.0.1:{}", proxy.port);
    let prefix = app
        .topology
        .jobs_exchange()
        .trim_end_matches(".jobs")
        .to_owned();
    let mail_dir = std::env::temp_dir().join(format!("i9-mail-{}", uuid::Uuid::new_v4().simple()));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_i9-worker"));
    cmd.env("DATABASE_URL", &app.db.url)
        .env("AMQP_URL", amqp_url().expose_secret())
        .env("AMQP_PREFIX", &prefix)
        .env("APP_ENV", "development")
        .env("ALLOW_PRIVATE_CALLBACKS", "true")
        .env("WORKER_NO_RELAY", "1")
        .env("MAIL_DIR", &mail_dir)
        .env_remove("SMTP_URL")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env_remove("DATA_ENCRYPTION_KEY")
        .env_remove("SSN_HASH_KEY")
        // The test's retry schedule, so the delay queues are the test's own.
        .env("JOB_MAX_ATTEMPTS", "4")
        .env("JOB_RETRY_BASE_SECS", "1")
        .env("JOB_RETRY_CAP_SECS", "1")
        .env("CALLBACK_MAX_ATTEMPTS", "3")
        .env("CALLBACK_RETRY_BASE_SECS", "1")
        .env("CALLBACK_RETRY_CAP_SECS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        cmd.env(var, &proxy_url);
    }
    let _worker = Worker(cmd.spawn().unwrap());

    let token = app
        .sign_in_with(("greenhouse-ats", "ats-secret-change-me"), ATS_BOT, None)
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = json!({"integrationCandidateId": "cand-proxy", "onboardingType": "on-site", "firstName": "Ana",
                      "lastName": "Diaz", "emailAddress": "ana@mail.example", "startDate": "2026-12-01", "locationId": 3});
    let r = app
        .post_json("/v1/partners/i9s/section1", &token, &body)
        .await;
    assert_eq!(r.status(), 201);
    eventually("the partner has the creation callback", || async {
        receiver.received().len() == 1
    })
    .await;
    assert_eq!(receiver.attempts(), 1);
    assert_eq!(proxy.accepted(), 0, "the proxy received no request");
    let _ = std::fs::remove_dir_all(&mail_dir);
}
