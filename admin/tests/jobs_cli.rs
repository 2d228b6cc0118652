//! `i9-admin jobs failed|replay|purge`, run as the operator runs them, against
//! a dead-letter queue of the test's own on the real RabbitMQ.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::{process::Command, time::Duration};

use i9_common::{
    amqp::Topology,
    dead_letters::{self, DeadLetter, DeadReason},
    jobs::{Envelope, Job, JobKind, ENVELOPE_VERSION},
};
use i9_tests::{amqp_url, eventually};
use secrecy::ExposeSecret;
use uuid::Uuid;

const T: Duration = Duration::from_secs(10);

/// Deletes the test's queues and exchanges on drop.
struct Cleanup(Topology);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let topology = self.0.clone();
        let _ = std::thread::spawn(move || {
            if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                rt.block_on(async {
                    if let Ok(conn) = i9_common::amqp::connect(&amqp_url()).await {
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

fn admin(prefix: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_i9-admin"))
        .args(args)
        .env("AMQP_URL", amqp_url().expose_secret())
        .env("AMQP_PREFIX", prefix)
        // Replaying no callback, the database is never used: one that does not exist.
        .env("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none")
        .env("APP_ENV", "development")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    i9_tests::logs::keep_stderr("i9-admin", &out.stderr);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The listing's line of a job.
fn line_of<'a>(out: &'a str, id: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(id))
        .unwrap_or_else(|| panic!("no line for {id} in:\n{out}"))
}

/// A one-line error.
fn refused(result: (bool, String, String), reason: &str) {
    let (ok, _, err) = result;
    assert!(!ok, "refused");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: ") && err.contains(reason), "{err}");
}

#[tokio::test]
async fn an_operator_lists_replays_and_purges_failed_jobs_by_count() {
    let prefix = format!("t{}", Uuid::new_v4().simple());
    let topology = Topology::new(prefix.clone());
    let _cleanup = Cleanup(topology.clone());
    let conn = i9_common::amqp::connect(&amqp_url()).await.unwrap();
    let ch = conn.create_channel().await.unwrap();
    ch.confirm_select(Default::default()).await.unwrap();
    topology.declare(&ch).await.unwrap();
    let depth = |queue: String| {
        let ch = ch.clone();
        async move { dead_letters::depth(&ch, &queue, T).await.unwrap() }
    };
    let dead_holds = |n: u32| {
        let queue = topology.dead_letter_queue();
        let depth = &depth;
        async move {
            eventually(&format!("the dead-letter queue holds {n}"), || {
                let queue = queue.clone();
                async move { depth(queue).await == n }
            })
            .await;
        }
    };

    let jobs = [
        (
            Job::SendLoginEmail { user_id: 5 },
            DeadReason::Fatal,
            1,
            "user 5 is gone, retired or has no email address",
        ),
        (
            Job::CreateI9 {
                request_id: Uuid::new_v4(),
            },
            DeadReason::Exhausted,
            3,
            "pool timed out",
        ),
        (
            Job::CreateI9 {
                request_id: Uuid::new_v4(),
            },
            DeadReason::Fatal,
            1,
            "no such request",
        ),
        (
            Job::SendRemoteHireEmail {
                request_id: Uuid::new_v4(),
            },
            DeadReason::Fatal,
            2,
            "bad address",
        ),
    ];
    let mut ids = Vec::new();
    for (job, reason, attempt, error) in jobs {
        let id = Uuid::new_v4();
        let kind = job.kind();
        let body = serde_json::to_vec(&Envelope {
            version: ENVELOPE_VERSION,
            job_id: id,
            job,
        })
        .unwrap();
        let dead = DeadLetter {
            job_id: Some(id),
            kind,
            attempt,
            error,
            reason,
        };
        dead_letters::publish(&ch, &topology, &body, &dead, T)
            .await
            .unwrap();
        ids.push(id.to_string());
    }
    // A body that is no job, dead-lettered from the create_i9 queue.
    let malformed = DeadLetter {
        job_id: None,
        kind: JobKind::CreateI9,
        attempt: 1,
        error: "malformed job message",
        reason: DeadReason::Fatal,
    };
    dead_letters::publish(&ch, &topology, b"oops", &malformed, T)
        .await
        .unwrap();
    dead_holds(5).await;

    let (ok, out, err) = admin(&prefix, &["jobs", "failed"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with(&format!("{prefix}.dead: 5 message(s) waiting, 5 read")),
        "{out}"
    );
    let a = line_of(&out, &ids[0]);
    for part in [
        "send_login_email",
        " 1 ",
        "fatal",
        "user 5",
        "no email address",
    ] {
        assert!(a.contains(part), "{part} in {a}");
    }
    assert!(line_of(&out, &ids[1]).contains("exhausted"), "{out}");
    let bad = out
        .lines()
        .find(|l| l.contains("malformed: not JSON"))
        .unwrap();
    let bad_id = bad.split_whitespace().next().unwrap().to_owned();
    assert!(
        bad_id.starts_with("body-") && bad.contains("create_i9"),
        "{bad}"
    );
    assert!(
        out.contains("5 failed job(s) in 5 message(s)") && !out.contains("oops"),
        "{out}"
    );

    let (ok, out, _) = admin(&prefix, &["jobs", "failed", "--kind", "create_i9"]);
    assert!(ok);
    assert!(
        out.contains("3 failed job(s)") && !out.contains(&ids[0]),
        "{out}"
    );
    let (ok, out, _) = admin(&prefix, &["jobs", "failed", "--limit", "2"]);
    assert!(ok && out.contains("3 more not shown"), "{out}");

    // Refusals change nothing.
    refused(admin(&prefix, &["jobs", "replay"]), "--all");
    refused(
        admin(&prefix, &["jobs", "replay", &Uuid::new_v4().to_string()]),
        "no dead job",
    );
    refused(
        admin(&prefix, &["jobs", "replay", &bad_id]),
        "purged, not replayed",
    );
    refused(
        admin(&prefix, &["jobs", "purge", "--all", "--kind", "create_i9"]),
        "--yes",
    );
    dead_holds(5).await;
    assert_eq!(depth(topology.queue(JobKind::SendLoginEmail)).await, 0);

    let (ok, out, err) = admin(&prefix, &["jobs", "replay", &ids[0]]);
    assert!(ok, "{err}");
    assert!(out.contains("1 job(s) replayed (1 message(s))"), "{out}");
    dead_holds(4).await;
    eventually("the job is back in its queue", || async {
        depth(topology.queue(JobKind::SendLoginEmail)).await == 1
    })
    .await;

    let (ok, out, err) = admin(
        &prefix,
        &["jobs", "purge", "--all", "--kind", "create_i9", "--yes"],
    );
    assert!(ok, "{err}");
    assert!(out.contains("3 job(s) purged (3 message(s))"), "{out}");
    dead_holds(1).await;
    let (ok, out, _) = admin(&prefix, &["jobs", "failed"]);
    assert!(ok);
    line_of(&out, &ids[3]);
    assert!(out.contains("1 failed job(s) in 1 message(s)"), "{out}");
    for kind in [JobKind::CreateI9, JobKind::SendRemoteHireEmail] {
        assert_eq!(depth(topology.queue(kind)).await, 0, "{kind:?}");
    }

    let (ok, out, err) = admin(&prefix, &["jobs", "purge", &ids[3]]);
    assert!(ok && out.contains("1 job(s) purged"), "{err}");
    dead_holds(0).await;
    let (ok, out, _) = admin(&prefix, &["jobs", "failed"]);
    assert!(ok && out.contains("no failed jobs"), "{out}");
    conn.close(200, "done".into()).await.ok();
}

/// `jobs` and `callbacks` neither encrypt nor decrypt: outside development
/// they run without the keys (docs/operations.md, "The commands"), where
/// every other command refuses to start without them.
#[tokio::test]
async fn the_jobs_and_callbacks_commands_run_without_the_keys() {
    let prefix = format!("t{}", Uuid::new_v4().simple());
    let topology = Topology::new(prefix.clone());
    let _cleanup = Cleanup(topology.clone());
    let conn = i9_common::amqp::connect(&amqp_url()).await.unwrap();
    let ch = conn.create_channel().await.unwrap();
    topology.declare(&ch).await.unwrap();
    let db = i9_tests::TestDb::new().await;
    let run = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_i9-admin"));
        cmd.args(args)
            .env("AMQP_URL", amqp_url().expose_secret())
            .env("AMQP_PREFIX", &prefix)
            .env("DATABASE_URL", &db.url)
            .env_remove("APP_ENV")
            .env_remove("RUST_LOG");
        for ring in ["DATA_ENCRYPTION_KEY", "SSN_HASH_KEY"] {
            for name in [ring.to_owned(), format!("{ring}S")] {
                cmd.env_remove(&name).env_remove(format!("{name}_FILE"));
            }
        }
        let out = cmd.output().unwrap();
        i9_tests::logs::keep_stderr("i9-admin", &out.stderr);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (args, says) in [
        (&["jobs", "failed"][..], "no failed jobs"),
        (&["jobs", "replay", "--all"][..], "replayed"),
        (&["jobs", "purge", "--all", "--yes"][..], "purged"),
        (&["callbacks", "failed"][..], "no failed callbacks"),
        (
            &["callbacks", "redeliver", "--all"][..],
            "0 callback(s) queued again",
        ),
    ] {
        let (ok, out, err) = run(args);
        assert!(ok, "{args:?}: {err}");
        assert!(out.contains(says), "{args:?}: {out}");
    }
    // The others read and check the keys.
    refused(
        run(&["keys", "status"]),
        "no keys: set DATA_ENCRYPTION_KEYS",
    );
    conn.close(200, "test done".into()).await.unwrap();
}
