//! No effect twice: copies of one job handled at the same moment (a relay
//! that published a job twice, a redelivery, an operator's replay) send one
//! email and post one callback. Real RabbitMQ, SMTP server, partner endpoint
//! (docs/operations.md, "At least once").

use std::time::Duration;

use i9_common::jobs::JobKind;
use i9_tests::{eventually, spawn, test_worker_config, Stack, TestApp, ADMIN};
use lapin::{options::BasicPublishOptions, BasicProperties};
use serde_json::{json, Value};

use crate::callbacks::hire;

async fn stack(allow_private_callbacks: bool) -> TestApp {
    spawn(
        Stack {
            jobs: true,
            no_worker: true,
            ..Stack::default()
        },
        move |c| c.allow_private_callbacks = allow_private_callbacks,
    )
    .await
}

/// The outbox's job of `kind`, once the relay has published it.
pub(crate) async fn published_job(app: &TestApp, kind: JobKind) -> Value {
    eventually("the relay publishes the job", || async {
        sqlx::query_scalar::<_, bool>(
            "SELECT published_at IS NOT NULL FROM job_outbox WHERE kind = $1",
        )
        .bind(kind.name())
        .fetch_optional(app.pool())
        .await
        .unwrap()
        .unwrap_or(false)
    })
    .await;
    sqlx::query_scalar("SELECT payload FROM job_outbox WHERE kind = $1")
        .bind(kind.name())
        .fetch_one(app.pool())
        .await
        .unwrap()
}

/// Publish `copies` more copies of a job, as a relay that published twice would.
pub(crate) async fn publish_copies(app: &TestApp, kind: JobKind, payload: &Value, copies: usize) {
    let conn = i9_common::amqp::connect(&i9_tests::amqp_url())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    for _ in 0..copies {
        ch.basic_publish(
            app.topology.jobs_exchange().into(),
            kind.name().into(),
            BasicPublishOptions::default(),
            payload.to_string().as_bytes(),
            BasicProperties::default().with_delivery_mode(2),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    }
    conn.close(200, "published".into()).await.ok();
}

/// Wait until no copy of any job waits in a queue, then stop the worker
/// (which finishes the jobs in hand): every copy has been settled.
pub(crate) async fn settle(
    app: &TestApp,
    kind: JobKind,
    stop: tokio::sync::watch::Sender<bool>,
    worker: tokio::task::JoinHandle<anyhow::Result<()>>,
) {
    eventually("no copy waits in a queue", || async {
        app.delayed_copies().await == 0
            && app.queue_depths(&[app.topology.queue(kind)]).await[0] == 0
    })
    .await;
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(30), worker)
        .await
        .expect("the worker stops")
        .unwrap()
        .unwrap();
    assert_eq!(app.delayed_copies().await, 0);
    assert_eq!(app.queue_depths(&[app.topology.queue(kind)]).await[0], 0);
}

#[tokio::test]
async fn three_copies_of_an_email_job_at_once_send_one_email() {
    let app = stack(false).await;
    let token = app.token(ADMIN).await;
    let body = json!({"firstName": "Tri", "lastName": "Ple", "locationId": 3, "startDate": "2026-11-05",
                      "emailAddress": "triple@mail.example", "createLogin": true, "sendLoginEmail": true});
    assert_eq!(
        app.post_json("/v1/employees", &token, &body).await.status(),
        201
    );
    let payload = published_job(&app, JobKind::SendLoginEmail).await;
    publish_copies(&app, JobKind::SendLoginEmail, &payload, 2).await;
    // A slow mail server, and a worker that takes all three copies at once.
    app.smtp().slow_down(Duration::from_millis(1500));
    let mut wc = test_worker_config(&app.topology);
    wc.prefetch = 4;
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let worker = app.start_worker_with(wc, stop_rx);
    eventually("the email arrives", || async {
        !app.smtp().to("triple@mail.example").is_empty()
    })
    .await;
    settle(&app, JobKind::SendLoginEmail, stop, worker).await;
    assert_eq!(app.smtp().to("triple@mail.example").len(), 1, "one email");
    assert_eq!(
        app.smtp().attempt_times("triple@mail.example").len(),
        1,
        "and no second try at sending it"
    );
    let tokens: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM password_set_tokens t JOIN users u ON u.id = t.user_id
         WHERE u.login = 'triple@mail.example'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(tokens, 1, "one set-password link issued");
    let done: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM processed_jobs WHERE kind = 'send_login_email' AND processed_at IS NOT NULL",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(done, 1);
}

#[tokio::test]
async fn three_copies_of_a_callback_job_at_once_post_the_event_once() {
    let app = stack(true).await;
    let receiver = app.partner_endpoint().await;
    receiver.slow_down(Duration::from_millis(1500));
    let mut wc = test_worker_config(&app.topology);
    wc.prefetch = 4;
    // First a worker for the I-9 alone, so that the callback job waits.
    let mut i9_only = wc.clone();
    i9_only.kinds = vec![JobKind::CreateI9];
    let (stop_i9, stop_i9_rx) = tokio::sync::watch::channel(false);
    let i9_worker = app.start_worker_with(i9_only, stop_i9_rx);
    hire(&app, "cand-once-1").await;
    let payload = published_job(&app, JobKind::PostStatusCallback).await;
    stop_i9.send(true).unwrap();
    i9_worker.await.unwrap().unwrap();
    publish_copies(&app, JobKind::PostStatusCallback, &payload, 2).await;

    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let worker = app.start_worker_with(wc, stop_rx);
    eventually("the callback is delivered", || async {
        receiver.received().len() == 1
    })
    .await;
    settle(&app, JobKind::PostStatusCallback, stop, worker).await;
    assert_eq!(receiver.attempts(), 1, "posted once, by one copy");
    assert_eq!(receiver.received().len(), 1);
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM callback_attempts")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(attempts, 1, "one attempt recorded");
    assert_eq!(app.dead_letters().await, 0);
}

#[tokio::test]
async fn a_claim_left_by_a_dead_worker_delays_the_job_without_using_its_attempts() {
    let app = stack(true).await;
    let receiver = app.partner_endpoint().await;
    let mut wc = test_worker_config(&app.topology);
    let mut i9_only = wc.clone();
    i9_only.kinds = vec![JobKind::CreateI9];
    let (stop_i9, stop_i9_rx) = tokio::sync::watch::channel(false);
    let i9_worker = app.start_worker_with(i9_only, stop_i9_rx);
    hire(&app, "cand-once-2").await;
    published_job(&app, JobKind::PostStatusCallback).await;
    stop_i9.send(true).unwrap();
    i9_worker.await.unwrap().unwrap();
    // A worker died posting this event: its claim holds for 3 s more.
    let event: uuid::Uuid = sqlx::query_scalar("SELECT id FROM partner_events")
        .fetch_one(app.pool())
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO processed_jobs (job_id, kind, processed_at, claimed_until)
         VALUES ($1, 'post_status_callback', NULL, now() + interval '3 seconds')",
    )
    .bind(event)
    .execute(app.pool())
    .await
    .unwrap();
    // Two attempts in all: waiting for the claim must not use them up.
    wc.callback_retry = i9_common::retry::RetryPolicy {
        max_attempts: 2,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(1),
        jitter: 0.0,
    };
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let worker = app.start_worker_with(wc, stop_rx);
    eventually(
        "the callback is delivered once the claim lapses",
        || async { receiver.received().len() == 1 },
    )
    .await;
    settle(&app, JobKind::PostStatusCallback, stop, worker).await;
    assert_eq!(receiver.attempts(), 1);
    assert_eq!(app.dead_letters().await, 0, "not given up");
    let recorded: Vec<Option<i32>> =
        sqlx::query_scalar("SELECT http_status FROM callback_attempts")
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(recorded, [Some(204)], "one attempt, the delivery");
}
