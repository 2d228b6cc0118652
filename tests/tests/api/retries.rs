//! Retries, counted: each failed attempt parks exactly one copy of its job,
//! in the delay queue of the wait its policy chose; attempts follow the
//! policy's schedule; nothing comes back after a success; the delay queues
//! never hold more copies than there are failing jobs. Real RabbitMQ, SMTP
//! server, partner endpoint and Postgres (docs/operations.md, "Retries").

use std::time::{Duration, Instant};

use i9_common::{jobs::JobKind, retry::RetryPolicy};
use i9_tests::{eventually, spawn, test_worker_config, Receiver, Stack, TestApp, ADMIN};
use lapin::{
    options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions},
    types::{AMQPValue, FieldTable},
    ExchangeKind,
};
use serde_json::json;

use crate::callbacks::hire;

/// An app with the relay but no worker, and a partner endpoint the partner
/// client posts to.
async fn partner_stack() -> (TestApp, Receiver) {
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
    (app, receiver)
}

/// Each gap between attempts lies in its wait's jitter band: never before it
/// (a copy cannot expire early), and after it only by the time a loaded
/// machine's broker and worker take to act (a few seconds at most).
fn assert_on_schedule(times: &[Instant], policy: &RetryPolicy) {
    for (i, pair) in times.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        let nominal = policy.nominal(i as u32 + 1);
        let earliest = nominal.mul_f64(1.0 - policy.jitter) - Duration::from_millis(50);
        let latest = nominal.mul_f64(1.0 + policy.jitter) + Duration::from_secs(5);
        assert!(
            gap >= earliest && gap <= latest,
            "attempt {} came {gap:?} after attempt {}; the policy's wait is {nominal:?} ± {:.0} %",
            i + 2,
            i + 1,
            policy.jitter * 100.0
        );
    }
}

async fn event_ids(app: &TestApp) -> Vec<String> {
    sqlx::query_scalar::<_, uuid::Uuid>("SELECT id FROM partner_events ORDER BY sequence, id")
        .fetch_all(app.pool())
        .await
        .unwrap()
        .into_iter()
        .map(|id| id.to_string())
        .collect()
}

#[tokio::test]
async fn a_refused_callback_is_attempted_on_schedule_and_never_again_once_taken() {
    let (app, receiver) = partner_stack().await;
    let mut wc = test_worker_config(&app.topology);
    let policy = RetryPolicy {
        max_attempts: 6,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(4),
        jitter: 0.2,
    };
    wc.callback_retry = policy;
    let _worker = app.start_worker_with(wc, app.stop_signal());
    receiver.fail_next(3);
    hire(&app, "cand-retry-1").await;
    eventually("the callback is taken on the fourth attempt", || async {
        receiver.received().len() == 1
    })
    .await;
    let event = event_ids(&app).await.remove(0);
    let times = receiver.attempt_times(&event);
    assert_eq!(times.len(), 4, "three refusals and one delivery");
    assert_on_schedule(&times, &policy);

    // Nothing of the job is left anywhere to come back ...
    eventually("no copy waits in a queue", || async {
        app.delayed_copies().await == 0
            && app
                .queue_depths(&[app.topology.queue(JobKind::PostStatusCallback)])
                .await[0]
                == 0
    })
    .await;
    // ... and a later event, handled after everything before it, finds the
    // first one still delivered once.
    hire(&app, "cand-retry-2").await;
    eventually("the second callback", || async {
        receiver.received().len() == 2
    })
    .await;
    assert_eq!(receiver.attempt_times(&event).len(), 4);
    let recorded: Vec<Option<i32>> = sqlx::query_scalar(
        "SELECT http_status FROM callback_attempts WHERE event_id = $1::uuid ORDER BY id",
    )
    .bind(&event)
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(recorded, [Some(503), Some(503), Some(503), Some(204)]);
    assert_eq!(app.dead_letters().await, 0);
}

#[tokio::test]
async fn the_delay_queues_never_hold_more_copies_than_there_are_failing_jobs() {
    let (app, receiver) = partner_stack().await;
    let mut wc = test_worker_config(&app.topology);
    // Two waits, so two delay queues a copy could wrongly be sent to at once.
    let policy = RetryPolicy {
        max_attempts: 4,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(2),
        jitter: 0.2,
    };
    wc.callback_retry = policy;
    wc.prefetch = 4;
    receiver.fail_next(usize::MAX);
    let failing = 4;
    for i in 0..failing {
        hire(&app, &format!("cand-down-{i}")).await;
    }
    let _worker = app.start_worker_with(wc, app.stop_signal());

    let mut most = 0;
    let mut samples = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let copies = app.delayed_copies().await;
        most = most.max(copies);
        samples += 1;
        let dead: i64 =
            sqlx::query_scalar("SELECT count(*) FROM partner_events WHERE dead_at IS NOT NULL")
                .fetch_one(app.pool())
                .await
                .unwrap();
        if dead == failing {
            break;
        }
        assert!(Instant::now() < deadline, "the callbacks were not given up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        samples > 10,
        "the queues were watched throughout ({samples} samples)"
    );
    assert!(
        most <= failing as u32,
        "{most} copies waited at once for {failing} failing jobs"
    );
    assert!(most >= 1, "the failing jobs did wait in the delay queues");
    for event in event_ids(&app).await {
        let times = receiver.attempt_times(&event);
        assert_eq!(times.len(), 4, "event {event}: the policy's four attempts");
        assert_on_schedule(&times, &policy);
    }
    assert_eq!(
        receiver.attempts(),
        16,
        "four attempts of four events, no more"
    );
    eventually("each given-up job is dead-lettered once", || async {
        app.dead_letters().await == failing as u32
    })
    .await;
    assert_eq!(app.delayed_copies().await, 0);
}

#[tokio::test]
async fn a_refused_email_is_retried_on_schedule_and_sent_once() {
    let app = spawn(
        Stack {
            jobs: true,
            no_worker: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    let mut wc = test_worker_config(&app.topology);
    let policy = RetryPolicy {
        max_attempts: 5,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(2),
        jitter: 0.2,
    };
    wc.retry = policy;
    let _worker = app.start_worker_with(wc, app.stop_signal());
    app.smtp().refuse_next(2);
    let token = app.token(ADMIN).await;
    let body = json!({"firstName": "Tom", "lastName": "Retry", "locationId": 3, "startDate": "2026-11-05",
                      "emailAddress": "tom.retry@mail.example", "createLogin": true, "sendLoginEmail": true});
    let r = app.post_json("/v1/employees", &token, &body).await;
    assert_eq!(r.status(), 201);
    eventually("the email is taken on the third attempt", || async {
        !app.smtp().to("tom.retry@mail.example").is_empty()
    })
    .await;
    let times = app.smtp().attempt_times("tom.retry@mail.example");
    assert_eq!(times.len(), 3, "two refusals and one delivery");
    assert_on_schedule(&times, &policy);
    eventually("no copy waits in a queue", || async {
        app.delayed_copies().await == 0
    })
    .await;
    // A later login email: once it is in, nothing of the first is left.
    let marker = json!({"firstName": "Mark", "lastName": "Er", "locationId": 3, "startDate": "2026-11-05",
                        "emailAddress": "marker@mail.example", "createLogin": true, "sendLoginEmail": true});
    assert_eq!(
        app.post_json("/v1/employees", &token, &marker)
            .await
            .status(),
        201
    );
    eventually("the marker email", || async {
        !app.smtp().to("marker@mail.example").is_empty()
    })
    .await;
    assert_eq!(app.smtp().to("tom.retry@mail.example").len(), 1);
    assert_eq!(app.smtp().attempt_times("tom.retry@mail.example").len(), 3);
    let tokens: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM password_set_tokens t JOIN users u ON u.id = t.user_id
         WHERE u.login = 'tom.retry@mail.example'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(
        tokens, 3,
        "a link per attempt: only the delivered one was ever sent"
    );
}

#[tokio::test]
async fn a_failing_i9_creation_is_retried_on_schedule_and_creates_one_i9() {
    let app = spawn(
        Stack {
            jobs: true,
            no_worker: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    // The database refuses the first two I-9 inserts (a trigger, counted by a
    // sequence, which a rolled-back transaction does not undo).
    for statement in [
        "CREATE SEQUENCE i9_insert_attempts",
        "CREATE FUNCTION fail_first_i9_inserts() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF nextval('i9_insert_attempts') <= 2 THEN RAISE EXCEPTION 'injected failure'; END IF;
           RETURN NEW;
         END $$",
        "CREATE TRIGGER fail_first BEFORE INSERT ON i9s FOR EACH ROW EXECUTE FUNCTION fail_first_i9_inserts()",
    ] {
        sqlx::query(statement).execute(app.pool()).await.unwrap();
    }
    let mut wc = test_worker_config(&app.topology);
    let policy = RetryPolicy {
        max_attempts: 5,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(2),
        jitter: 0.2,
    };
    wc.retry = policy;
    let _worker = app.start_worker_with(wc, app.stop_signal());

    // Watch the attempts as they happen.
    let pool = app.pool().clone();
    let watcher = tokio::spawn(async move {
        let mut times = Vec::new();
        let mut seen = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while seen < 3 && Instant::now() < deadline {
            let (last, called): (i64, bool) =
                sqlx::query_as("SELECT last_value, is_called FROM i9_insert_attempts")
                    .fetch_one(&pool)
                    .await
                    .unwrap();
            let now = if called { last } else { 0 };
            for _ in seen..now {
                times.push(Instant::now());
            }
            seen = seen.max(now);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        times
    });
    let token = app.token(ADMIN).await;
    let body = json!({"firstName": "Ida", "lastName": "Retry", "locationId": 3,
                      "startDate": "2026-11-05", "createI9": "yes"});
    let r = app.post_json("/v1/employees", &token, &body).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<serde_json::Value>().await.unwrap()["id"]
        .as_i64()
        .unwrap();
    eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;
    let times = watcher.await.unwrap();
    assert_eq!(times.len(), 3, "two failures and one success");
    assert_on_schedule(&times, &policy);
    eventually("no copy waits in a queue", || async {
        app.delayed_copies().await == 0
    })
    .await;
    let attempts: i64 = sqlx::query_scalar("SELECT last_value FROM i9_insert_attempts")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(attempts, 3, "no attempt after the success");
    assert_eq!(app.i9_count(id).await, 1);
}

#[tokio::test]
async fn a_worker_removes_the_retry_topology_of_older_releases() {
    let app = spawn(
        Stack {
            jobs: true,
            no_worker: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    // What a broker holds after a release before the fix: a headers exchange
    // whose bindings match on an x- header (so match everything), and its queues.
    let conn = i9_common::amqp::connect(&i9_tests::amqp_url())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let old_exchange = format!(
        "{}.retry",
        app.topology.jobs_exchange().trim_end_matches(".jobs")
    );
    ch.exchange_declare(
        old_exchange.as_str().into(),
        ExchangeKind::Headers,
        ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await
    .unwrap();
    let mut quorum = FieldTable::default();
    quorum.insert(
        "x-queue-type".into(),
        AMQPValue::LongString("quorum".into()),
    );
    // Should the test fail, RabbitMQ removes them a minute after their last use.
    quorum.insert("x-expires".into(), AMQPValue::LongLongInt(60_000));
    for secs in [1, 5] {
        let queue = format!("{old_exchange}.{secs}s");
        ch.queue_declare(
            queue.as_str().into(),
            QueueDeclareOptions {
                durable: true,
                ..Default::default()
            },
            quorum.clone(),
        )
        .await
        .unwrap();
        let mut binding = FieldTable::default();
        binding.insert("x-match".into(), AMQPValue::LongString("all".into()));
        binding.insert(
            "x-i9-retry-bucket".into(),
            AMQPValue::LongString(secs.to_string().as_str().into()),
        );
        ch.queue_bind(
            queue.as_str().into(),
            old_exchange.as_str().into(),
            "".into(),
            QueueBindOptions::default(),
            binding,
        )
        .await
        .unwrap();
    }
    let _worker = app.start_worker_with(test_worker_config(&app.topology), app.stop_signal());
    eventually("the old exchange and its empty queues are gone", || async {
        let probe = conn.create_channel().await.unwrap();
        let passive = ExchangeDeclareOptions {
            passive: true,
            ..Default::default()
        };
        let exchange_gone = probe
            .exchange_declare(
                old_exchange.as_str().into(),
                ExchangeKind::Headers,
                passive,
                FieldTable::default(),
            )
            .await
            .is_err();
        let mut queues_gone = exchange_gone;
        for secs in [1, 5] {
            let probe = conn.create_channel().await.unwrap();
            let passive = QueueDeclareOptions {
                passive: true,
                ..Default::default()
            };
            queues_gone &= probe
                .queue_declare(
                    format!("{old_exchange}.{secs}s").into(),
                    passive,
                    FieldTable::default(),
                )
                .await
                .is_err();
        }
        queues_gone
    })
    .await;
    conn.close(200, "done".into()).await.ok();
}
