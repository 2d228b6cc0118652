//! The dead-letter queue (`{prefix}.dead`): jobs of every kind that failed for
//! good. [`publish`] is how a worker dead-letters a job; [`DeadLetters`] lists,
//! replays and purges them for `i9-admin jobs` (docs/operations.md, "Failed
//! jobs").
//!
//! AMQP cannot look at a queue without taking its messages, so a run takes
//! them, on a channel of its own, without acking: as many as the queue held
//! when the run started, up to [`Limits::max_messages`]. It reads them through
//! a consumer whose prefetch is exactly that count (`basic.get` does the same
//! one message at a time, and a quorum queue answers it ever slower as the
//! messages held grow: 97 s for 20,000, against 2 s this way). It holds them
//! unacknowledged while it works, so no one else takes them meanwhile and no
//! message is read twice in a run. It acks only what it removes (a purge, or a
//! replay the broker confirmed) and hands every other message back with
//! `basic.nack(requeue)`, one at a time in the order read. A quorum queue puts
//! returned messages at its tail, so a run that read the whole queue leaves
//! it in its order, and a run stopped by the limit moves what it read behind
//! the rest. Each return adds one to a message's `x-delivery-count`:
//! harmless, as the dead-letter queue has no delivery limit (it must never get
//! one). If a run dies, the broker returns what it held when its channel
//! closes.

use std::{collections::HashMap, future::Future, time::Duration};

use anyhow::{anyhow, Context as _};
use chrono::{DateTime, SecondsFormat, Utc};
use lapin::{
    message::{Delivery, DeliveryResult},
    options::{
        BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions,
        BasicQosOptions, ConfirmSelectOptions, QueueDeclareOptions,
    },
    types::{AMQPValue, FieldTable},
    BasicProperties, Channel, Connection,
};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use crate::{
    amqp::{
        self, Topology, DEAD_ATTEMPT_HEADER, DEAD_AT_HEADER, DEAD_ERROR_HEADER, DEAD_KIND_HEADER,
        DEAD_REASON_HEADER,
    },
    jobs::{DecodeError, Envelope, Job, JobKind, ENVELOPE_VERSION},
    trace,
};

/// The longest error text a dead job carries.
pub const MAX_ERROR_CHARS: usize = 500;

/// The attempt header of workers before the `i9-` headers, still on the
/// messages they dead-lettered.
use crate::amqp::{publish_confirmed, LEGACY_ATTEMPT_HEADER};

/// The most messages one run can hold: AMQP's largest prefetch.
pub const MAX_MESSAGES_PER_RUN: usize = u16::MAX as usize;

/// Bounds of one run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Messages read from the dead-letter queue at most (up to
    /// [`MAX_MESSAGES_PER_RUN`]).
    pub max_messages: usize,
    /// Limit on each broker operation (connect, get, publish and its confirm, ack).
    pub op_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_messages: MAX_MESSAGES_PER_RUN,
            op_timeout: Duration::from_secs(10),
        }
    }
}

/// Why the worker gave up on a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadReason {
    /// It can never succeed (a missing record, a bad address, a malformed message).
    Fatal,
    /// Its last attempt failed.
    Exhausted,
}

impl DeadReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fatal => "fatal",
            Self::Exhausted => "exhausted",
        }
    }
}

/// A job the worker gives up on, as [`publish`] dead-letters it.
#[derive(Debug, Clone)]
pub struct DeadLetter<'a> {
    /// The message id: the job id (`None` for a body that carries none).
    pub job_id: Option<Uuid>,
    pub kind: JobKind,
    /// Attempts made.
    pub attempt: u32,
    /// The last error (cut to [`MAX_ERROR_CHARS`]).
    pub error: &'a str,
    pub reason: DeadReason,
}

impl DeadLetter<'_> {
    /// The `i9-` headers of the contract (docs/operations.md, "Failed jobs"),
    /// dead at `at`.
    pub fn headers(&self, at: DateTime<Utc>) -> FieldTable {
        let mut h = FieldTable::default();
        h.insert(
            DEAD_KIND_HEADER.into(),
            AMQPValue::LongString(self.kind.name().into()),
        );
        h.insert(
            DEAD_ATTEMPT_HEADER.into(),
            AMQPValue::LongLongInt(i64::from(self.attempt)),
        );
        h.insert(
            DEAD_ERROR_HEADER.into(),
            AMQPValue::LongString(one_line(self.error).into()),
        );
        h.insert(
            DEAD_AT_HEADER.into(),
            AMQPValue::LongString(
                at.to_rfc3339_opts(SecondsFormat::Millis, true)
                    .as_str()
                    .into(),
            ),
        );
        h.insert(
            DEAD_REASON_HEADER.into(),
            AMQPValue::LongString(self.reason.as_str().into()),
        );
        h
    }
}

/// Dead-letter a job: publish `body` (the message as received) to the
/// dead-letter exchange with the `i9-` headers, persistent, routed by its
/// kind, and wait for the broker's confirm. `channel` must be in confirm mode.
pub async fn publish(
    channel: &Channel,
    topology: &Topology,
    body: &[u8],
    dead: &DeadLetter<'_>,
    timeout: Duration,
) -> anyhow::Result<()> {
    publish_traced(channel, topology, body, dead, None, timeout).await
}

/// [`publish`], keeping the trace context and request id the job's message
/// carried (`traceparent`, `tracestate`, `x-request-id` of `carried`), so
/// the dead message, and its replay, still name the request it came from.
pub async fn publish_traced(
    channel: &Channel,
    topology: &Topology,
    body: &[u8],
    dead: &DeadLetter<'_>,
    carried: Option<&FieldTable>,
    timeout: Duration,
) -> anyhow::Result<()> {
    let mut headers = dead.headers(Utc::now());
    copy_trace_headers(carried, &mut headers);
    let props = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_headers(headers);
    let props = match dead.job_id {
        Some(id) => props.with_message_id(id.to_string().into()),
        None => props,
    };
    publish_confirmed(
        channel,
        &topology.dead_letter_exchange(),
        dead.kind.name(),
        body,
        props,
        timeout,
    )
    .await
}

/// Copy the trace headers (`crate::trace`) of `from` into `to`.
fn copy_trace_headers(from: Option<&FieldTable>, to: &mut FieldTable) {
    let Some(from) = from else { return };
    for name in [trace::TRACEPARENT, trace::TRACESTATE, trace::REQUEST_ID] {
        if let Some(v) = from.inner().get(name) {
            to.insert(name.into(), v.clone());
        }
    }
}

/// Ready messages in `queue` (a passive declare: fails if it does not exist).
pub async fn depth(channel: &Channel, queue: &str, timeout: Duration) -> anyhow::Result<u32> {
    let q = timed(
        timeout,
        "counting its messages",
        channel.queue_declare(
            queue.into(),
            QueueDeclareOptions {
                passive: true,
                ..Default::default()
            },
            FieldTable::default(),
        ),
    )
    .await?;
    Ok(q.message_count())
}

/// One failed job in the dead-letter queue; copies of one job id (a job
/// dead-lettered more than once) are one `DeadJob`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadJob {
    /// The job id: the envelope's, else the message id, else `body-` and a
    /// digest of the body.
    pub id: String,
    pub kind: Option<String>,
    /// What the job is about, by id: `user 42`, `request <uuid>`, `event <uuid>`.
    pub subject: Option<String>,
    /// Attempts made, when the message says.
    pub attempts: Option<i64>,
    /// The worker's `fatal` or `exhausted`, or RabbitMQ's dead-letter reason
    /// (`delivery_limit`, `rejected`, ...), or `unknown`.
    pub reason: String,
    pub dead_at: Option<DateTime<Utc>>,
    /// The last error, one line.
    pub error: Option<String>,
    /// Why the body is not a job envelope: it can be purged, not replayed.
    pub malformed: Option<String>,
    /// Messages of this job in the queue.
    pub copies: usize,
}

/// Which dead jobs a replay or purge is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// These job ids, every one of which must be there.
    Ids(Vec<String>),
    /// Every one (of a kind).
    All { kind: Option<JobKind> },
}

/// What a run read of the dead-letter queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    pub queue: String,
    /// Messages waiting in the queue when the run started.
    pub ready: u32,
    /// Messages read.
    pub read: usize,
    /// Whether the run read every message waiting at its start (else it
    /// stopped at the limit).
    pub complete: bool,
}

impl std::fmt::Display for Scanned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.complete {
            write!(f, "all {} message(s) read", self.read)
        } else {
            write!(
                f,
                "only {} of its {} message(s) read: raise the limit (--max-messages)",
                self.read, self.ready
            )
        }
    }
}

/// What a listing read.
#[derive(Debug, Clone)]
pub struct Listing {
    pub scanned: Scanned,
    /// The jobs read (of the kind asked for), in queue order.
    pub jobs: Vec<DeadJob>,
}

/// What a replay or a purge did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub scanned: Scanned,
    /// The jobs replayed or purged, every copy of each removed.
    pub done: Vec<DeadJob>,
    /// Malformed messages a replay of `--all` left where they are.
    pub left_malformed: Vec<DeadJob>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no dead job {} in {} ({scanned}); nothing was changed", .ids.join(", "), .scanned.queue)]
    NotFound { ids: Vec<String>, scanned: Scanned },
    #[error("{} is not a job envelope ({reason}): it can be purged, not replayed; nothing was changed", .ids.join(", "))]
    Malformed { ids: Vec<String>, reason: String },
    #[error("{source:#} (after {} job(s) replayed)", .done.len())]
    Interrupted {
        done: Vec<DeadJob>,
        source: anyhow::Error,
    },
    #[error(transparent)]
    Broker(#[from] anyhow::Error),
}

/// The dead-letter queue of a topology, over a connection of its own.
pub struct DeadLetters {
    connection: Connection,
    topology: Topology,
    limits: Limits,
}

impl DeadLetters {
    pub async fn connect(
        amqp_url: &secrecy::SecretString,
        topology: Topology,
        limits: Limits,
    ) -> anyhow::Result<Self> {
        let connection = timed(
            limits.op_timeout,
            "connecting to RabbitMQ (AMQP_URL)",
            amqp::connect(amqp_url),
        )
        .await?;
        Ok(Self {
            connection,
            topology,
            limits,
        })
    }

    pub async fn close(self) {
        let _ = timed(
            self.limits.op_timeout,
            "closing",
            self.connection.close(200, "done".into()),
        )
        .await;
    }

    /// Every dead job (of `kind`), in queue order; the queue is left as it was.
    pub async fn list(&self, kind: Option<JobKind>) -> Result<Listing, Error> {
        let scan = Scan::take(&self.connection, &self.topology, self.limits).await?;
        let jobs = scan
            .groups
            .iter()
            .filter(|g| kind.is_none_or(|k| g.job.kind.as_deref() == Some(k.name())))
            .map(|g| g.job.clone())
            .collect();
        let listing = Listing {
            scanned: scan.scanned(),
            jobs,
        };
        scan.release(self.limits).await?;
        Ok(listing)
    }

    /// Send the chosen jobs to their queues again, each with a fresh attempt
    /// count, and remove their dead messages once the broker confirmed. A
    /// `post_status_callback` job also clears the dead mark of its partner
    /// event (in `pool`), so `i9-admin callbacks failed` agrees.
    pub async fn replay(&self, which: &Selection, pool: Option<&PgPool>) -> Result<Outcome, Error> {
        let mut scan = Scan::take(&self.connection, &self.topology, self.limits).await?;
        let result = self.replay_taken(&mut scan, which, pool).await;
        finish(scan, self.limits, result).await
    }

    async fn replay_taken(
        &self,
        scan: &mut Scan,
        which: &Selection,
        pool: Option<&PgPool>,
    ) -> Result<Outcome, Error> {
        let chosen = scan.select(which)?;
        let (malformed, chosen): (Vec<usize>, Vec<usize>) = chosen
            .into_iter()
            .partition(|g| scan.groups[*g].job.malformed.is_some());
        if let (Selection::Ids(_), Some(first)) = (which, malformed.first()) {
            return Err(Error::Malformed {
                ids: malformed
                    .iter()
                    .map(|g| scan.groups[*g].job.id.clone())
                    .collect(),
                reason: scan.groups[*first]
                    .job
                    .malformed
                    .clone()
                    .unwrap_or_default(),
            });
        }
        let mut done = Vec::new();
        for g in chosen {
            if let Err(source) = scan.replay(g, &self.topology, pool, self.limits).await {
                return Err(Error::Interrupted {
                    done,
                    source: source.context(format!("replaying {}", scan.groups[g].job.id)),
                });
            }
            done.push(scan.groups[g].job.clone());
        }
        Ok(scan.outcome(
            done,
            malformed
                .iter()
                .map(|g| scan.groups[*g].job.clone())
                .collect(),
        ))
    }

    /// Remove the chosen jobs (every copy) from the dead-letter queue for good.
    pub async fn purge(&self, which: &Selection) -> Result<Outcome, Error> {
        let mut scan = Scan::take(&self.connection, &self.topology, self.limits).await?;
        let result: Result<Outcome, Error> = async {
            let chosen = scan.select(which)?;
            let mut done = Vec::new();
            for g in chosen {
                scan.remove(g, self.limits).await.map_err(|source| {
                    Error::Broker(source.context(format!("purging {}", scan.groups[g].job.id)))
                })?;
                done.push(scan.groups[g].job.clone());
            }
            Ok(scan.outcome(done, Vec::new()))
        }
        .await;
        finish(scan, self.limits, result).await
    }
}

/// Hand back what a run did not remove; the run's own error comes first.
async fn finish<T>(scan: Scan, limits: Limits, result: Result<T, Error>) -> Result<T, Error> {
    let released = scan.release(limits).await;
    let value = result?;
    released?;
    Ok(value)
}

/// One dead job's messages among those taken.
struct Group {
    job: DeadJob,
    /// The envelope (none for a malformed message).
    envelope: Option<Envelope>,
    /// Indices into `Scan::taken`, in queue order.
    messages: Vec<usize>,
}

/// Messages taken from the dead-letter queue and held unacknowledged.
struct Scan {
    channel: Channel,
    queue: String,
    taken: Vec<(Delivery, bool)>,
    groups: Vec<Group>,
    ready: u32,
    complete: bool,
}

impl Scan {
    async fn take(
        connection: &Connection,
        topology: &Topology,
        limits: Limits,
    ) -> anyhow::Result<Self> {
        let t = limits.op_timeout;
        let channel = timed(t, "opening a channel", connection.create_channel()).await?;
        timed(
            t,
            "enabling publisher confirms",
            channel.confirm_select(ConfirmSelectOptions::default()),
        )
        .await?;
        let queue = topology.dead_letter_queue();
        let ready = depth(&channel, &queue, t).await.map_err(|e| {
            anyhow!("the dead-letter queue {queue} cannot be read (is AMQP_PREFIX right?): {e}")
        })?;
        let target = ready.min(limits.max_messages.clamp(1, MAX_MESSAGES_PER_RUN) as u32);
        let read = if target == 0 {
            Ok(Vec::new())
        } else {
            read(&channel, &queue, target, t).await
        };
        let mut read = match read {
            Ok(r) => r,
            Err(e) => {
                // Closing the channel hands back what it holds.
                let _ = timed(t, "closing", channel.close(200, "read failed".into())).await;
                return Err(e);
            }
        };
        read.sort_by_key(|d| d.delivery_tag);
        let mut scan = Scan {
            channel,
            queue,
            taken: Vec::new(),
            groups: Vec::new(),
            ready,
            complete: read.len() >= ready as usize,
        };
        let mut index: HashMap<String, usize> = HashMap::new();
        for d in read {
            scan.add(d, &mut index);
        }
        Ok(scan)
    }

    fn add(&mut self, d: Delivery, index: &mut HashMap<String, usize>) {
        let (job, envelope) = describe(
            &d.data,
            d.properties.message_id().as_ref().map(|m| m.as_str()),
            d.properties.headers().as_ref(),
            d.routing_key.as_str(),
        );
        let at = self.taken.len();
        self.taken.push((d, false));
        match index.get(&job.id) {
            Some(g) => {
                let group = &mut self.groups[*g];
                group.messages.push(at);
                group.job.copies += 1;
                let attempts = group.job.attempts.max(job.attempts);
                if job.dead_at >= group.job.dead_at {
                    group.job.reason = job.reason;
                    group.job.dead_at = job.dead_at;
                    group.job.error = job.error;
                }
                group.job.attempts = attempts;
                if group.envelope.is_none() && envelope.is_some() {
                    group.envelope = envelope;
                    group.job.kind = job.kind;
                    group.job.subject = job.subject;
                    group.job.malformed = None;
                }
            }
            None => {
                index.insert(job.id.clone(), self.groups.len());
                self.groups.push(Group {
                    job,
                    envelope,
                    messages: vec![at],
                });
            }
        }
    }

    /// The groups chosen, in queue order; every id asked for must be there.
    fn select(&self, which: &Selection) -> Result<Vec<usize>, Error> {
        match which {
            Selection::All { kind } => Ok((0..self.groups.len())
                .filter(|g| {
                    kind.is_none_or(|k| self.groups[*g].job.kind.as_deref() == Some(k.name()))
                })
                .collect()),
            Selection::Ids(ids) => {
                let mut chosen = Vec::new();
                let mut missing = Vec::new();
                for id in ids {
                    let id = normalize_id(id);
                    match self.groups.iter().position(|g| g.job.id == id) {
                        Some(g) if !chosen.contains(&g) => chosen.push(g),
                        Some(_) => {}
                        None => missing.push(id),
                    }
                }
                if !missing.is_empty() {
                    return Err(Error::NotFound {
                        ids: missing,
                        scanned: self.scanned(),
                    });
                }
                chosen.sort_unstable();
                Ok(chosen)
            }
        }
    }

    /// Publish group `g`'s job to its queue, confirmed, then remove its dead messages.
    async fn replay(
        &mut self,
        g: usize,
        topology: &Topology,
        pool: Option<&PgPool>,
        limits: Limits,
    ) -> anyhow::Result<()> {
        let group = &self.groups[g];
        let envelope = group
            .envelope
            .as_ref()
            .ok_or_else(|| anyhow!("a malformed message cannot be replayed"))?;
        // The first copy that decodes carries the body sent again as it is.
        let copy = group
            .messages
            .iter()
            .map(|m| &self.taken[*m].0)
            .find(|d| Envelope::decode(&d.data).is_ok())
            .ok_or_else(|| anyhow!("no copy decodes"))?;
        let body = &copy.data;
        let event = match &envelope.job {
            Job::PostStatusCallback { event_id } => Some(*event_id),
            _ => None,
        };
        // Cleared before the publish, so a worker that fails the job again at
        // once marks it dead again after us, not before.
        let cleared = match event {
            Some(event_id) => {
                let pool = pool.ok_or_else(|| {
                    anyhow!("replaying a post_status_callback job needs the database")
                })?;
                clear_dead_mark(pool, event_id).await?
            }
            None => None,
        };
        let mut headers = FieldTable::default();
        // A fresh attempt count; nothing of the dead message's past (no
        // x-death, no error) travels with it, but its trace context and
        // request id do (docs/operations.md, "Logs").
        headers.insert(DEAD_ATTEMPT_HEADER.into(), AMQPValue::LongLongInt(1));
        copy_trace_headers(copy.properties.headers().as_ref(), &mut headers);
        let props = BasicProperties::default()
            .with_delivery_mode(2)
            .with_content_type("application/json".into())
            .with_message_id(envelope.job_id.to_string().into())
            .with_headers(headers);
        let published = publish_confirmed(
            &self.channel,
            &topology.jobs_exchange(),
            envelope.job.kind().name(),
            body,
            props,
            limits.op_timeout,
        )
        .await;
        if let Err(e) = published {
            if let (Some(event_id), Some(at), Some(pool)) = (event, cleared, pool) {
                restore_dead_mark(pool, event_id, at).await;
            }
            return Err(e);
        }
        self.remove(g, limits).await.context(
            "published, but removing its dead message failed (replaying it again is harmless)",
        )
    }

    /// Ack every message of group `g`.
    async fn remove(&mut self, g: usize, limits: Limits) -> anyhow::Result<()> {
        for m in self.groups[g].messages.clone() {
            let (delivery, settled) = &mut self.taken[m];
            if *settled {
                continue;
            }
            timed(
                limits.op_timeout,
                "acknowledging a dead message",
                amqp::settle(delivery.acker.ack(BasicAckOptions::default())),
            )
            .await?;
            *settled = true;
        }
        Ok(())
    }

    fn scanned(&self) -> Scanned {
        Scanned {
            queue: self.queue.clone(),
            ready: self.ready,
            read: self.taken.len(),
            complete: self.complete,
        }
    }

    fn outcome(&self, done: Vec<DeadJob>, left_malformed: Vec<DeadJob>) -> Outcome {
        Outcome {
            scanned: self.scanned(),
            done,
            left_malformed,
        }
    }

    /// Wait (at most `t`) until the broker took back what was handed back:
    /// closing the channel sooner makes it return the messages still in
    /// flight on its own, ahead of some handed back before them.
    async fn await_returns(&self, t: Duration) {
        let removed = self.taken.iter().filter(|(_, settled)| *settled).count();
        let expected = (self.ready as usize).saturating_sub(removed);
        let deadline = tokio::time::Instant::now() + t;
        while tokio::time::Instant::now() < deadline {
            match depth(&self.channel, &self.queue, t).await {
                Ok(n) if n as usize >= expected => return,
                Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(_) => return,
            }
        }
    }

    /// Hand back, in the order read, every message not removed.
    async fn release(self, limits: Limits) -> anyhow::Result<()> {
        let t = limits.op_timeout;
        let mut result = Ok(());
        for (delivery, settled) in &self.taken {
            if *settled {
                continue;
            }
            let nack = timed(
                t,
                "handing back a dead message",
                amqp::settle(delivery.acker.nack(BasicNackOptions {
                    multiple: false,
                    requeue: true,
                })),
            )
            .await;
            if let Err(e) = nack {
                // Closing the channel hands back the rest.
                result = Err(e);
                break;
            }
        }
        if result.is_ok() {
            self.await_returns(t).await;
        }
        let closed = timed(
            t,
            "closing the channel",
            self.channel.close(200, "done".into()),
        )
        .await;
        result.and(closed)
    }
}

/// Take `target` messages from `queue` unacknowledged: a consumer whose
/// prefetch is exactly `target`, so the broker sends no more, cancelled once
/// they are in (or when none came for `t`: another reader holds the rest).
/// They may arrive here out of delivery order: sort by delivery tag.
async fn read(
    channel: &Channel,
    queue: &str,
    target: u32,
    t: Duration,
) -> anyhow::Result<Vec<Delivery>> {
    let prefetch = u16::try_from(target).unwrap_or(u16::MAX);
    timed(
        t,
        "setting the prefetch",
        channel.basic_qos(prefetch, BasicQosOptions::default()),
    )
    .await?;
    let tag = format!("i9-dead-letters-{}", Uuid::new_v4().simple());
    let consumer = timed(
        t,
        "reading the dead-letter queue",
        channel.basic_consume(
            queue.into(),
            tag.as_str().into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        ),
    )
    .await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    consumer.set_delegate(move |delivery: DeliveryResult| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(delivery);
        }
    });
    let mut taken = Vec::new();
    let mut failed = None;
    while taken.len() < target as usize {
        match tokio::time::timeout(t, rx.recv()).await {
            Ok(Some(Ok(Some(d)))) => taken.push(d),
            Ok(Some(Err(e))) => {
                failed = Some(anyhow!("reading the dead-letter queue failed: {e}"));
                break;
            }
            // Cancelled by the broker (the queue went away), or nothing for `t`.
            Ok(Some(Ok(None)) | None) | Err(_) => break,
        }
    }
    let cancelled = timed(
        t,
        "ending the read",
        channel.basic_cancel(tag.into(), BasicCancelOptions::default()),
    )
    .await;
    if let Some(e) = failed {
        return Err(e);
    }
    cancelled?;
    // Deliveries still on their way when the read ended.
    while let Ok(Ok(Some(d))) = rx.try_recv() {
        taken.push(d);
    }
    Ok(taken)
}

/// Clear the dead mark of an undelivered partner event; returns the mark cleared.
async fn clear_dead_mark(pool: &PgPool, event_id: Uuid) -> anyhow::Result<Option<DateTime<Utc>>> {
    sqlx::query_scalar!(
        r#"UPDATE partner_events ev SET dead_at = NULL
         FROM partner_events old
         WHERE ev.id = $1 AND old.id = ev.id AND ev.dead_at IS NOT NULL AND ev.delivered_at IS NULL
         RETURNING old.dead_at AS "dead_at!""#,
        event_id,
    )
    .fetch_optional(pool)
    .await
    .with_context(|| format!("clearing the dead mark of partner event {event_id}"))
}

/// Put back a dead mark cleared for a replay that did not happen.
async fn restore_dead_mark(pool: &PgPool, event_id: Uuid, at: DateTime<Utc>) {
    let r = sqlx::query!(
        "UPDATE partner_events SET dead_at = $2 WHERE id = $1 AND dead_at IS NULL AND delivered_at IS NULL",
        event_id,
        at,
    )
    .execute(pool)
    .await;
    if let Err(e) = r {
        tracing::error!(error = %e, %event_id, "could not restore the dead mark of a callback that was not replayed");
    }
}

/// Read one dead message: the job it holds and how it died. Nothing of the
/// body but its ids is kept (a malformed body is described, never shown).
fn describe(
    body: &[u8],
    message_id: Option<&str>,
    headers: Option<&FieldTable>,
    routing_key: &str,
) -> (DeadJob, Option<Envelope>) {
    let header = |name: &str| headers.and_then(|h| h.inner().get(name));
    let death = header("x-death").and_then(|v| match v {
        AMQPValue::FieldArray(a) => a.as_slice().first().and_then(|e| match e {
            AMQPValue::FieldTable(t) => Some(t),
            _ => None,
        }),
        _ => None,
    });
    let death_field = |name: &str| death.and_then(|d| d.inner().get(name));
    let decoded = Envelope::decode(body);
    let malformed = match &decoded {
        Ok(_) => None,
        Err(DecodeError::Version(v)) => Some(format!(
            "envelope version {v}; this release reads {ENVELOPE_VERSION}"
        )),
        Err(DecodeError::Malformed(e)) if e.is_data() => Some("JSON, but not a job".to_owned()),
        Err(DecodeError::Malformed(_)) => Some("not JSON".to_owned()),
    };
    let envelope = decoded.ok();
    let message_id = message_id.map(str::trim).filter(|m| !m.is_empty());
    let id = match (&envelope, message_id) {
        (Some(env), _) => env.job_id.to_string(),
        (None, Some(m)) => normalize_id(m),
        (None, None) => {
            let digest = Sha256::digest(body);
            let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
            format!("body-{hex}")
        }
    };
    let kind = envelope
        .as_ref()
        .map(|e| e.job.kind().name().to_owned())
        .or_else(|| header(DEAD_KIND_HEADER).and_then(text))
        .or_else(|| {
            death_field("routing-keys").and_then(|v| match v {
                AMQPValue::FieldArray(a) => a.as_slice().first().and_then(text),
                _ => None,
            })
        })
        .or_else(|| (!routing_key.is_empty()).then(|| routing_key.to_owned()));
    let reason = header(DEAD_REASON_HEADER)
        .and_then(text)
        .or_else(|| death_field("reason").and_then(text))
        .unwrap_or_else(|| "unknown".to_owned());
    let dead_at = header(DEAD_AT_HEADER)
        .and_then(text)
        .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
        .map(|t| t.with_timezone(&Utc))
        .or_else(|| {
            death_field("time").and_then(|v| match v {
                AMQPValue::Timestamp(secs) => {
                    DateTime::from_timestamp(i64::try_from(*secs).ok()?, 0)
                }
                _ => None,
            })
        });
    let attempts = header(DEAD_ATTEMPT_HEADER)
        .and_then(integer)
        .or_else(|| header(LEGACY_ATTEMPT_HEADER).and_then(integer))
        // A worker before the i9- headers set no attempt header on a first attempt.
        .or_else(|| (reason == "rejected").then_some(1));
    let job = DeadJob {
        id,
        kind,
        subject: envelope.as_ref().map(|e| subject(&e.job)),
        attempts,
        reason,
        dead_at,
        error: header(DEAD_ERROR_HEADER)
            .and_then(text)
            .map(|e| one_line(&e)),
        malformed,
        copies: 1,
    };
    (job, envelope)
}

/// What a job is about, by id.
fn subject(job: &Job) -> String {
    match job {
        Job::CreateI9 { request_id } | Job::SendRemoteHireEmail { request_id } => {
            format!("request {request_id}")
        }
        Job::SendLoginEmail { user_id } => format!("user {user_id}"),
        Job::PostStatusCallback { event_id } => format!("event {event_id}"),
        Job::SendReminderEmail {
            reminder_id,
            recipient,
        } => format!("reminder {reminder_id} (notificationEmail{recipient})"),
        Job::SubmitEverifyCase { case_id, .. } => format!("E-Verify case {case_id}"),
        Job::SendRevocationEmail {
            request_id,
            recipient,
        } => format!("reverification request {request_id} (notificationEmail{recipient})"),
    }
}

/// A job id as typed: a UUID in its canonical form, anything else as it is.
fn normalize_id(id: &str) -> String {
    let id = id.trim();
    Uuid::parse_str(id).map_or_else(|_| id.to_owned(), |u| u.to_string())
}

fn text(v: &AMQPValue) -> Option<String> {
    match v {
        AMQPValue::LongString(s) => Some(s.to_string()),
        AMQPValue::ShortString(s) => Some(s.to_string()),
        _ => None,
    }
}

fn integer(v: &AMQPValue) -> Option<i64> {
    match v {
        AMQPValue::ShortShortInt(n) => Some(i64::from(*n)),
        AMQPValue::ShortShortUInt(n) => Some(i64::from(*n)),
        AMQPValue::ShortInt(n) => Some(i64::from(*n)),
        AMQPValue::ShortUInt(n) => Some(i64::from(*n)),
        AMQPValue::LongInt(n) => Some(i64::from(*n)),
        AMQPValue::LongUInt(n) => Some(i64::from(*n)),
        AMQPValue::LongLongInt(n) => Some(*n),
        _ => None,
    }
}

/// An error text on one line, at most [`MAX_ERROR_CHARS`] characters.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_ERROR_CHARS)
        .collect()
}

async fn timed<T, E>(
    limit: Duration,
    what: &str,
    op: impl Future<Output = Result<T, E>>,
) -> anyhow::Result<T>
where
    E: Into<anyhow::Error>,
{
    match tokio::time::timeout(limit, op).await {
        // The innermost cause alone: lapin's errors repeat their causes.
        Ok(r) => r.map_err(|e| anyhow!("{what} failed: {}", e.into().root_cause())),
        Err(_) => Err(anyhow!("{what} took longer than {limit:?}")),
    }
}

#[cfg(test)]
mod tests {
    use lapin::types::{FieldArray, ShortString};

    use super::*;

    fn envelope(job: Job) -> Vec<u8> {
        serde_json::to_vec(&Envelope {
            version: ENVELOPE_VERSION,
            job_id: Uuid::nil(),
            job,
        })
        .unwrap()
    }

    #[test]
    fn a_job_the_worker_dead_lettered_reads_back_from_its_headers() {
        let at = DateTime::parse_from_rfc3339("2026-11-23T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let long = format!("line one\nline two {}", "x".repeat(600));
        let dead = DeadLetter {
            job_id: Some(Uuid::nil()),
            kind: JobKind::SendLoginEmail,
            attempt: 4,
            error: &long,
            reason: DeadReason::Exhausted,
        };
        let (job, env) = describe(
            &envelope(Job::SendLoginEmail { user_id: 42 }),
            Some(&Uuid::nil().to_string()),
            Some(&dead.headers(at)),
            "send_login_email",
        );
        assert!(env.is_some());
        assert_eq!(job.id, Uuid::nil().to_string());
        assert_eq!(job.kind.as_deref(), Some("send_login_email"));
        assert_eq!(job.subject.as_deref(), Some("user 42"));
        assert_eq!(job.attempts, Some(4));
        assert_eq!(job.reason, "exhausted");
        assert_eq!(job.dead_at, Some(at));
        let error = job.error.unwrap();
        assert_eq!(error.chars().count(), MAX_ERROR_CHARS);
        assert!(error.starts_with("line one line two"), "{error}");
        assert_eq!(job.malformed, None);
    }

    #[test]
    fn a_job_rabbitmq_dead_lettered_reads_back_from_x_death() {
        let mut death = FieldTable::default();
        death.insert(
            "reason".into(),
            AMQPValue::LongString("delivery_limit".into()),
        );
        death.insert("time".into(), AMQPValue::Timestamp(1_795_000_000));
        death.insert(
            "routing-keys".into(),
            AMQPValue::FieldArray(FieldArray::from(vec![AMQPValue::LongString(
                "create_i9".into(),
            )])),
        );
        let mut headers = FieldTable::default();
        headers.insert(
            ShortString::from("x-death"),
            AMQPValue::FieldArray(FieldArray::from(vec![AMQPValue::FieldTable(death)])),
        );
        let (job, env) = describe(
            &envelope(Job::CreateI9 {
                request_id: Uuid::nil(),
            }),
            None,
            Some(&headers),
            "create_i9",
        );
        assert!(env.is_some());
        assert_eq!(job.kind.as_deref(), Some("create_i9"));
        assert_eq!(job.reason, "delivery_limit");
        assert_eq!(job.attempts, None);
        assert_eq!(job.dead_at.map(|t| t.timestamp()), Some(1_795_000_000));
        assert_eq!(job.error, None);

        // A body that is no envelope: its kind from x-death, its id from a digest.
        let (bad, env) = describe(b"{\"ssn\": \"123-45-6789\"}", None, Some(&headers), "");
        assert!(env.is_none());
        assert_eq!(bad.kind.as_deref(), Some("create_i9"));
        assert_eq!(bad.malformed.as_deref(), Some("JSON, but not a job"));
        assert!(
            bad.id.starts_with("body-") && bad.id.len() == 17,
            "{}",
            bad.id
        );
        assert!(
            !format!("{bad:?}").contains("123-45"),
            "nothing of the body"
        );
        let (bad, _) = describe(b"\xff not json", Some("M-1"), None, "send_login_email");
        assert_eq!(
            (
                bad.id.as_str(),
                bad.kind.as_deref(),
                bad.malformed.as_deref()
            ),
            ("M-1", Some("send_login_email"), Some("not JSON"))
        );
        assert_eq!(bad.reason, "unknown");
    }

    #[test]
    fn job_ids_are_compared_in_canonical_form() {
        let id = Uuid::new_v4();
        assert_eq!(
            normalize_id(&id.simple().to_string().to_uppercase()),
            id.to_string()
        );
        assert_eq!(normalize_id(" body-0a1b "), "body-0a1b");
    }
}
