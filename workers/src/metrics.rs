//! The worker's metrics (docs/operations.md, "Metrics"): jobs settled and
//! how long they took, partner callbacks by partner and outcome, and the
//! samplers of the outbox backlog and of the queues' depths. Names and
//! buckets are `i9_common::metrics`'s; `/metrics` is served by
//! [`crate::http`].

use std::time::Duration;

use i9_common::{
    amqp::Topology,
    jobs::JobKind,
    metrics::{
        JobOutcome, BROKER_CONNECTED, CALLBACKS, CALLBACK_DURATION, JOBS, JOB_DURATION,
        JOB_LATENCY, OUTBOX_BACKLOG, OUTBOX_OLDEST_AGE, QUEUE_CONSUMERS, QUEUE_READY,
    },
    outbox,
};
use lapin::Channel;
use metrics::{counter, gauge, histogram, Unit};
use sqlx::PgPool;
use tokio::sync::watch;

/// How often the samplers read the outbox and the queues.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(15);

/// Describe the worker's metrics and list each series of the job kinds
/// `kinds` at zero, so that an alert on one does not wait for its first
/// event (callbacks are listed per partner from their first attempt).
pub fn describe(kinds: &[JobKind]) {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        JOBS,
        "Job deliveries settled, by kind and outcome (done, retried, waited, dead_lettered, requeued)"
    );
    describe_histogram!(
        JOB_DURATION,
        Unit::Seconds,
        "Time one attempt of a job took in its handler, by kind"
    );
    describe_histogram!(
        JOB_LATENCY,
        Unit::Seconds,
        "Time from a job's enqueue (its outbox row) to done, retries included, by kind (to the second)"
    );
    describe_counter!(
        CALLBACKS,
        "Partner status callback attempts, by partner (client id) and outcome (2xx, 3xx, 4xx, 410, 5xx, timeout, unreachable, refused, failed)"
    );
    describe_histogram!(
        CALLBACK_DURATION,
        Unit::Seconds,
        "Time one callback attempt took, connection included, by partner"
    );
    describe_gauge!(
        OUTBOX_BACKLOG,
        "Jobs in the outbox not yet published to RabbitMQ"
    );
    describe_gauge!(
        OUTBOX_OLDEST_AGE,
        Unit::Seconds,
        "Age of the oldest job not yet published (0 when none waits)"
    );
    describe_gauge!(
        QUEUE_READY,
        "Messages ready in each queue (not in a consumer's hands)"
    );
    describe_gauge!(QUEUE_CONSUMERS, "Consumers of each queue");
    describe_gauge!(
        BROKER_CONNECTED,
        "1 while this worker holds its RabbitMQ connection, else 0"
    );
    for kind in kinds {
        for outcome in JobOutcome::ALL {
            counter!(JOBS, "kind" => kind.name(), "outcome" => outcome.as_str()).increment(0);
        }
        let _ = histogram!(JOB_DURATION, "kind" => kind.name());
        let _ = histogram!(JOB_LATENCY, "kind" => kind.name());
    }
    gauge!(BROKER_CONNECTED).set(0.0);
}

/// A delivery of `kind` settled as `outcome`, after `took` in its handler.
pub fn job_settled(kind: JobKind, outcome: JobOutcome, took: Duration) {
    counter!(JOBS, "kind" => kind.name(), "outcome" => outcome.as_str()).increment(1);
    histogram!(JOB_DURATION, "kind" => kind.name()).record(took.as_secs_f64());
}

/// A job of `kind` done, enqueued at `enqueued` (seconds since the epoch,
/// the AMQP `timestamp` the relay sets from the outbox row's creation).
pub fn job_done_since(kind: JobKind, enqueued: u64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let latency = (now - enqueued as f64).max(0.0);
    histogram!(JOB_LATENCY, "kind" => kind.name()).record(latency);
}

/// One callback attempt to `partner` (its client id): `outcome` as
/// [`CALLBACKS`] labels it, after `took`.
pub fn callback_attempted(partner: &str, outcome: &'static str, took: Duration) {
    counter!(CALLBACKS, "partner" => partner.to_owned(), "outcome" => outcome).increment(1);
    histogram!(CALLBACK_DURATION, "partner" => partner.to_owned()).record(took.as_secs_f64());
}

/// Whether the worker holds its broker connection.
pub fn broker_connected(up: bool) {
    gauge!(BROKER_CONNECTED).set(if up { 1.0 } else { 0.0 });
}

/// Read the outbox backlog into [`OUTBOX_BACKLOG`] and [`OUTBOX_OLDEST_AGE`]
/// every `every`, until `shutdown` turns true. One query over the
/// unpublished rows (`job_outbox_unpublished_idx`, a partial index that
/// holds only them: a few rows when all flows).
pub async fn sample_outbox(pool: PgPool, every: Duration, mut shutdown: watch::Receiver<bool>) {
    loop {
        if let Ok(b) = outbox::backlog(&pool).await {
            gauge!(OUTBOX_BACKLOG).set(b.jobs as f64);
            gauge!(OUTBOX_OLDEST_AGE).set(b.oldest_secs);
        } // else the database is away: the gauges keep their last values
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Read the depth and consumers of every job queue and of the dead letters
/// into [`QUEUE_READY`] and [`QUEUE_CONSUMERS`] every `every` (a passive
/// declare each), until the channel fails (the connection is going; the
/// next one samples again).
pub async fn sample_queues(channel: Channel, topology: Topology, every: Duration) {
    let queues: Vec<String> = JobKind::ALL
        .iter()
        .map(|k| topology.queue(*k))
        .chain([topology.dead_letter_queue()])
        .collect();
    loop {
        for queue in &queues {
            let Ok(q) = i9_common::amqp::inspect_queue(&channel, queue).await else {
                return;
            };
            gauge!(QUEUE_READY, "queue" => queue.clone()).set(f64::from(q.message_count()));
            gauge!(QUEUE_CONSUMERS, "queue" => queue.clone()).set(f64::from(q.consumer_count()));
        }
        tokio::time::sleep(every).await;
    }
}
