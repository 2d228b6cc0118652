//! Cross-cutting layers: request ids in logs, problem details for every
//! error (including the framework's own rejections), metrics.

use std::{
    any::Any,
    sync::OnceLock,
    time::{Duration, Instant},
};

use axum::{
    body::Body,
    extract::{MatchedPath, Request},
    http::{header, HeaderValue, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use metrics_exporter_prometheus::PrometheusHandle;
use tower_http::{
    classify::{ServerErrorsAsFailures, SharedClassifier},
    trace::{DefaultOnBodyChunk, DefaultOnEos, DefaultOnRequest, DefaultOnResponse, TraceLayer},
};
use tracing::{Level, Span};

use i9_common::trace;

use crate::error::problem;

/// Logs one span per request with its id, method and route: the route's
/// template (`/i9/section1/{token}`), never the path itself, which may carry
/// a link token, nor the query string, which may hold a social security
/// number. A path that matches no route is logged as `unmatched`.
///
/// The layer is added with `Router::layer`, which wraps each route after
/// routing (axum 0.8), so `MatchedPath` is already known here.
///
/// One line per request, at INFO, when it is answered (status and
/// latency): the classifier's own line for a 5xx (`response failed`, at
/// ERROR, without a cause) is not written. Causes are logged where they
/// are known: an internal error at ERROR by `crate::error`, the reasons for
/// a 503 at WARN by `crate::overload`.
pub fn trace_layer() -> RequestTrace {
    TraceLayer::new_for_http()
        .make_span_with(request_span as fn(&Request<Body>) -> Span)
        .on_response(DefaultOnResponse::new().level(Level::INFO))
        .on_failure(())
}

/// The layer [`trace_layer`] makes.
pub type RequestTrace = TraceLayer<
    SharedClassifier<ServerErrorsAsFailures>,
    fn(&Request<Body>) -> Span,
    DefaultOnRequest,
    DefaultOnResponse,
    DefaultOnBodyChunk,
    DefaultOnEos,
    (),
>;

/// The span of one request: its id, method and route template, and its
/// trace id: the caller's W3C `traceparent` (and `tracestate`) continued, or
/// a new trace. Jobs the request records carry both on (`i9_common::trace`;
/// docs/operations.md, "Logs").
fn request_span(req: &Request<Body>) -> Span {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str());
    let span = tracing::info_span!(
        "request",
        request_id = "-",
        method = %req.method(),
        route,
        trace_id = tracing::field::Empty,
        otel.name = %format_args!("{} {route}", req.method()),
        otel.kind = "server",
    );
    let mut fields = trace::Fields::new();
    for name in [trace::TRACEPARENT, trace::TRACESTATE, trace::REQUEST_ID] {
        if let Some(v) = req.headers().get(name).and_then(|v| v.to_str().ok()) {
            fields.insert(name.to_owned(), v.to_owned());
        }
    }
    trace::continue_trace(&span, &fields);
    span
}

/// How long a request may run before it is answered 503.
pub const REQUEST_TIME_LIMIT: Duration = Duration::from_secs(30);

/// Answer 503 (`/problems/unavailable`, with its own detail) to a request
/// still running after [`REQUEST_TIME_LIMIT`], and stop it (its work is
/// dropped: an open transaction rolls back); counted and logged by
/// `crate::overload`.
pub async fn request_time_limit(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    match tokio::time::timeout(REQUEST_TIME_LIMIT, next.run(req)).await {
        Ok(response) => response,
        Err(_) => {
            crate::overload::request_timed_out(&route, REQUEST_TIME_LIMIT);
            let mut response = problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "The request ran longer than 30 s and was stopped; retry later (a write sent \
                 with an Idempotency-Key is safe to send again).",
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            response
        }
    }
}

/// Turn any error response that is not already problem details (or an OAuth
/// error) into problem details, keeping its status and headers.
pub async fn problem_details(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // Problem details, OAuth errors and the HTML pages' own error pages stay.
    if content_type.starts_with("application/problem+json")
        || content_type.starts_with("application/json")
        || content_type.starts_with("text/html")
    {
        return response;
    }
    let (slug, detail) = match status {
        StatusCode::BAD_REQUEST => ("bad-request", "The request is malformed."),
        StatusCode::NOT_FOUND => ("not-found", "No such resource."),
        StatusCode::METHOD_NOT_ALLOWED => (
            "method-not-allowed",
            "This method is not allowed on this resource.",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (
            "payload-too-large",
            "The request body is larger than 256 KiB.",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (
            "unsupported-media-type",
            "Send the body as application/json.",
        ),
        StatusCode::UNPROCESSABLE_ENTITY => ("validation-error", "The request is not valid."),
        StatusCode::SERVICE_UNAVAILABLE => (
            "unavailable",
            "The service is temporarily unavailable; retry later.",
        ),
        s if s.is_server_error() => (
            "internal-error",
            "An unexpected error occurred. Quote the x-request-id header when reporting it.",
        ),
        _ => ("error", "The request failed."),
    };
    let (mut parts, _) = response.into_parts();
    let replacement = problem(status, slug, detail).into_response();
    let (new_parts, body) = replacement.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    if let Some(ct) = new_parts.headers.get(header::CONTENT_TYPE) {
        parts.headers.insert(header::CONTENT_TYPE, ct.clone());
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        parts
            .headers
            .entry(header::RETRY_AFTER)
            .or_insert(HeaderValue::from_static("5"));
    }
    Response::from_parts(parts, body)
}

/// The request's id (`x-request-id`, the caller's when plain, otherwise
/// one made for it), for handlers that record it without a [`Caller`]: the
/// employee pages' audit entries.
///
/// [`Caller`]: crate::auth::Caller
pub struct RequestId(pub Option<String>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for RequestId {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(RequestId(request_id(&parts.headers)))
    }
}

pub fn request_id(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Keep a caller's `x-request-id` only when it is a plain token (at most 64
/// of `A-Z a-z 0-9 - _ .`); otherwise drop it so a fresh one is generated.
/// It ends up in logs and the audit log.
pub async fn sanitize_request_id(mut req: Request, next: Next) -> Response {
    let ok = req
        .headers()
        .get("x-request-id")
        .map(|v| v.to_str().is_ok_and(trace::is_plain_request_id));
    if ok == Some(false) {
        req.headers_mut().remove("x-request-id");
    }
    next.run(req).await
}

pub fn panic_response(err: Box<dyn Any + Send + 'static>) -> Response {
    let _ = err; // the message may hold request data: not logged
    tracing::error!("handler panicked");
    let mut r = StatusCode::INTERNAL_SERVER_ERROR.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

/// The process-wide Prometheus recorder (`i9_common::metrics`: shared with
/// the worker, and every latency a histogram), with the API's own metrics
/// described and listed at zero.
pub fn metrics_handle() -> PrometheusHandle {
    static DESCRIBED: OnceLock<()> = OnceLock::new();
    let handle = i9_common::metrics::handle();
    DESCRIBED.get_or_init(|| {
        metrics::describe_histogram!(
            i9_common::metrics::HTTP_REQUEST_DURATION,
            metrics::Unit::Seconds,
            "Time to answer a request, by method and route template"
        );
        crate::overload::describe();
    });
    handle
}

/// A request that recorded a job wakes the outbox relays once it has been
/// answered, its transaction committed (`i9_common::outbox`, which says why
/// not by a `NOTIFY` inside the write).
pub async fn wake_relays(
    axum::extract::State(state): axum::extract::State<crate::state::AppState>,
    req: Request,
    next: Next,
) -> Response {
    i9_common::outbox::waking_relays(&state.pool, next.run(req)).await
}

pub async fn track_metrics(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let path = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let method = req.method().to_string();
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("http_requests_total", "method" => method.clone(), "path" => path.clone(), "status" => status)
        .increment(1);
    metrics::histogram!(i9_common::metrics::HTTP_REQUEST_DURATION, "method" => method, "path" => path)
        .record(start.elapsed().as_secs_f64());
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::{routing::get, Router};
    use tower::ServiceExt;

    /// On tokio's paused clock: the handler's wait passes at once.
    #[tokio::test(start_paused = true)]
    async fn a_request_past_the_time_limit_is_a_503_that_says_why() {
        let app = Router::new()
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(REQUEST_TIME_LIMIT + Duration::from_secs(1)).await;
                    "done"
                }),
            )
            .route("/quick", get(|| async { "done" }))
            .layer(axum::middleware::from_fn(request_time_limit));
        let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();
        let slow = app.clone().oneshot(get("/slow")).await.unwrap();
        assert_eq!(slow.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(slow.headers()[header::RETRY_AFTER], "5");
        let body = axum::body::to_bytes(slow.into_body(), 4096).await.unwrap();
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(problem["type"], "/problems/unavailable");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .starts_with("The request ran longer than 30 s and was stopped"),
            "{problem}"
        );
        let quick = app.oneshot(get("/quick")).await.unwrap();
        assert_eq!(quick.status(), StatusCode::OK);
    }
}
