//! The metrics operators alert on (docs/operations.md, "Metrics"), read from
//! real scrapes of the API's and the worker's `/metrics` after real work
//! (Postgres, RabbitMQ, a partner's HTTP endpoint). Its own test binary: the
//! recorder is one per process, so these tests run one at a time (a lock)
//! and count what their own work added to it.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::time::Duration;

use i9_tests::{
    eventually, sample, serve_worker_http, spawn, test_worker_config, Receiver, Stack, TestApp,
    ADMIN,
};
use serde_json::json;
use tokio::sync::Mutex;

/// One test at a time in this process: they share its recorder.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

async fn scrape(app: &TestApp, base: &str) -> String {
    let r = app
        .http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap()
}

/// The stack without its worker, and a worker whose `/healthz` and
/// `/metrics` are served; returns the app and the worker's base URL, once
/// `/healthz` answers 200 (its broker connection is up).
async fn stack_with_worker_http(allow_private_callbacks: bool) -> (TestApp, String) {
    let app = spawn(
        Stack {
            jobs: true,
            no_worker: true,
            ..Stack::default()
        },
        |c| c.allow_private_callbacks = allow_private_callbacks,
    )
    .await;
    let wc = test_worker_config(&app.topology);
    let health = wc.health.clone();
    let base = serve_worker_http(health).await;
    let _worker = app.start_worker_with(wc, app.stop_signal());
    // As i9-worker runs it beside its consumers (workers/src/main.rs).
    tokio::spawn(i9_workers::metrics::sample_outbox(
        app.pool().clone(),
        Duration::from_millis(200),
        app.stop_signal(),
    ));
    eventually("the worker's /healthz answers 200", || async {
        app.http
            .get(format!("{base}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
    })
    .await;
    (app, base)
}

fn jobs(scrape: &str, kind: &str, outcome: &str) -> f64 {
    sample(
        scrape,
        "i9_jobs_total",
        &[("kind", kind), ("outcome", outcome)],
    )
    .unwrap_or(0.0)
}

fn count(scrape: &str, histogram: &str, labels: &[(&str, &str)]) -> f64 {
    sample(scrape, &format!("{histogram}_count"), labels).unwrap_or(0.0)
}

#[tokio::test]
async fn the_workers_metrics_count_each_job_once_with_its_latency_from_enqueue() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (app, worker) = stack_with_worker_http(false).await;
    let before = scrape(&app, &worker).await;
    let kind = [("kind", "create_i9")];
    let token = app.token(ADMIN).await;
    const N: usize = 3;
    let mut employees = Vec::new();
    for i in 0..N {
        let body = json!({"firstName": "Ana", "lastName": format!("Metrics{i}"), "locationId": 3,
                          "startDate": "2026-11-05", "createI9": "yes"});
        let r = app.post_json("/v1/employees", &token, &body).await;
        assert_eq!(r.status(), 201);
        employees.push(
            r.json::<serde_json::Value>().await.unwrap()["id"]
                .as_i64()
                .unwrap(),
        );
    }
    let done = |s: &str| jobs(s, "create_i9", "done") - jobs(&before, "create_i9", "done");
    eventually("the worker counts the three jobs done", || async {
        done(&scrape(&app, &worker).await) >= N as f64
    })
    .await;
    for e in &employees {
        assert_eq!(app.i9_count(*e).await, 1);
    }
    let after = scrape(&app, &worker).await;
    assert_eq!(done(&after), N as f64, "each job counted once");
    for outcome in ["retried", "dead_lettered", "requeued", "waited"] {
        assert_eq!(
            jobs(&after, "create_i9", outcome),
            jobs(&before, "create_i9", outcome),
            "{outcome}"
        );
    }
    // One attempt each, and each job's time from its outbox row (the AMQP
    // timestamp the relay set) to done.
    for histogram in ["i9_job_duration_seconds", "i9_job_latency_seconds"] {
        assert_eq!(
            count(&after, histogram, &kind) - count(&before, histogram, &kind),
            N as f64,
            "{histogram}"
        );
        assert!(
            sample(
                &after,
                &format!("{histogram}_bucket"),
                &[("kind", "create_i9"), ("le", "+Inf")]
            )
            .is_some(),
            "{histogram} is a histogram"
        );
    }
    assert_eq!(sample(&after, "i9_worker_broker_connected", &[]), Some(1.0));
    let q = app.topology.queue(i9_common::jobs::JobKind::CreateI9);
    eventually("the queue's consumer is sampled", || async {
        sample(
            &scrape(&app, &worker).await,
            "i9_queue_consumers",
            &[("queue", &q)],
        ) == Some(1.0)
    })
    .await;
}

#[tokio::test]
async fn a_callback_that_fails_then_succeeds_is_counted_per_partner_and_outcome() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (app, worker) = stack_with_worker_http(true).await;
    let receiver = Receiver::start().await;
    receiver.fail_next(1);
    let partner = format!(
        "partner-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let before = scrape(&app, &worker).await;
    app.status_event_towards(&partner, &receiver.url).await;
    eventually(
        "the callback is delivered on its second attempt",
        || async { receiver.received().len() == 1 },
    )
    .await;
    let of = |outcome: &'static str| {
        let partner = partner.clone();
        move |s: &str| {
            sample(
                s,
                "i9_callbacks_total",
                &[("partner", &partner), ("outcome", outcome)],
            )
        }
    };
    eventually("the worker counts the delivered attempt", || async {
        of("2xx")(&scrape(&app, &worker).await) == Some(1.0)
    })
    .await;
    let after = scrape(&app, &worker).await;
    assert_eq!(receiver.attempts(), 2);
    assert_eq!(of("5xx")(&after), Some(1.0), "the 503");
    assert_eq!(of("2xx")(&after), Some(1.0), "the 204");
    for other in ["4xx", "410", "timeout", "unreachable", "refused", "failed"] {
        assert_eq!(of(other)(&after), None, "{other}");
    }
    assert_eq!(
        count(
            &after,
            "i9_callback_duration_seconds",
            &[("partner", &partner)]
        ),
        2.0
    );
    let kind = "post_status_callback";
    assert_eq!(
        jobs(&after, kind, "retried") - jobs(&before, kind, "retried"),
        1.0
    );
    assert_eq!(
        jobs(&after, kind, "done") - jobs(&before, kind, "done"),
        1.0
    );
}

#[tokio::test]
async fn the_outbox_gauges_tell_how_many_jobs_wait_and_for_how_long() {
    let _one = ONE_AT_A_TIME.lock().await;
    let app = i9_tests::spawn_app().await; // no relay runs
    let base = serve_worker_http(Default::default()).await;
    sqlx::query(
        "INSERT INTO job_outbox (job_id, kind, payload, created_at, published_at) VALUES
           ($1, 'create_i9', '{}', now() - interval '10 minutes', now()),
           ($2, 'create_i9', '{}', now() - interval '2 minutes', NULL),
           ($3, 'create_i9', '{}', now(), NULL)",
    )
    .bind(uuid::Uuid::new_v4())
    .bind(uuid::Uuid::new_v4())
    .bind(uuid::Uuid::new_v4())
    .execute(app.pool())
    .await
    .unwrap();
    tokio::spawn(i9_workers::metrics::sample_outbox(
        app.pool().clone(),
        Duration::from_millis(100),
        app.stop_signal(),
    ));
    eventually("the backlog is sampled", || async {
        sample(&scrape(&app, &base).await, "i9_outbox_backlog", &[]) == Some(2.0)
    })
    .await;
    let age = sample(
        &scrape(&app, &base).await,
        "i9_outbox_oldest_age_seconds",
        &[],
    )
    .unwrap();
    assert!((120.0..600.0).contains(&age), "{age}");
    // Published: nothing waits.
    sqlx::query("UPDATE job_outbox SET published_at = now()")
        .execute(app.pool())
        .await
        .unwrap();
    eventually("the backlog drains to zero", || async {
        let s = scrape(&app, &base).await;
        sample(&s, "i9_outbox_backlog", &[]) == Some(0.0)
            && sample(&s, "i9_outbox_oldest_age_seconds", &[]) == Some(0.0)
    })
    .await;
}

/// The worker's liveness follows its RabbitMQ connection: 503 before it is
/// up and while it is lost (the network to the broker cut), 200 once the
/// worker has reconnected.
#[tokio::test]
async fn the_workers_healthz_follows_its_broker_connection() {
    let _one = ONE_AT_A_TIME.lock().await;
    let app = spawn(
        Stack {
            jobs: true,
            proxy: true,
            no_worker: true,
        },
        |_| {},
    )
    .await;
    let wc = test_worker_config(&app.topology);
    let health = wc.health.clone();
    let base = serve_worker_http(health).await;
    let status = || async {
        let r = app
            .http
            .get(format!("{base}/healthz"))
            .send()
            .await
            .unwrap();
        let code = r.status().as_u16();
        let body: serde_json::Value = r.json().await.unwrap();
        (
            code,
            body["rabbitmq"].as_str().unwrap_or_default().to_owned(),
        )
    };
    // No worker has connected yet.
    assert_eq!(status().await, (503, "unavailable".to_owned()));
    let _worker = app.start_worker_with(wc, app.stop_signal());
    eventually("200 once the worker is connected", || async {
        status().await == (200, "ok".to_owned())
    })
    .await;
    let proxy = app.proxy.as_ref().unwrap();
    proxy.cut();
    eventually("503 while the connection is lost", || async {
        status().await.0 == 503
    })
    .await;
    proxy.restore();
    eventually("200 again once the worker has reconnected", || async {
        status().await.0 == 200
    })
    .await;
}

#[tokio::test]
async fn the_apis_request_latency_is_a_histogram() {
    let _one = ONE_AT_A_TIME.lock().await;
    let app = i9_tests::spawn_app().await;
    let r = app.http.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let s = scrape(&app, &app.address).await;
    assert!(
        s.contains("# TYPE http_request_duration_seconds histogram"),
        "{s}"
    );
    let healthz = [("method", "GET"), ("path", "/healthz")];
    assert!(
        sample(&s, "http_request_duration_seconds_count", &healthz).unwrap() >= 1.0,
        "{s}"
    );
    assert!(sample(
        &s,
        "http_request_duration_seconds_bucket",
        &[("method", "GET"), ("path", "/healthz"), ("le", "0.005")]
    )
    .is_some());
    assert!(!s.contains("quantile="), "no summary is exported: {s}");
}

/// The metric names in `text` (the alert rules, the dashboard): every
/// `i9_…` and `http_…` word.
fn metric_names(text: &str) -> std::collections::BTreeSet<String> {
    let re = regex::Regex::new(r"\b(?:i9|http)_[a-z0-9_]+").unwrap();
    re.find_iter(text).map(|m| m.as_str().to_owned()).collect()
}

/// The names a scrape exports, a histogram's with its `_bucket`, `_sum` and
/// `_count` series.
fn exported(scrape: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for line in scrape.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(name), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        names.insert(name.to_owned());
        if kind == "histogram" {
            for suffix in ["_bucket", "_sum", "_count"] {
                names.insert(format!("{name}{suffix}"));
            }
        }
    }
    names
}

/// A dashboard or an alert that names a metric the service does not export
/// shows nothing, or never fires: every name in deploy/prometheus/ and
/// deploy/grafana/ is one the API or the worker exports (both scraped here
/// after some work, a callback included, as its series appear with the
/// first attempt).
#[tokio::test]
async fn the_alerts_and_the_dashboard_name_only_metrics_the_service_exports() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (app, worker) = stack_with_worker_http(true).await;
    let receiver = Receiver::start().await;
    app.status_event_towards("partner-dashboard", &receiver.url)
        .await;
    eventually("a callback is delivered", || async {
        receiver.received().len() == 1
    })
    .await;
    eventually("the worker counts it", || async {
        sample(
            &scrape(&app, &worker).await,
            "i9_callbacks_total",
            &[("partner", "partner-dashboard"), ("outcome", "2xx")],
        ) == Some(1.0)
    })
    .await;
    let mut names = exported(&scrape(&app, &app.address).await);
    names.extend(exported(&scrape(&app, &worker).await));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for file in [
        "deploy/prometheus/alerts.yaml",
        "deploy/grafana/i9-dashboard.json",
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let used = metric_names(&text);
        assert!(used.len() >= 8, "{file} names metrics: {used:?}");
        let unknown: Vec<_> = used.difference(&names).collect();
        assert!(
            unknown.is_empty(),
            "{file} names metrics the service does not export: {unknown:?} (exported: {names:?})"
        );
    }
}
