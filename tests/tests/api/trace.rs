//! Following a request (docs/operations.md, "Logs"): the caller's W3C
//! `traceparent` and the request id travel from the API's request into the
//! outbox row of its job, the job's message, the worker's log lines of the
//! job (JSON, as `LOG_FORMAT=json` writes them) and the partner callback;
//! and with `OTEL_EXPORTER_OTLP_ENDPOINT` the spans reach an OTLP/HTTP
//! collector.
//!
//! Each test logs through the service's own subscriber
//! (`i9_common::telemetry::subscriber`), set as the default of its thread:
//! the test's runtime runs on that thread alone, the API, relay and worker
//! with it.

use std::sync::{Arc, Mutex};

use axum::{body::Bytes, extract::State, http::HeaderMap, routing::post, Router};
use futures_util::StreamExt;
use i9_common::{config::LogSettings, telemetry};
use i9_tests::{
    eventually, logs::Lines, spawn, test_worker_config, Receiver, Stack, TestApp, ADMIN, ATS_BOT,
};
use lapin::{
    options::{BasicConsumeOptions, BasicRejectOptions},
    types::{AMQPValue, FieldTable},
};
use serde_json::{json, Value};

const ATS: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");

/// A caller's trace: a fresh trace id, and the caller's span.
fn caller_trace() -> (String, String) {
    let trace_id = format!("{:032x}", rand::random::<u128>() | 1);
    let traceparent = format!("00-{trace_id}-00f067aa0ba902b7-01");
    (trace_id, traceparent)
}

/// The trace id and parent span id of a `traceparent`.
fn parts(traceparent: &str) -> (String, String) {
    let p: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(p.len(), 4, "{traceparent}");
    assert_eq!(p[0], "00", "{traceparent}");
    (p[1].to_owned(), p[2].to_owned())
}

/// The service's subscriber, JSON lines kept in memory, spans exported to
/// `otlp` if given; the default of this thread while the guard lives.
fn log_here(otlp: Option<&str>) -> (Lines, telemetry::Export, tracing::subscriber::DefaultGuard) {
    let lines = Lines::default();
    let settings = LogSettings {
        filter: Some(telemetry::SERVICES_DEFAULT_FILTER.to_owned()),
        json: true,
        otlp_endpoint: otlp.map(str::to_owned),
    };
    let (subscriber, export, problem) = telemetry::subscriber(
        &settings,
        telemetry::SERVICES_DEFAULT_FILTER,
        lines.clone(),
        false,
    );
    assert_eq!(problem, None);
    assert_eq!(export.is_on(), otlp.is_some());
    (lines, export, tracing::subscriber::set_default(subscriber))
}

/// The span named `name` among a JSON log line's spans.
fn span<'a>(line: &'a Value, name: &str) -> Option<&'a Value> {
    line["spans"].as_array()?.iter().find(|s| s["name"] == name)
}

/// A collector's OTLP/HTTP receiver: every export posted to `/v1/traces`.
#[derive(Clone, Default)]
struct Collector {
    posts: Arc<Mutex<Vec<(String, Bytes)>>>,
}

impl Collector {
    async fn start(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = Router::new()
            .route(
                "/v1/traces",
                post(
                    |State(c): State<Collector>, headers: HeaderMap, body: Bytes| async move {
                        let ct = headers
                            .get("content-type")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned();
                        c.posts.lock().unwrap().push((ct, body));
                        // An empty ExportTraceServiceResponse.
                        (
                            [("content-type", "application/x-protobuf")],
                            Vec::<u8>::new(),
                        )
                    },
                ),
            )
            .with_state(self.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://127.0.0.1:{port}")
    }

    /// Posts whose body holds the 16 bytes of `trace_id`.
    fn posts_with(&self, trace_id: &str) -> usize {
        let id: Vec<u8> = (0..16)
            .map(|i| u8::from_str_radix(&trace_id[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let posts = self.posts.lock().unwrap();
        for (ct, _) in posts.iter() {
            assert_eq!(ct, "application/x-protobuf");
        }
        posts
            .iter()
            .filter(|(_, body)| body.windows(16).any(|w| w == id.as_slice()))
            .count()
    }
}

#[tokio::test]
async fn a_request_is_followed_into_its_job_its_message_the_worker_log_and_the_collector() {
    let collector = Collector::default();
    let endpoint = collector.start().await;
    let (lines, export, guard) = log_here(Some(&endpoint));
    let app = spawn(
        Stack {
            jobs: true,
            no_worker: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    let token = app.token(ADMIN).await;
    let (trace_id, traceparent) = caller_trace();
    let request_id = format!("trace-{}", uuid::Uuid::new_v4().simple());
    let r = app
        .http
        .post(app.url("/v1/employees"))
        .bearer_auth(&token)
        .header("traceparent", &traceparent)
        .header("tracestate", "caller=opaque")
        .header("x-request-id", &request_id)
        .json(
            &json!({"firstName": "Tia", "lastName": "Trace", "locationId": 3,
                      "startDate": "2026-11-05", "createI9": "yes"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["x-request-id"], request_id.as_str());
    let employee = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();

    // The outbox row: the request's trace (its own span as the parent) and id.
    let rows: Vec<(uuid::Uuid, Value)> =
        sqlx::query_as("SELECT job_id, trace FROM job_outbox WHERE kind = 'create_i9'")
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let (job_id, stored) = &rows[0];
    assert_eq!(stored["x-request-id"], request_id.as_str());
    assert_eq!(stored["tracestate"], "caller=opaque");
    let stored_parent = stored["traceparent"].as_str().unwrap().to_owned();
    let (stored_trace, request_span) = parts(&stored_parent);
    assert_eq!(stored_trace, trace_id);
    assert_ne!(
        request_span, "00f067aa0ba902b7",
        "the API's span, not the caller's"
    );

    // The message the worker will consume carries them as headers: exactly
    // one, taken here and handed back.
    let queue = app.topology.queue(i9_common::jobs::JobKind::CreateI9);
    eventually("the relay publishes the job", || async {
        app.queue_depths(std::slice::from_ref(&queue)).await == [1]
    })
    .await;
    let conn = i9_common::amqp::connect(&i9_tests::amqp_url())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let mut consumer = ch
        .basic_consume(
            queue.as_str().into(),
            "trace-test".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    let delivery = consumer.next().await.unwrap().unwrap();
    let header = |name: &str| match delivery
        .properties
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(name))
    {
        Some(AMQPValue::LongString(s)) => String::from_utf8(s.as_bytes().to_vec()).unwrap(),
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(header("traceparent"), stored_parent);
    assert_eq!(header("tracestate"), "caller=opaque");
    assert_eq!(header("x-request-id"), request_id);
    assert_eq!(
        delivery.properties.message_id().as_ref().unwrap().as_str(),
        job_id.to_string()
    );
    delivery
        .acker
        .reject(BasicRejectOptions { requeue: true })
        .await
        .unwrap();
    conn.close(200, "taken and handed back".into())
        .await
        .unwrap();

    // The worker runs the job: its lines carry the job, the trace and the request.
    let _worker = app.start_worker_with(test_worker_config(&app.topology), app.stop_signal());
    eventually("the worker creates the I-9", || async {
        app.i9_count(employee).await == 1
    })
    .await;
    eventually("the worker logs the I-9", || async {
        lines
            .json()
            .iter()
            .any(|l| l["fields"]["message"] == "I-9 created")
    })
    .await;
    let logged = lines.json();
    let of_job: Vec<&Value> = logged
        .iter()
        .filter(|l| span(l, "job").is_some_and(|s| s["job_id"] == job_id.to_string().as_str()))
        .collect();
    assert!(!of_job.is_empty());
    for line in &of_job {
        let job = span(line, "job").unwrap();
        assert_eq!(job["trace_id"], trace_id.as_str(), "{line}");
        assert_eq!(job["request_id"], request_id.as_str(), "{line}");
        assert_eq!(job["kind"], "create_i9", "{line}");
    }
    let created: Vec<_> = of_job
        .iter()
        .filter(|l| {
            l["fields"]["message"] == "I-9 created" && l["fields"]["employee_id"] == employee
        })
        .collect();
    assert_eq!(created.len(), 1, "{of_job:?}");
    // The API's line of the request: one, with the same trace and id.
    let answered: Vec<_> = logged
        .iter()
        .filter(|l| {
            span(l, "request").is_some_and(|s| {
                s["trace_id"] == trace_id.as_str()
                    && s["request_id"] == request_id.as_str()
                    && s["route"] == "/v1/employees"
            }) && l["fields"]["message"] == "finished processing request"
        })
        .collect();
    assert_eq!(answered.len(), 1, "{logged:?}");

    // The collector receives the spans: the request's and the job's.
    let flushing = export.clone();
    tokio::task::spawn_blocking(move || flushing.flush())
        .await
        .unwrap();
    eventually("an export with the trace", || async {
        collector.posts_with(&trace_id) >= 1
    })
    .await;
    let posts = collector.posts.lock().unwrap().len();
    assert!(posts >= collector.posts_with(&trace_id));
    drop(guard);
    tokio::task::spawn_blocking(move || export.shutdown())
        .await
        .unwrap();
    lines.keep("trace-test");
}

async fn partner_token(app: &TestApp) -> String {
    app.sign_in_with(ATS, ATS_BOT, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_partner_callback_carries_the_trace_of_the_request_even_after_a_retry() {
    let (lines, _export, guard) = log_here(None);
    let app = spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        |c| c.allow_private_callbacks = true,
    )
    .await;
    let receiver: Receiver = app.partner_endpoint().await;
    // The first post fails: the callback comes back through a delay queue.
    receiver.fail_next(1);
    let token = partner_token(&app).await;
    let (trace_id, traceparent) = caller_trace();
    let r = app
        .http
        .post(app.url("/v1/partners/i9s/section1"))
        .bearer_auth(&token)
        .header("traceparent", &traceparent)
        .json(
            &json!({"integrationCandidateId": "cand-trace-1", "onboardingType": "on-site",
                      "firstName": "Ana", "lastName": "Diaz", "emailAddress": "ana@mail.example",
                      "startDate": "2026-11-05", "locationId": 3}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let request_id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    eventually("the creation callback", || async {
        receiver.received().len() == 1
    })
    .await;
    assert_eq!(receiver.attempts(), 2, "one failed post, one delivered");
    // Exactly one callback, with the request's trace; signed as ever.
    let with_trace: Vec<String> = receiver
        .received()
        .iter()
        .filter_map(|(h, _)| h.get("traceparent")?.to_str().ok().map(str::to_owned))
        .filter(|tp| parts(tp).0 == trace_id)
        .collect();
    assert_eq!(with_trace.len(), 1);
    let (_, callback_span) = parts(&with_trace[0]);
    assert_ne!(callback_span, "00f067aa0ba902b7");
    assert_eq!(crate::callbacks::verified(&receiver).len(), 1);

    // The worker's lines of the callback job, both attempts: trace and
    // request. The delivery is logged once recorded, after the partner has it.
    eventually("the worker logs the delivery", || async {
        lines
            .json()
            .iter()
            .any(|l| l["fields"]["message"] == "callback delivered")
    })
    .await;
    let logged = lines.json();
    let retried: Vec<&Value> = logged
        .iter()
        .filter(|l| span(l, "job").is_some_and(|s| s["kind"] == "post_status_callback"))
        .collect();
    assert!(
        retried
            .iter()
            .any(|l| span(l, "job").unwrap()["attempt"] == 2),
        "{retried:?}"
    );
    for line in &retried {
        let job = span(line, "job").unwrap();
        assert_eq!(job["trace_id"], trace_id.as_str(), "{line}");
        assert_eq!(job["request_id"], request_id.as_str(), "{line}");
    }
    drop(guard);
    lines.keep("trace-test");
}
