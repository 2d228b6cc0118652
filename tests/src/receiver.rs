//! A partner's callback endpoint for tests: a real HTTP server (axum) that
//! records what it receives and can fail on purpose.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc, Mutex,
};

use axum::{body::Bytes, extract::State, http::HeaderMap, http::StatusCode, routing::post, Router};

#[derive(Clone, Default)]
struct Shared {
    received: Arc<Mutex<Vec<(HeaderMap, Bytes)>>>,
    attempts: Arc<AtomicUsize>,
    /// When each request arrived, with its `webhook-id`.
    log: Arc<Mutex<Vec<(std::time::Instant, String)>>>,
    fail_next: Arc<AtomicUsize>,
    gone: Arc<std::sync::atomic::AtomicBool>,
    /// Milliseconds to take before answering (a slow partner).
    delay_ms: Arc<std::sync::atomic::AtomicU64>,
}

pub struct Receiver {
    pub url: String,
    /// A page of the partner's, to return employees to.
    pub return_url: String,
    shared: Shared,
}

async fn hook(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    s.attempts.fetch_add(1, Ordering::SeqCst);
    if let Ok(mut log) = s.log.lock() {
        let id = headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        log.push((std::time::Instant::now(), id.to_owned()));
    }
    let delay = s.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
    }
    if s.gone.load(Ordering::SeqCst) {
        return StatusCode::GONE;
    }
    if s.fail_next
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    if let Ok(mut r) = s.received.lock() {
        r.push((headers, body));
    }
    StatusCode::NO_CONTENT
}

impl Receiver {
    pub async fn start() -> Self {
        let shared = Shared::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        let port = listener.local_addr().expect("addr").port();
        let app = Router::new()
            .route("/i9-status", post(hook))
            // Where the partner sends employees back after Section 1.
            .route(
                "/done",
                axum::routing::get(|| async {
                    axum::response::Html(
                        "<!doctype html><title>ATS</title><h1>Back at the ATS</h1>",
                    )
                }),
            )
            .with_state(shared.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url: format!("http://127.0.0.1:{port}/i9-status"),
            return_url: format!("http://127.0.0.1:{port}/done"),
            shared,
        }
    }

    /// Delivered callbacks: headers and body.
    pub fn received(&self) -> Vec<(HeaderMap, Bytes)> {
        self.shared
            .received
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Requests seen, failed ones included.
    pub fn attempts(&self) -> usize {
        self.shared.attempts.load(Ordering::SeqCst)
    }

    /// When each request for `webhook_id` arrived, in order.
    pub fn attempt_times(&self, webhook_id: &str) -> Vec<std::time::Instant> {
        self.shared
            .log
            .lock()
            .map(|l| {
                l.iter()
                    .filter(|(_, id)| id == webhook_id)
                    .map(|(t, _)| *t)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Take `d` to answer each request from now on.
    pub fn slow_down(&self, d: std::time::Duration) {
        self.shared
            .delay_ms
            .store(d.as_millis() as u64, Ordering::SeqCst);
    }

    /// Answer 410 Gone from now on.
    pub fn go_away(&self) {
        self.shared.gone.store(true, Ordering::SeqCst);
    }

    /// Answer 503 to the next `n` requests.
    pub fn fail_next(&self, n: usize) {
        self.shared.fail_next.store(n, Ordering::SeqCst);
    }
}
