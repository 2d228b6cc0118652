//! What an operator sees when the API refuses work to protect itself or
//! cannot do it (docs/operations.md, "When the API answers 503" and
//! "Metrics"): a Prometheus counter for each reason, on `/metrics`, and for
//! the reasons that come in floods a WARN line at most every [`WARN_EVERY`]
//! with the count since the last one, so a flood writes a handful of lines
//! rather than one per request.

use std::{
    net::IpAddr,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::throttle::Kind;

/// The longest a flood of one reason goes unmentioned in the log, and the
/// shortest time between two of its lines.
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// Requests answered 503 because password checks were saturated, by route.
pub const REQUESTS_SHED: &str = "i9_requests_shed_total";
/// Sign-ins answered 429, by the kind of key that delays them.
pub const SIGN_INS_THROTTLED: &str = "i9_sign_ins_throttled_total";
/// Writes of SSNs answered 429 (api/src/ssn_writes.rs).
pub const SSN_WRITES_THROTTLED: &str = "i9_ssn_writes_throttled_total";
/// Requests answered 503 because the database was not available.
pub const DATABASE_UNAVAILABLE: &str = "i9_database_unavailable_total";
/// Requests answered 503 after running 30 s, by route.
pub const REQUEST_TIMEOUTS: &str = "i9_request_timeouts_total";
/// Connections refused at once, by the limit that refused them.
pub const CONNECTIONS_REFUSED: &str = "i9_http_connections_refused_total";
/// Times every `HTTP_MAX_CONNECTIONS` slot was taken, so that accepting
/// paused (new connections wait in the listen queue).
pub const CONNECTION_CAP_REACHED: &str = "i9_http_connection_cap_reached_total";
/// Connections closed for sending no complete request head in time.
pub const CONNECTIONS_TIMED_OUT: &str = "i9_http_connections_timed_out_total";
/// Connections open now.
pub const CONNECTIONS_OPEN: &str = "i9_http_connections_open";

/// The limit a refused connection met (the label of [`CONNECTIONS_REFUSED`]).
pub const PER_ADDRESS: &str = "per_address";

/// Describe every metric of this module and register each (a counter at
/// zero), so that `/metrics` lists them before the first event (an alert on
/// a missing series never fires). Called once, with the recorder.
pub fn describe() {
    use metrics::{counter, describe_counter, describe_gauge, gauge};
    describe_counter!(
        REQUESTS_SHED,
        "Requests answered 503 because password checks were saturated (busy), by route"
    );
    describe_counter!(
        SIGN_INS_THROTTLED,
        "Sign-ins answered 429 while their username or client address is delayed, by kind"
    );
    describe_counter!(
        SSN_WRITES_THROTTLED,
        "Writes of social security numbers answered 429 (per user and last four digits)"
    );
    describe_counter!(
        DATABASE_UNAVAILABLE,
        "Requests answered 503 because the database was not available"
    );
    describe_counter!(
        REQUEST_TIMEOUTS,
        "Requests answered 503 after running 30 s, by route"
    );
    describe_counter!(
        CONNECTIONS_REFUSED,
        "Connections refused at once, by limit (per_address: HTTP_MAX_CONNECTIONS_PER_ADDRESS)"
    );
    describe_counter!(
        CONNECTION_CAP_REACHED,
        "Times all HTTP_MAX_CONNECTIONS connections were open, so accepting paused"
    );
    describe_counter!(
        CONNECTIONS_TIMED_OUT,
        "Connections closed for sending no complete request head within HTTP_HEADER_TIMEOUT_SECS \
         (idle: after at least one request, as keep-alive; header: before any)"
    );
    describe_gauge!(CONNECTIONS_OPEN, "HTTP connections open now");
    for route in ["/oauth2/access_token", SET_PASSWORD] {
        counter!(REQUESTS_SHED, "route" => route).increment(0);
    }
    for kind in [Kind::Username, Kind::Address] {
        counter!(SIGN_INS_THROTTLED, "kind" => kind.as_str()).increment(0);
    }
    counter!(SSN_WRITES_THROTTLED).increment(0);
    counter!(DATABASE_UNAVAILABLE).increment(0);
    for route in crate::ROUTES {
        counter!(REQUEST_TIMEOUTS, "route" => *route).increment(0);
    }
    counter!(CONNECTIONS_REFUSED, "limit" => PER_ADDRESS).increment(0);
    counter!(CONNECTION_CAP_REACHED).increment(0);
    for reason in ["header", "idle"] {
        counter!(CONNECTIONS_TIMED_OUT, "reason" => reason).increment(0);
    }
    gauge!(CONNECTIONS_OPEN).increment(0.0);
}

/// The set-password page's route, which sheds as the token endpoint does.
pub const SET_PASSWORD: &str = "/account/set-password/{token}";

/// A WARN line that a flood writes at most once per [`WARN_EVERY`]: the
/// first event writes it at once, later ones are counted until the period
/// is over, and the next event then writes the count since the last line.
pub struct RateLimitedWarn {
    /// When the last line was written, and the events since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl RateLimitedWarn {
    pub const fn new() -> Self {
        Self {
            state: Mutex::new((None, 0)),
        }
    }

    /// Count one event at `now`. `Some(n)` when a line is due: `n` events
    /// since the last line, this one included.
    pub fn note_at(&self, now: Instant) -> Option<u64> {
        let Ok(mut state) = self.state.lock() else {
            return None;
        };
        let (last, count) = &mut *state;
        *count += 1;
        if last.is_some_and(|l| now.saturating_duration_since(l) < WARN_EVERY) {
            return None;
        }
        *last = Some(now);
        Some(std::mem::take(count))
    }

    pub fn note(&self) -> Option<u64> {
        self.note_at(Instant::now())
    }
}

impl Default for RateLimitedWarn {
    fn default() -> Self {
        Self::new()
    }
}

static SHED: RateLimitedWarn = RateLimitedWarn::new();
static UNAVAILABLE: RateLimitedWarn = RateLimitedWarn::new();
static TIMEOUTS: RateLimitedWarn = RateLimitedWarn::new();
static PER_ADDRESS_REFUSALS: RateLimitedWarn = RateLimitedWarn::new();
static CAP_REACHED: RateLimitedWarn = RateLimitedWarn::new();

/// A request answered 503 busy: no password-check turn came free in time
/// (api/src/hashing.rs).
pub fn shed(route: &'static str) {
    metrics::counter!(REQUESTS_SHED, "route" => route).increment(1);
    if let Some(count) = SHED.note() {
        tracing::warn!(
            count,
            "requests answered 503 busy: password checks are saturated \
             (PASSWORD_HASH_CONCURRENCY, PASSWORD_HASH_WAIT_SECS); count is since the last such line"
        );
    }
}

/// A sign-in answered 429, delayed by a key of `kind`.
pub fn sign_in_throttled(kind: Kind) {
    metrics::counter!(SIGN_INS_THROTTLED, "kind" => kind.as_str()).increment(1);
}

/// A write of an SSN answered 429.
pub fn ssn_write_throttled() {
    metrics::counter!(SSN_WRITES_THROTTLED).increment(1);
}

/// A request answered 503 because the database is not available (`cause`:
/// the error, which names no row value).
pub fn database_unavailable(cause: &dyn std::fmt::Display) {
    metrics::counter!(DATABASE_UNAVAILABLE).increment(1);
    if let Some(count) = UNAVAILABLE.note() {
        tracing::warn!(
            error = %cause,
            count,
            "database unavailable: requests answered 503; count is since the last such line"
        );
    }
}

/// A request answered 503 after running for `limit` (logged within its
/// request's span, which names the route).
pub fn request_timed_out(route: &str, limit: Duration) {
    metrics::counter!(REQUEST_TIMEOUTS, "route" => route.to_owned()).increment(1);
    if let Some(count) = TIMEOUTS.note() {
        tracing::warn!(
            count,
            "requests answered 503 after running {} s (the request time limit); count is since \
             the last such line",
            limit.as_secs()
        );
    }
}

/// A connection from `address` refused: it holds `cap` connections already.
pub fn connection_refused_per_address(address: IpAddr, cap: usize) {
    metrics::counter!(CONNECTIONS_REFUSED, "limit" => PER_ADDRESS).increment(1);
    if let Some(count) = PER_ADDRESS_REFUSALS.note() {
        tracing::warn!(
            %address,
            count,
            "connections refused: the client address holds HTTP_MAX_CONNECTIONS_PER_ADDRESS \
             ({cap}) connections already; count is since the last such line"
        );
    }
}

/// Every connection slot is taken: accepting pauses until one is free.
pub fn connection_cap_reached(cap: usize) {
    metrics::counter!(CONNECTION_CAP_REACHED).increment(1);
    if let Some(count) = CAP_REACHED.note() {
        tracing::warn!(
            count,
            "all HTTP_MAX_CONNECTIONS ({cap}) connections are open: new connections wait in the \
             listen queue (health checks too) until one closes; count is since the last such line"
        );
    }
}

/// A connection closed for sending no complete request head in time;
/// `idle` when it had served a request before (a kept-alive connection).
pub fn connection_timed_out(idle: bool) {
    let reason = if idle { "idle" } else { "header" };
    metrics::counter!(CONNECTIONS_TIMED_OUT, "reason" => reason).increment(1);
}

/// A connection accepted and served (for [`CONNECTIONS_OPEN`]).
pub fn connection_opened() {
    metrics::gauge!(CONNECTIONS_OPEN).increment(1.0);
}

/// A served connection closed.
pub fn connection_closed() {
    metrics::gauge!(CONNECTIONS_OPEN).decrement(1.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_writes_one_line_per_period_with_the_count_since_the_last() {
        let warn = RateLimitedWarn::new();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // The first event writes at once.
        assert_eq!(warn.note_at(at(0)), Some(1));
        // The next 999 within the period are counted, not written.
        for i in 1..1000 {
            assert_eq!(warn.note_at(at(i)), None, "{i}");
        }
        // The first after the period writes them, itself included.
        assert_eq!(warn.note_at(at(10_000)), Some(1000));
        assert_eq!(warn.note_at(at(19_999)), None);
        assert_eq!(warn.note_at(at(20_000)), Some(2));
        // After a quiet spell, the next event writes at once.
        assert_eq!(warn.note_at(at(90_000)), Some(1));
    }
}
