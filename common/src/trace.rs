//! Following a request through the service (docs/operations.md, "Logs"):
//! the W3C Trace Context (`traceparent`, `tracestate`) and the request id
//! (`x-request-id`) travel from the API's request, through every job it
//! records in the outbox (`job_outbox.trace`), as headers of the job's
//! message, into the worker's span of the job and on to the partner
//! callbacks it posts.
//!
//! The trace context is OpenTelemetry's, kept by the layer
//! `crate::telemetry` installs: each `tracing` span has one, a span's
//! children inherit it, and the request id rides along as a value of it.
//! Spans carry their trace id as the field `trace_id` and the request id as
//! `request_id`, so every log line written inside them has both.

use std::collections::HashMap;

use opentelemetry::{
    propagation::TextMapPropagator,
    trace::{TraceContextExt, TraceId},
    Context,
};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// W3C Trace Context: the trace and the caller's span.
pub const TRACEPARENT: &str = "traceparent";
/// W3C Trace Context: vendors' data about the trace.
pub const TRACESTATE: &str = "tracestate";
/// The request id (the API's `x-request-id` header).
pub const REQUEST_ID: &str = "x-request-id";

/// What travels with a job: [`TRACEPARENT`], [`TRACESTATE`] and
/// [`REQUEST_ID`] to their values (those present). Stored as JSON in
/// `job_outbox.trace`; published as message headers of the same names.
pub type Fields = HashMap<String, String>;

/// The request id, as a value of the OpenTelemetry context.
#[derive(Debug, Clone)]
struct RequestId(String);

/// A request id worth keeping: a plain token, at most 64 of `A-Z a-z 0-9 -
/// _ .` (it ends up in logs and the audit log). The API drops any other
/// caller's `x-request-id` and makes one (`api/src/middleware.rs`).
pub fn is_plain_request_id(id: &str) -> bool {
    let b = id.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
}

/// Make `span` (just created, not yet entered) continue the trace `fields`
/// carry, or start a new one when they carry none (or a malformed
/// `traceparent`), and take their request id. Records the span's fields
/// `trace_id` and `request_id` (which it declares empty).
pub fn continue_trace(span: &Span, fields: &Fields) {
    let mut cx = TraceContextPropagator::new().extract(fields);
    if let Some(id) = fields.get(REQUEST_ID).filter(|id| is_plain_request_id(id)) {
        span.record("request_id", id.as_str());
        cx = cx.with_value(RequestId(id.clone()));
    }
    // Fails only without the layer (a span nobody records): nothing to follow.
    let _ = span.set_parent(cx);
    if let Some(trace_id) = trace_id_of(span) {
        span.record("trace_id", tracing::field::display(trace_id));
    }
}

/// The trace id of `span`, if it has one.
pub fn trace_id_of(span: &Span) -> Option<TraceId> {
    let id = span.context().span().span_context().trace_id();
    (id != TraceId::INVALID).then_some(id)
}

/// What to carry from the current span on: its `traceparent` (this span as
/// the parent), the caller's `tracestate` and the request id. `None` outside
/// any span (a periodic task of the worker, a command of `i9-admin`).
pub fn current_fields() -> Option<Fields> {
    fields_of(&Context::current())
}

fn fields_of(cx: &Context) -> Option<Fields> {
    let mut fields = Fields::new();
    TraceContextPropagator::new().inject_context(cx, &mut fields);
    if let Some(RequestId(id)) = cx.get::<RequestId>() {
        fields.insert(REQUEST_ID.to_owned(), id.clone());
    }
    (!fields.is_empty()).then_some(fields)
}

/// The `traceparent` of `span`, to send on a request made in it (a partner
/// callback): the receiver's span becomes this one's child.
pub fn traceparent_of(span: &Span) -> Option<String> {
    let mut fields = Fields::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut fields);
    fields.remove(TRACEPARENT)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: panics are failures
    use super::*;

    #[test]
    fn request_ids_are_plain_tokens() {
        assert!(is_plain_request_id("4bf92f35-77b3.4da6_a3ce"));
        assert!(!is_plain_request_id(""));
        assert!(!is_plain_request_id("a b"));
        assert!(!is_plain_request_id(&"a".repeat(65)));
    }

    #[test]
    fn fields_round_trip_through_a_context() {
        let mut fields = Fields::new();
        fields.insert(
            TRACEPARENT.into(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
        );
        fields.insert(TRACESTATE.into(), "vendor=opaque".into());
        fields.insert(REQUEST_ID.into(), "req-1".into());
        let cx = TraceContextPropagator::new()
            .extract(&fields)
            .with_value(RequestId("req-1".into()));
        assert_eq!(fields_of(&cx).unwrap(), fields);
        // Outside any trace there is nothing to carry.
        assert_eq!(fields_of(&Context::new()), None);
    }
}
