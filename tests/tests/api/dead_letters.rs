//! The dead-letter queue (`common/src/dead_letters.rs`) against the real
//! RabbitMQ, each test on queues of its own: dead jobs of every style listed,
//! replayed and purged, counted message by message; and one job the worker
//! really gives up on, fixed and replayed.

use std::time::Duration;

use i9_common::{
    amqp::{Topology, DEAD_ATTEMPT_HEADER, DEAD_ERROR_HEADER, DELIVERY_LIMIT},
    dead_letters::{self, DeadLetter, DeadLetters, DeadReason, Error, Limits, Selection},
    jobs::{Envelope, Job, JobKind, ENVELOPE_VERSION},
};
use i9_tests::{eventually, spawn_app, spawn_stack};
use lapin::{
    options::{
        BasicAckOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions,
        BasicRejectOptions, ConfirmSelectOptions, QueueBindOptions,
    },
    types::{AMQPValue, FieldTable},
    BasicProperties, Channel, Connection,
};
use uuid::Uuid;

const T: Duration = Duration::from_secs(10);

/// A topology of the test's own, declared; deleted on drop.
struct Broker {
    topology: Topology,
    // Kept open for the channel.
    _conn: Connection,
    ch: Channel,
}

impl Broker {
    async fn new() -> Self {
        Self::on(Topology::new(format!("t{}", Uuid::new_v4().simple()))).await
    }

    async fn on(topology: Topology) -> Self {
        let conn = i9_common::amqp::connect(&i9_tests::amqp_url())
            .await
            .unwrap();
        let ch = conn.create_channel().await.unwrap();
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .unwrap();
        topology.declare(&ch).await.unwrap();
        Self {
            topology,
            _conn: conn,
            ch,
        }
    }

    async fn dlq(&self, max_messages: usize) -> DeadLetters {
        DeadLetters::connect(
            &i9_tests::amqp_url(),
            self.topology.clone(),
            Limits {
                max_messages,
                ..Limits::default()
            },
        )
        .await
        .unwrap()
    }

    async fn depth(&self, queue: &str) -> u32 {
        dead_letters::depth(&self.ch, queue, T).await.unwrap()
    }

    /// Wait until `queue` holds exactly `n` ready messages.
    async fn holds(&self, queue: &str, n: u32) {
        eventually(&format!("{queue} holds {n}"), || async {
            self.depth(queue).await == n
        })
        .await;
    }

    async fn dead_holds(&self, n: u32) {
        self.holds(&self.topology.dead_letter_queue(), n).await;
    }

    async fn kind_holds(&self, kind: JobKind, n: u32) {
        self.holds(&self.topology.queue(kind), n).await;
    }

    /// Dead-letter a job as the worker does (the `i9-` headers).
    async fn worker_gives_up(
        &self,
        job: Job,
        id: Uuid,
        reason: DeadReason,
        attempt: u32,
        error: &str,
    ) -> Vec<u8> {
        let body = body(id, job.clone());
        let dead = DeadLetter {
            job_id: Some(id),
            kind: job.kind(),
            attempt,
            error,
            reason,
        };
        dead_letters::publish(&self.ch, &self.topology, &body, &dead, T)
            .await
            .unwrap();
        body
    }

    async fn publish(&self, exchange: &str, key: &str, body: &[u8], id: Option<Uuid>) {
        let props = BasicProperties::default().with_delivery_mode(2);
        let props = match id {
            Some(id) => props.with_message_id(id.to_string().into()),
            None => props,
        };
        let confirm = self
            .ch
            .basic_publish(
                exchange.into(),
                key.into(),
                BasicPublishOptions::default(),
                body,
                props,
            )
            .await
            .unwrap()
            .await
            .unwrap();
        assert!(confirm.is_ack());
    }

    /// Take the next message of a kind's queue (waiting for it).
    async fn take(&self, kind: JobKind) -> lapin::message::Delivery {
        let queue = self.topology.queue(kind);
        for _ in 0..600 {
            if let Some(m) = self
                .ch
                .basic_get(queue.as_str().into(), BasicGetOptions::default())
                .await
                .unwrap()
            {
                return m.delivery;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("nothing arrived in {queue}");
    }

    /// A job rejected by its consumer: RabbitMQ dead-letters it (`x-death`, `rejected`).
    async fn consumer_rejects(&self, job: Job, id: Uuid) {
        let kind = job.kind();
        self.publish(
            &self.topology.jobs_exchange(),
            kind.name(),
            &body(id, job),
            Some(id),
        )
        .await;
        self.take(kind)
            .await
            .acker
            .reject(BasicRejectOptions { requeue: false })
            .await
            .unwrap();
    }

    /// A job that crashes every consumer: RabbitMQ dead-letters it at the
    /// queue's delivery limit (`x-death`, `delivery_limit`).
    async fn crashes_every_consumer(&self, job: Job, id: Uuid) {
        let kind = job.kind();
        self.publish(
            &self.topology.jobs_exchange(),
            kind.name(),
            &body(id, job),
            Some(id),
        )
        .await;
        for _ in 0..=DELIVERY_LIMIT {
            self.take(kind)
                .await
                .acker
                .nack(BasicNackOptions {
                    requeue: true,
                    ..Default::default()
                })
                .await
                .unwrap();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let topology = self.topology.clone();
        let _ = std::thread::spawn(move || {
            if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                rt.block_on(async {
                    if let Ok(conn) = i9_common::amqp::connect(&i9_tests::amqp_url()).await {
                        if let Ok(ch) = conn.create_channel().await {
                            let _ = topology.delete(&ch, &[]).await;
                        }
                        let _ = conn.close(200, "test done".into()).await;
                    }
                });
            }
        })
        .join();
    }
}

fn body(id: Uuid, job: Job) -> Vec<u8> {
    serde_json::to_vec(&Envelope {
        version: ENVELOPE_VERSION,
        job_id: id,
        job,
    })
    .unwrap()
}

fn ids(jobs: &[dead_letters::DeadJob]) -> Vec<String> {
    jobs.iter().map(|j| j.id.clone()).collect()
}

fn header<'a>(d: &'a lapin::message::Delivery, name: &str) -> Option<&'a AMQPValue> {
    d.properties
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(name))
}

#[tokio::test]
async fn dead_jobs_of_every_style_are_listed_replayed_and_purged_message_by_message() {
    let b = Broker::new().await;
    let (a, bb, c, d) = (
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
    );
    let a_body = b
        .worker_gives_up(
            Job::SendLoginEmail { user_id: 7 },
            a,
            DeadReason::Fatal,
            1,
            "user 7 is gone, retired or has no email address",
        )
        .await;
    b.dead_holds(1).await;
    b.worker_gives_up(
        Job::CreateI9 {
            request_id: Uuid::new_v4(),
        },
        bb,
        DeadReason::Exhausted,
        4,
        "connection refused",
    )
    .await;
    b.dead_holds(2).await;
    let event = Uuid::new_v4();
    b.consumer_rejects(Job::PostStatusCallback { event_id: event }, c)
        .await;
    b.dead_holds(3).await;
    b.crashes_every_consumer(
        Job::SendRemoteHireEmail {
            request_id: Uuid::new_v4(),
        },
        d,
    )
    .await;
    b.dead_holds(4).await;
    // A bad publish: no envelope, no message id, no headers.
    b.publish(
        &b.topology.dead_letter_exchange(),
        "create_i9",
        b"not a job",
        None,
    )
    .await;
    b.dead_holds(5).await;

    let dlq = b.dlq(Limits::default().max_messages).await;
    let listed = dlq.list(None).await.unwrap();
    assert_eq!(
        (
            listed.scanned.ready,
            listed.scanned.read,
            listed.scanned.complete
        ),
        (5, 5, true)
    );
    let jobs = &listed.jobs;
    assert_eq!(jobs.len(), 5);
    let row = |j: &dead_letters::DeadJob| {
        (
            j.kind.clone().unwrap_or_default(),
            j.reason.clone(),
            j.attempts,
            j.copies,
        )
    };
    assert_eq!(jobs[0].id, a.to_string());
    assert_eq!(
        row(&jobs[0]),
        ("send_login_email".into(), "fatal".into(), Some(1), 1)
    );
    assert_eq!(jobs[0].subject.as_deref(), Some("user 7"));
    assert_eq!(
        jobs[0].error.as_deref(),
        Some("user 7 is gone, retired or has no email address")
    );
    assert_eq!(jobs[1].id, bb.to_string());
    assert_eq!(
        row(&jobs[1]),
        ("create_i9".into(), "exhausted".into(), Some(4), 1)
    );
    assert_eq!(jobs[2].id, c.to_string());
    assert_eq!(
        row(&jobs[2]),
        ("post_status_callback".into(), "rejected".into(), Some(1), 1)
    );
    assert_eq!(jobs[2].subject, Some(format!("event {event}")));
    assert_eq!(jobs[2].error, None);
    assert_eq!(jobs[3].id, d.to_string());
    assert_eq!(
        row(&jobs[3]),
        (
            "send_remote_hire_email".into(),
            "delivery_limit".into(),
            None,
            1
        )
    );
    assert!(jobs[..4]
        .iter()
        .all(|j| j.malformed.is_none() && j.dead_at.is_some()));
    let bad = jobs[4].clone();
    assert!(bad.id.starts_with("body-"), "{}", bad.id);
    assert_eq!(bad.kind.as_deref(), Some("create_i9"));
    assert_eq!(bad.malformed.as_deref(), Some("not JSON"));

    // Listing loses nothing and keeps the order.
    b.dead_holds(5).await;
    let again = dlq.list(None).await.unwrap();
    assert_eq!(ids(&again.jobs), ids(jobs));
    let create = dlq.list(Some(JobKind::CreateI9)).await.unwrap();
    assert_eq!(ids(&create.jobs), vec![bb.to_string(), bad.id.clone()]);
    b.dead_holds(5).await;

    // Replay one: exactly one message in its queue, fresh, and one fewer dead.
    let out = dlq
        .replay(&Selection::Ids(vec![a.to_string()]), None)
        .await
        .unwrap();
    assert_eq!(ids(&out.done), vec![a.to_string()]);
    b.kind_holds(JobKind::SendLoginEmail, 1).await;
    b.dead_holds(4).await;
    let replayed = b.take(JobKind::SendLoginEmail).await;
    assert_eq!(replayed.data, a_body);
    assert_eq!(
        replayed
            .properties
            .message_id()
            .as_ref()
            .map(|m| m.as_str()),
        Some(a.to_string().as_str())
    );
    assert_eq!(
        header(&replayed, DEAD_ATTEMPT_HEADER),
        Some(&AMQPValue::LongLongInt(1))
    );
    assert_eq!(header(&replayed, DEAD_ERROR_HEADER), None);
    assert_eq!(header(&replayed, "x-death"), None);
    replayed
        .acker
        .ack(BasicAckOptions::default())
        .await
        .unwrap();
    b.kind_holds(JobKind::SendLoginEmail, 0).await;

    // Refused, and nothing changes: the malformed one, an unknown id, or a
    // known id asked for together with an unknown one.
    let e = dlq
        .replay(&Selection::Ids(vec![bad.id.clone()]), None)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
    assert!(e.to_string().contains("can be purged, not replayed"), "{e}");
    let unknown = Uuid::new_v4().to_string();
    let e = dlq
        .replay(&Selection::Ids(vec![unknown.clone()]), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::NotFound { ids, .. } if ids == &vec![unknown.clone()]),
        "{e}"
    );
    let e = dlq
        .replay(&Selection::Ids(vec![bb.to_string(), unknown.clone()]), None)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    b.dead_holds(4).await;
    b.kind_holds(JobKind::CreateI9, 0).await;
    assert!(ids(&dlq.list(None).await.unwrap().jobs).contains(&bad.id));

    // Purge one; then every callback, which touches no other kind.
    let out = dlq
        .purge(&Selection::Ids(vec![bb.to_string()]))
        .await
        .unwrap();
    assert_eq!(ids(&out.done), vec![bb.to_string()]);
    b.dead_holds(3).await;
    let out = dlq
        .purge(&Selection::All {
            kind: Some(JobKind::PostStatusCallback),
        })
        .await
        .unwrap();
    assert_eq!(ids(&out.done), vec![c.to_string()]);
    b.dead_holds(2).await;
    assert_eq!(
        ids(&dlq.list(None).await.unwrap().jobs),
        vec![d.to_string(), bad.id.clone()]
    );

    // Replay everything: the malformed one stays.
    let out = dlq
        .replay(&Selection::All { kind: None }, None)
        .await
        .unwrap();
    assert_eq!(ids(&out.done), vec![d.to_string()]);
    assert_eq!(ids(&out.left_malformed), vec![bad.id.clone()]);
    b.kind_holds(JobKind::SendRemoteHireEmail, 1).await;
    b.dead_holds(1).await;
    for kind in [
        JobKind::CreateI9,
        JobKind::SendLoginEmail,
        JobKind::PostStatusCallback,
    ] {
        assert_eq!(b.depth(&b.topology.queue(kind)).await, 0, "{kind:?}");
    }
    let out = dlq
        .purge(&Selection::Ids(vec![bad.id.clone()]))
        .await
        .unwrap();
    assert_eq!(out.done.len(), 1);
    b.dead_holds(0).await;
    dlq.close().await;
}

#[tokio::test]
async fn copies_of_one_job_are_one_row_and_replay_as_one_message() {
    let b = Broker::new().await;
    let job = Uuid::new_v4();
    let other = Uuid::new_v4();
    let request = Uuid::new_v4();
    for attempt in [2, 4, 3] {
        b.worker_gives_up(
            Job::CreateI9 {
                request_id: request,
            },
            job,
            DeadReason::Exhausted,
            attempt,
            "database unavailable",
        )
        .await;
    }
    b.worker_gives_up(
        Job::SendLoginEmail { user_id: 1 },
        other,
        DeadReason::Fatal,
        1,
        "no email address",
    )
    .await;
    b.dead_holds(4).await;
    let dlq = b.dlq(1000).await;
    let listed = dlq.list(None).await.unwrap();
    assert_eq!(listed.scanned.read, 4);
    assert_eq!(ids(&listed.jobs), vec![job.to_string(), other.to_string()]);
    assert_eq!(listed.jobs[0].copies, 3);
    assert_eq!(
        listed.jobs[0].attempts,
        Some(4),
        "the most attempts of any copy"
    );
    // Ids are matched in any spelling of the UUID.
    let out = dlq
        .replay(
            &Selection::Ids(vec![job.simple().to_string().to_uppercase()]),
            None,
        )
        .await
        .unwrap();
    assert_eq!(out.done.len(), 1);
    b.kind_holds(JobKind::CreateI9, 1).await;
    b.dead_holds(1).await;
    dlq.close().await;
}

#[tokio::test]
async fn a_run_reads_at_most_its_limit_and_hands_everything_back() {
    let b = Broker::new().await;
    let mut all = Vec::new();
    for user_id in 0..5 {
        let id = Uuid::new_v4();
        b.worker_gives_up(
            Job::SendLoginEmail { user_id },
            id,
            DeadReason::Fatal,
            1,
            "gone",
        )
        .await;
        all.push(id.to_string());
    }
    b.dead_holds(5).await;
    let small = b.dlq(2).await;
    let listed = small.list(None).await.unwrap();
    assert_eq!((listed.scanned.read, listed.scanned.complete), (2, false));
    assert_eq!(ids(&listed.jobs), all[..2].to_vec());
    b.dead_holds(5).await;
    let e = small
        .purge(&Selection::Ids(vec![all[4].clone()]))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("raise the limit"), "{e}");
    b.dead_holds(5).await;

    let whole = b.dlq(1000).await;
    let mut seen = ids(&whole.list(None).await.unwrap().jobs);
    seen.sort();
    let mut expected = all.clone();
    expected.sort();
    assert_eq!(seen, expected, "nothing lost");

    let out = small.purge(&Selection::All { kind: None }).await.unwrap();
    assert_eq!((out.done.len(), out.scanned.complete), (2, false));
    b.dead_holds(3).await;
    small.close().await;
    whole.close().await;
}

#[tokio::test]
async fn replaying_a_callback_clears_its_dead_mark_only_once_the_broker_took_it() {
    let app = spawn_app().await;
    let employee = app.employee_id("EMP-1001").await;
    let event = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO partner_events (id, employee_id, sequence, event_type, payload, dead_at)
         VALUES ($1, $2, 1, 'i9.created', '{}', now())",
    )
    .bind(event)
    .bind(employee)
    .execute(app.pool())
    .await
    .unwrap();
    assert_eq!(
        i9_common::events::failed(app.pool()).await.unwrap().len(),
        1
    );
    let b = Broker::new().await;
    let job = Uuid::new_v4();
    b.worker_gives_up(
        Job::PostStatusCallback { event_id: event },
        job,
        DeadReason::Exhausted,
        30,
        "HTTP 503",
    )
    .await;
    b.dead_holds(1).await;
    let dlq = b.dlq(1000).await;
    let which = Selection::Ids(vec![job.to_string()]);

    // The callback queue is off the exchange: the broker returns the replay.
    let queue = b.topology.queue(JobKind::PostStatusCallback);
    b.ch.queue_unbind(
        queue.as_str().into(),
        b.topology.jobs_exchange().into(),
        "post_status_callback".into(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    let e = dlq.replay(&which, Some(app.pool())).await.unwrap_err();
    assert!(
        matches!(&e, Error::Interrupted { done, .. } if done.is_empty()),
        "{e}"
    );
    assert!(
        e.to_string().contains("no queue for post_status_callback"),
        "{e}"
    );
    b.dead_holds(1).await;
    assert_eq!(
        i9_common::events::failed(app.pool()).await.unwrap().len(),
        1,
        "the dead mark is back"
    );

    b.ch.queue_bind(
        queue.as_str().into(),
        b.topology.jobs_exchange().into(),
        "post_status_callback".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    let out = dlq.replay(&which, Some(app.pool())).await.unwrap();
    assert_eq!(out.done.len(), 1);
    b.kind_holds(JobKind::PostStatusCallback, 1).await;
    b.dead_holds(0).await;
    assert!(i9_common::events::failed(app.pool())
        .await
        .unwrap()
        .is_empty());
    // Without the database a callback is not replayed at all.
    b.worker_gives_up(
        Job::PostStatusCallback { event_id: event },
        job,
        DeadReason::Exhausted,
        30,
        "HTTP 503",
    )
    .await;
    b.dead_holds(1).await;
    let e = dlq.replay(&which, None).await.unwrap_err();
    assert!(e.to_string().contains("needs the database"), "{e}");
    b.dead_holds(1).await;
    b.kind_holds(JobKind::PostStatusCallback, 1).await;
    dlq.close().await;
}

#[tokio::test]
async fn a_job_the_worker_gives_up_on_is_listed_and_once_fixed_replayed_to_take_effect_once() {
    let app = spawn_stack().await;
    // The worker declares the topology as it starts; declare it now too (idempotent).
    let b = Broker::on(app.topology.clone()).await;
    let user: i64 = sqlx::query_scalar(
        "UPDATE users SET email_address = NULL WHERE login = 'west.hr' RETURNING id",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    let job = Uuid::new_v4();
    b.publish(
        &b.topology.jobs_exchange(),
        "send_login_email",
        &body(job, Job::SendLoginEmail { user_id: user }),
        Some(job),
    )
    .await;
    // Fatal: no email address. Dead-lettered at once, by the worker (`fatal`)
    // or, by a worker before the i9- headers, through a reject (`rejected`).
    b.dead_holds(1).await;
    let dlq = b.dlq(1000).await;
    let listed = dlq.list(None).await.unwrap();
    assert_eq!(ids(&listed.jobs), vec![job.to_string()]);
    let dead = &listed.jobs[0];
    assert_eq!(dead.kind.as_deref(), Some("send_login_email"));
    assert_eq!(dead.subject, Some(format!("user {user}")));
    assert_eq!(dead.attempts, Some(1));
    assert!(
        dead.reason == "fatal" || dead.reason == "rejected",
        "{}",
        dead.reason
    );
    assert!(app.smtp().messages().is_empty());

    sqlx::query("UPDATE users SET email_address = 'wes.turner@acme.example' WHERE id = $1")
        .bind(user)
        .execute(app.pool())
        .await
        .unwrap();
    let out = dlq
        .replay(&Selection::Ids(vec![job.to_string()]), Some(app.pool()))
        .await
        .unwrap();
    assert_eq!(out.done.len(), 1);
    eventually("the email is sent", || async {
        !app.smtp().to("wes.turner@acme.example").is_empty()
    })
    .await;
    let done: i64 = sqlx::query_scalar("SELECT count(*) FROM processed_jobs WHERE job_id = $1")
        .bind(job)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(done, 1);
    b.dead_holds(0).await;
    b.kind_holds(JobKind::SendLoginEmail, 0).await;
    assert_eq!(app.smtp().messages().len(), 1);
    let e = dlq
        .replay(&Selection::Ids(vec![job.to_string()]), Some(app.pool()))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    dlq.close().await;
}

#[tokio::test]
async fn listing_a_queue_of_hundreds_loses_nothing_and_keeps_its_order() {
    let b = Broker::new().await;
    let mut published = Vec::new();
    for user_id in 0..600 {
        let id = Uuid::new_v4();
        b.worker_gives_up(
            Job::SendLoginEmail { user_id },
            id,
            DeadReason::Fatal,
            1,
            "gone",
        )
        .await;
        published.push(id.to_string());
    }
    b.dead_holds(600).await;
    let dlq = b.dlq(1000).await;
    for _ in 0..3 {
        let listed = dlq.list(None).await.unwrap();
        assert_eq!(listed.scanned.read, 600);
        assert!(ids(&listed.jobs) == published, "the order of publication");
    }
    b.dead_holds(600).await;
    dlq.close().await;
}

/// A job dead-lettered with the trace context and request id its message
/// carried (docs/operations.md, "Logs") keeps them, and so does its replay:
/// exactly one message comes back, with the same three headers.
#[tokio::test]
async fn a_dead_job_and_its_replay_keep_the_trace_of_its_request() {
    let b = Broker::new().await;
    let id = Uuid::new_v4();
    let job = Job::SendLoginEmail { user_id: 7 };
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut carried = FieldTable::default();
    for (name, value) in [
        ("traceparent", traceparent),
        ("tracestate", "caller=opaque"),
        ("x-request-id", "req-dead-1"),
        // RabbitMQ's own, not carried on.
        ("x-death", "gone"),
    ] {
        carried.insert(name.into(), AMQPValue::LongString(value.into()));
    }
    let dead = DeadLetter {
        job_id: Some(id),
        kind: job.kind(),
        attempt: 12,
        error: "the partner answered 500",
        reason: DeadReason::Exhausted,
    };
    dead_letters::publish_traced(&b.ch, &b.topology, &body(id, job), &dead, Some(&carried), T)
        .await
        .unwrap();
    b.dead_holds(1).await;
    let outcome = b
        .dlq(100)
        .await
        .replay(&Selection::Ids(vec![id.to_string()]), None)
        .await
        .unwrap();
    assert_eq!(outcome.done.len(), 1, "{outcome:?}");
    b.dead_holds(0).await;
    b.kind_holds(JobKind::SendLoginEmail, 1).await;
    let replayed = b.take(JobKind::SendLoginEmail).await;
    let headers = replayed.properties.headers().clone().unwrap();
    let header = |name: &str| match headers.inner().get(name) {
        Some(AMQPValue::LongString(s)) => Some(String::from_utf8(s.as_bytes().to_vec()).unwrap()),
        _ => None,
    };
    assert_eq!(header("traceparent").as_deref(), Some(traceparent));
    assert_eq!(header("tracestate").as_deref(), Some("caller=opaque"));
    assert_eq!(header("x-request-id").as_deref(), Some("req-dead-1"));
    assert_eq!(header("x-death"), None);
    replayed
        .acker
        .ack(BasicAckOptions::default())
        .await
        .unwrap();
    b.kind_holds(JobKind::SendLoginEmail, 0).await;
}
