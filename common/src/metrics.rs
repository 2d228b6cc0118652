//! The Prometheus recorder of `i9-api` and `i9-worker` (one per process), the
//! names of the metrics the service exports beyond the API's own, and the
//! histogram buckets of every latency (docs/operations.md, "Metrics").
//!
//! metrics-exporter-prometheus renders a `histogram!` as a *summary*
//! (quantiles computed in the process, which cannot be added up across
//! processes) unless buckets are set for it: [`handle`] sets them for every
//! histogram, so each is a Prometheus histogram (`_bucket{le=…}`, `_sum`,
//! `_count`) that `histogram_quantile(…, sum by (le) (rate(…)))` aggregates
//! over every replica.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Time to answer an API request (`method`, `path`).
pub const HTTP_REQUEST_DURATION: &str = "http_request_duration_seconds";
/// Jobs settled by a worker, by `kind` and `outcome` ([`JobOutcome`]).
pub const JOBS: &str = "i9_jobs_total";
/// Time one attempt of a job took in its handler, by `kind`.
pub const JOB_DURATION: &str = "i9_job_duration_seconds";
/// Time from a job's enqueue (its outbox row's creation) to done, retries
/// included, by `kind`.
pub const JOB_LATENCY: &str = "i9_job_latency_seconds";
/// Partner status callback attempts, by `partner` (its client id) and
/// `outcome` (`2xx`, `3xx`, `4xx`, `410`, `5xx`, `timeout`, `unreachable`,
/// `refused`, `failed`).
pub const CALLBACKS: &str = "i9_callbacks_total";
/// Time one callback attempt took, connection included, by `partner`.
pub const CALLBACK_DURATION: &str = "i9_callback_duration_seconds";
/// Jobs in the outbox not yet published to RabbitMQ.
pub const OUTBOX_BACKLOG: &str = "i9_outbox_backlog";
/// Age of the oldest job not yet published (0 when there is none).
pub const OUTBOX_OLDEST_AGE: &str = "i9_outbox_oldest_age_seconds";
/// Messages ready (not in a consumer's hands) in each queue, by `queue`.
pub const QUEUE_READY: &str = "i9_queue_messages_ready";
/// Consumers of each job queue, by `queue`.
pub const QUEUE_CONSUMERS: &str = "i9_queue_consumers";
/// 1 while the worker holds its RabbitMQ connection, else 0.
pub const BROKER_CONNECTED: &str = "i9_worker_broker_connected";

/// How a job's delivery was settled (the `outcome` label of [`JOBS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOutcome {
    /// Done (acknowledged).
    Done,
    /// Failed for now; a copy waits in a delay queue for the next attempt.
    Retried,
    /// Another copy held the job's claim; this one waits for it to lapse.
    Waited,
    /// Failed for good (fatal, or its attempts exhausted): in the dead letters.
    DeadLettered,
    /// Could not be parked; handed back to its queue.
    Requeued,
}

impl JobOutcome {
    pub const ALL: [JobOutcome; 5] = [
        Self::Done,
        Self::Retried,
        Self::Waited,
        Self::DeadLettered,
        Self::Requeued,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Retried => "retried",
            Self::Waited => "waited",
            Self::DeadLettered => "dead_lettered",
            Self::Requeued => "requeued",
        }
    }
}

/// Buckets of request and callback latencies (seconds): 5 ms to the 30 s
/// request limit (a callback's limit is 15 s).
pub const REQUEST_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0,
];
/// Buckets of one job attempt (seconds): up to an email's 60 s limit.
pub const JOB_DURATION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Buckets of a job from enqueue to done (seconds): under a second when all
/// flows, up to a day (the callbacks' retry schedule, docs/operations.md,
/// "Retries").
pub const JOB_LATENCY_BUCKETS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0,
];

/// Every histogram and its buckets.
pub const HISTOGRAMS: &[(&str, &[f64])] = &[
    (HTTP_REQUEST_DURATION, REQUEST_BUCKETS),
    (JOB_DURATION, JOB_DURATION_BUCKETS),
    (JOB_LATENCY, JOB_LATENCY_BUCKETS),
    (CALLBACK_DURATION, REQUEST_BUCKETS),
];

/// The recorder's builder: buckets for every histogram named in
/// [`HISTOGRAMS`], and [`REQUEST_BUCKETS`] for any other, so that none is
/// rendered as a summary.
pub fn builder() -> PrometheusBuilder {
    let mut builder = PrometheusBuilder::new()
        .set_buckets(REQUEST_BUCKETS)
        .expect("buckets are not empty");
    for (name, buckets) in HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full((*name).to_owned()), buckets)
            .expect("buckets are not empty");
    }
    builder
}

/// The process-wide Prometheus recorder, installed on the first call.
pub fn handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = builder().build_recorder();
            let handle = recorder.handle();
            let _ = ::metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// The status class of an HTTP answer, as [`CALLBACKS`] labels it: `2xx`,
/// `3xx`, `4xx` (`410` alone, as it stops the retries), `5xx`.
pub fn status_class(status: u16) -> &'static str {
    match status {
        410 => "410",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        500..=599 => "5xx",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_latency_is_a_histogram_with_increasing_buckets() {
        for (name, buckets) in HISTOGRAMS {
            assert!(name.ends_with("_seconds"), "{name}");
            assert!(buckets.windows(2).all(|w| w[0] < w[1]), "{name}");
        }
        assert_eq!(status_class(204), "2xx");
        assert_eq!(status_class(410), "410");
        assert_eq!(status_class(404), "4xx");
        assert_eq!(status_class(503), "5xx");
    }
}
