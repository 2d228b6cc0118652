//! A callback that fails says why: `callback_attempts.error` (what
//! `i9-admin callbacks failed` shows, and the dead-letter header) carries
//! the cause beneath "cannot connect" (connection refused, a TLS failure),
//! never the URL or its query string, which may hold a partner's token.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use i9_tests::{eventually, spawn, Stack, TestApp};

const TOKEN: &str = "s3cr3t-partner-token";

/// The errors recorded for `event`, once it is given up.
async fn errors_of(app: &TestApp, event: uuid::Uuid) -> Vec<String> {
    eventually("the callback is given up", || async {
        sqlx::query_scalar::<_, bool>(
            "SELECT dead_at IS NOT NULL FROM partner_events WHERE id = $1",
        )
        .bind(event)
        .fetch_one(app.pool())
        .await
        .unwrap()
    })
    .await;
    sqlx::query_scalar::<_, Option<String>>(
        "SELECT error FROM callback_attempts WHERE event_id = $1 ORDER BY id",
    )
    .bind(event)
    .fetch_all(app.pool())
    .await
    .unwrap()
    .into_iter()
    .map(Option::unwrap_or_default)
    .collect()
}

#[tokio::test]
async fn a_failed_callback_records_its_cause_without_the_url() {
    let app = spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        |c| c.allow_private_callbacks = true,
    )
    .await;
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = app
        .status_event_towards(
            "refused",
            &format!("http://127.0.0.1:{closed}/i9-status?token={TOKEN}"),
        )
        .await;
    // https to a partner that speaks plain http: the TLS handshake fails.
    let receiver = app.partner_endpoint().await;
    let plain = receiver.url.replacen("http://", "https://", 1);
    let tls = app
        .status_event_towards("plain", &format!("{plain}?token={TOKEN}"))
        .await;

    // The tests' callback policy: three attempts, each recorded with its cause.
    let errors = errors_of(&app, refused).await;
    assert_eq!(errors.len(), 3, "{errors:?}");
    for e in &errors {
        assert!(
            e.starts_with("cannot connect: tcp connect error: ")
                && e.to_lowercase().contains("connection refused"),
            "{e}"
        );
    }
    let errors = errors_of(&app, tls).await;
    assert_eq!(errors.len(), 3, "{errors:?}");
    for e in &errors {
        assert!(e.starts_with("cannot connect: TLS: "), "{e}");
    }
    assert_eq!(receiver.attempts(), 0, "no request reached the partner");
    let leaked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM callback_attempts WHERE error LIKE '%' || $1 || '%'
            OR error LIKE '%i9-status%' OR error LIKE '%token=%'",
    )
    .bind(TOKEN)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(leaked, 0);
}
