//! The write side end to end, with the real RabbitMQ and a real SMTP server:
//! the outbox, the relay, the worker, I-9 creation and the emails.

use futures_util::StreamExt;
use i9_common::jobs::{Envelope, Job, ENVELOPE_VERSION};
use i9_tests::{eventually, spawn, spawn_stack, Stack, TestApp, ADMIN, PORTAL};
use lapin::{
    options::{BasicConsumeOptions, BasicPublishOptions, BasicQosOptions},
    types::FieldTable,
    BasicProperties,
};
use serde_json::{json, Value};

fn hire(first: &str, last: &str, email: &str) -> Value {
    json!({"firstName": first, "lastName": last, "locationId": 3, "emailAddress": email, "startDate": "2026-11-05"})
}

async fn post(app: &TestApp, token: &str, body: Value) -> Value {
    let r = app.post_json("/v1/employees", token, &body).await;
    let status = r.status();
    let text = r.text().await.unwrap();
    assert_eq!(status, 201, "{text}");
    serde_json::from_str(&text).unwrap()
}

async fn i9_of(app: &TestApp, employee: i64) -> Option<i64> {
    sqlx::query_scalar("SELECT id FROM i9s WHERE employee_id = $1 ORDER BY id DESC LIMIT 1")
        .bind(employee)
        .fetch_optional(app.pool())
        .await
        .unwrap()
}

/// The first http(s) link in a text.
fn link_in(text: &str) -> String {
    text.split_whitespace()
        .find(|w| w.starts_with("http"))
        .expect("a link")
        .to_owned()
}

#[tokio::test]
async fn create_i9_yes_creates_the_i9() {
    let app = spawn_stack().await;
    let token = app.token(ADMIN).await;
    let mut body = hire("Ana", "Diaz", "ana@mail.example");
    body["createI9"] = json!("yes");
    body["socialSecurityNumber"] = json!("456-78-9012");
    body["middleName"] = json!("Beatriz");
    let created = post(&app, &token, body).await;
    let id = created["id"].as_i64().unwrap();
    let link = created["i9FormSection1Link"].as_str().unwrap().to_owned();
    assert!(link.starts_with(&format!("{}/i9/section1/s1_", app.address)));

    eventually("the worker creates the I-9", || async {
        i9_of(&app, id).await.is_some()
    })
    .await;
    let i9 = i9_of(&app, id).await.unwrap();
    let employee = app.get_json(&format!("/v1/employees/{id}"), &token).await;
    assert_eq!(employee["i9Status"], "Started");
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_eq!(record["i9Status"], "Section 1 Incomplete");
    assert_eq!(record["remote"], false);
    assert_eq!(record["formVersion"], "01/20/25");
    assert_eq!(record["startDate"], "2026-11-05");
    assert_eq!(
        record["dateDue"], "2026-11-10",
        "three business days after a Thursday start, across the weekend"
    );
    assert_eq!(record["middleInitial"], "B");
    assert_eq!(record["ssn"], "456-78-9012");
    assert!(record["dateCreated"].as_str().unwrap().starts_with("20"));

    // The Section 1 link opens its page; an unknown one does not.
    let page = app.http.get(&link).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Section 1"));
    let bad = app
        .http
        .get(app.url("/i9/section1/s1_nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 404);
    assert!(bad.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
}

#[tokio::test]
async fn the_login_email_carries_the_login_and_a_one_time_link() {
    let app = spawn_stack().await;
    let token = app.token(ADMIN).await;
    let mut body = hire("Lee", "Park", "lee.park@mail.example");
    body["createLogin"] = json!(true);
    body["sendLoginEmail"] = json!(true);
    post(&app, &token, body).await;
    eventually("the login email arrives", || async {
        !app.smtp().to("lee.park@mail.example").is_empty()
    })
    .await;
    let mail = app.smtp().to("lee.park@mail.example").remove(0);
    assert!(
        mail.text.contains("Login: lee.park@mail.example"),
        "{}",
        mail.text
    );
    assert!(!mail.html.is_empty(), "an HTML part too");
    let link = link_in(&mail.text);
    assert!(
        link.starts_with(&format!("{}/account/set-password/", app.address)),
        "{link}"
    );

    let form = app.http.get(&link).send().await.unwrap();
    assert_eq!(form.status(), 200);
    let short = app
        .http
        .post(&link)
        .form(&[("password", "short"), ("confirm", "short")])
        .send()
        .await
        .unwrap();
    assert_eq!(short.status(), 422);
    assert!(
        short
            .text()
            .await
            .unwrap()
            .contains("id=\"password-error\""),
        "the error sits by its field"
    );
    // Long enough but guessable: twelve spaces, a common password, the login.
    for weak in ["            ", "password1234", "lee.park@mail.example"] {
        let r = app
            .http
            .post(&link)
            .form(&[("password", weak), ("confirm", weak)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "{weak:?}");
        let html = r.text().await.unwrap();
        assert!(html.contains("too easy to guess"), "{weak:?}: {html}");
    }
    let unspent: i64 =
        sqlx::query_scalar("SELECT count(*) FROM password_set_tokens WHERE used_at IS NULL")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(unspent, 1, "the link is not spent by a refused password");
    let ok = app
        .http
        .post(&link)
        .form(&[
            ("password", "a long pass phrase"),
            ("confirm", "a long pass phrase"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(
        app.http.get(&link).send().await.unwrap().status(),
        404,
        "the link works once"
    );
    let signed_in = app
        .sign_in_with(
            PORTAL,
            ("lee.park@mail.example", "a long pass phrase"),
            None,
        )
        .await;
    assert_eq!(signed_in["token_type"], "Bearer");
    // The sign-in sees no records: its role has no permissions.
    let t = signed_in["access_token"].as_str().unwrap();
    assert_eq!(app.get("/v1/employees", t).await.status(), 403);
}

#[tokio::test]
async fn remote_hire_sends_exactly_one_email_with_the_section1_link_even_when_delivered_twice() {
    let app = spawn_stack().await;
    let token = app.token(ADMIN).await;
    let mut body = hire("Rosa", "Vega", "rosa.vega@mail.example");
    body["createRemotehireI9"] = json!("yes");
    body["languagePreference"] = json!(2);
    let created = post(&app, &token, body).await;
    let id = created["id"].as_i64().unwrap();
    let link = created["i9FormSection1Link"].as_str().unwrap().to_owned();
    eventually("the remote-hire email arrives", || async {
        !app.smtp().to("rosa.vega@mail.example").is_empty()
    })
    .await;
    let mail = app.smtp().to("rosa.vega@mail.example").remove(0);
    assert!(
        mail.subject.contains("Sección 1"),
        "Spanish for languagePreference 2: {}",
        mail.subject
    );
    assert_eq!(link_in(&mail.text), link, "the link the API returned");
    let record = app
        .get_json(
            &format!("/v1/i9s/{}", i9_of(&app, id).await.unwrap()),
            &token,
        )
        .await;
    assert_eq!(record["remote"], true);

    // RabbitMQ delivers at least once: deliver the same email job twice more.
    let payload: Value =
        sqlx::query_scalar("SELECT payload FROM job_outbox WHERE kind = 'send_remote_hire_email'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    let conn = i9_common::amqp::connect(&i9_tests::amqp_url())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    for _ in 0..2 {
        ch.basic_publish(
            app.topology.jobs_exchange().into(),
            "send_remote_hire_email".into(),
            BasicPublishOptions::default(),
            payload.to_string().as_bytes(),
            BasicProperties::default(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    }
    // Then a new remote hire: once its email is in, the duplicates before it were handled (one job at a time).
    let mut marker = hire("Mark", "Er", "marker@mail.example");
    marker["createRemotehireI9"] = json!("yes");
    post(&app, &token, marker).await;
    eventually("the marker email arrives", || async {
        !app.smtp().to("marker@mail.example").is_empty()
    })
    .await;
    assert_eq!(
        app.smtp().to("rosa.vega@mail.example").len(),
        1,
        "exactly one email"
    );
    assert_eq!(
        app.smtp().messages().len(),
        2,
        "and no login email with a remote hire"
    );
}

#[tokio::test]
async fn a_failed_email_is_retried_later() {
    let app = spawn_stack().await;
    let token = app.token(ADMIN).await;
    app.smtp().refuse_next(2);
    let mut body = hire("Tom", "Retry", "tom@mail.example");
    body["createLogin"] = json!(true);
    body["sendLoginEmail"] = json!(true);
    post(&app, &token, body).await;
    eventually("the email arrives on the third attempt", || async {
        !app.smtp().to("tom@mail.example").is_empty()
    })
    .await;
    assert_eq!(app.smtp().to("tom@mail.example").len(), 1);
}

#[tokio::test]
async fn two_concurrent_create_i9_requests_give_one_i9_and_one_409() {
    let app = spawn_stack().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let body =
        json!({"firstName": "Maria", "lastName": "Lopez", "locationId": 3, "createI9": "yes"});
    let path = format!("/v1/employees/{maria}");
    let (a, b) = tokio::join!(
        app.patch_json(&path, &token, &body),
        app.patch_json(&path, &token, &body)
    );
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort();
    assert_eq!(statuses, [200, 409]);
    eventually("the I-9 exists", || async {
        app.i9_count(maria).await == 1
    })
    .await;
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
            maria
        )
        .await,
        1
    );
    let third = app.patch_json(&path, &token, &body).await;
    assert_eq!(third.status(), 409, "the I-9 is open now");
    assert_eq!(app.i9_count(maria).await, 1);
}

#[tokio::test]
async fn writes_succeed_while_rabbitmq_is_unreachable_and_no_job_is_lost() {
    let app = spawn(
        Stack {
            jobs: true,
            proxy: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    let token = app.token(ADMIN).await;
    // Warm up: the relay and the worker are connected through the proxy.
    let mut first = hire("Warm", "Up", "warm@mail.example");
    first["createI9"] = json!("yes");
    let w = post(&app, &token, first).await["id"].as_i64().unwrap();
    eventually("the first I-9", || async { i9_of(&app, w).await.is_some() }).await;

    app.proxy.as_ref().unwrap().cut();
    let mut ids = Vec::new();
    for i in 0..12 {
        let mut body = hire(&format!("Out{i}"), "Age", &format!("out{i}@mail.example"));
        body["createI9"] = json!("yes");
        ids.push(post(&app, &token, body).await["id"].as_i64().unwrap());
    }
    let pending: i64 =
        sqlx::query_scalar("SELECT count(*) FROM job_outbox WHERE published_at IS NULL")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert!(
        pending >= 1,
        "jobs wait in the outbox while the broker is unreachable"
    );
    app.proxy.as_ref().unwrap().restore();
    for id in &ids {
        eventually("every job completes once RabbitMQ is back", || async {
            i9_of(&app, *id).await.is_some()
        })
        .await;
    }
    let unpublished: i64 =
        sqlx::query_scalar("SELECT count(*) FROM job_outbox WHERE published_at IS NULL")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(unpublished, 0);
    let i9s: i64 = sqlx::query_scalar("SELECT count(*) FROM i9s")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(i9s, 13, "one I-9 per write, none twice");
}

#[tokio::test]
async fn a_worker_that_dies_before_acknowledging_gets_the_job_again_and_it_takes_effect_once() {
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
    let mut body = hire("Dee", "Crash", "dee@mail.example");
    body["createI9"] = json!("yes");
    let id = post(&app, &token, body).await["id"].as_i64().unwrap();

    // A worker takes the job, does the work, and dies before its ack.
    {
        let conn = i9_common::amqp::connect(&i9_tests::amqp_url())
            .await
            .unwrap();
        let ch = conn.create_channel().await.unwrap();
        ch.basic_qos(1, BasicQosOptions::default()).await.unwrap();
        let mut consumer = ch
            .basic_consume(
                app.topology
                    .queue(i9_common::jobs::JobKind::CreateI9)
                    .into(),
                "doomed".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        let delivery = tokio::time::timeout(std::time::Duration::from_secs(30), consumer.next())
            .await
            .expect("the relay publishes the job")
            .unwrap()
            .unwrap();
        let env = Envelope::decode(&delivery.data).unwrap();
        assert!(matches!(env.job, Job::CreateI9 { .. }) && env.version == ENVELOPE_VERSION);
        let ctx = i9_workers::Context::new((*app.config).clone(), app.pool().clone()).unwrap();
        i9_workers::jobs::handle(&ctx, &env).await.unwrap();
        assert_eq!(app.i9_count(id).await, 1, "the work is done");
        conn.close(320, "worker died".into()).await.ok(); // no ack
    }

    // A healthy worker starts: the job comes back, and changes nothing.
    let _worker = i9_tests::start_worker(&app.config, app.pool(), &app.topology, app.stop_signal());
    let mut marker = hire("Mark", "Er", "marker@mail.example");
    marker["createI9"] = json!("yes");
    let m = post(&app, &token, marker).await["id"].as_i64().unwrap();
    eventually("the job after it is done", || async {
        i9_of(&app, m).await.is_some()
    })
    .await;
    assert_eq!(app.i9_count(id).await, 1, "taken effect once");
    let done: i64 =
        sqlx::query_scalar("SELECT count(*) FROM processed_jobs WHERE kind = 'create_i9'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(done, 2);
}

#[tokio::test]
async fn without_smtp_mail_is_written_as_eml_files() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = std::env::temp_dir().join(format!("i9-mail-{}", uuid::Uuid::new_v4().simple()));
    // A folder readable by everyone: the worker closes it.
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let d = dir.clone();
    let app = spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        move |c| {
            c.smtp_url = None;
            c.mail_dir = d;
        },
    )
    .await;
    let token = app.token(ADMIN).await;
    let mut body = hire("Eli", "File", "eli@mail.example");
    body["createLogin"] = json!(true);
    body["sendLoginEmail"] = json!(true);
    post(&app, &token, body).await;
    let files = || {
        std::fs::read_dir(&dir)
            .map(|r| {
                r.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "eml"))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    eventually("an .eml file appears", || async { !files().is_empty() }).await;
    // The file holds a live link: the service's alone, in a folder of its own.
    assert_eq!(files().len(), 1);
    assert_eq!((mode(&dir), mode(&files()[0])), (0o700, 0o600));
    let eml = std::fs::read(&files()[0]).unwrap();
    let parsed = mail_parser::MessageParser::default().parse(&eml).unwrap();
    assert_eq!(
        parsed
            .to()
            .and_then(|t| t.first())
            .and_then(|a| a.address()),
        Some("eli@mail.example")
    );
    assert!(parsed
        .body_text(0)
        .unwrap()
        .contains("/account/set-password/"));
    assert!(parsed.body_html(0).is_some());
    assert!(app.smtp().messages().is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_job_the_broker_cannot_route_stays_in_the_outbox_until_it_can() {
    let app = spawn_stack().await;
    let token = app.token(ADMIN).await;
    // Warm up so the topology exists, then take the create_i9 queue off the exchange.
    let mut warm = hire("Warm", "Up", "warm@mail.example");
    warm["createI9"] = json!("yes");
    let w = post(&app, &token, warm).await["id"].as_i64().unwrap();
    eventually("the first I-9", || async { i9_of(&app, w).await.is_some() }).await;
    let conn = i9_common::amqp::connect(&i9_tests::amqp_url())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let queue = app.topology.queue(i9_common::jobs::JobKind::CreateI9);
    ch.queue_unbind(
        queue.as_str().into(),
        app.topology.jobs_exchange().into(),
        "create_i9".into(),
        FieldTable::default(),
    )
    .await
    .unwrap();

    let mut body = hire("No", "Route", "noroute@mail.example");
    body["createI9"] = json!("yes");
    let id = post(&app, &token, body).await["id"].as_i64().unwrap();
    let last_error = || async {
        sqlx::query_scalar::<_, Option<String>>(
            "SELECT last_error FROM job_outbox WHERE kind = 'create_i9' AND published_at IS NULL",
        )
        .fetch_optional(app.pool())
        .await
        .unwrap()
        .flatten()
    };
    eventually("the returned message is recorded as a failure", || async {
        last_error().await.is_some_and(|e| e.contains("returned"))
    })
    .await;
    assert!(i9_of(&app, id).await.is_none());
    // The relay's reconnect declares the topology again, which restores the binding.
    eventually(
        "the job is published once the queue is bound again",
        || async { i9_of(&app, id).await.is_some() },
    )
    .await;
}

#[tokio::test]
async fn a_job_whose_kind_no_routing_key_can_carry_fails_its_row_and_the_relay_goes_on() {
    let app = spawn_stack().await;
    let token = app.token(ADMIN).await;
    // AMQP routing keys are at most 255 bytes.
    let bad = uuid::Uuid::new_v4();
    sqlx::query("INSERT INTO job_outbox (job_id, kind, payload) VALUES ($1, $2, '{}')")
        .bind(bad)
        .bind("k".repeat(300))
        .execute(app.pool())
        .await
        .unwrap();
    eventually("the row records why it is not published", || async {
        sqlx::query_scalar::<_, Option<String>>(
            "SELECT last_error FROM job_outbox WHERE job_id = $1",
        )
        .bind(bad)
        .fetch_one(app.pool())
        .await
        .unwrap()
        .as_deref()
            == Some("its kind is too long for a routing key")
    })
    .await;
    // The relay goes on: a job written after it takes effect.
    let mut body = hire("Long", "Kind", "longkind@mail.example");
    body["createI9"] = json!("yes");
    let id = post(&app, &token, body).await["id"].as_i64().unwrap();
    eventually("the next job takes effect", || async {
        i9_of(&app, id).await.is_some()
    })
    .await;
    let unpublished: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM job_outbox WHERE published_at IS NULL AND job_id = $1",
    )
    .bind(bad)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(unpublished, 1, "the bad row stays unpublished");
}

#[tokio::test]
async fn stopping_a_worker_finishes_the_job_in_hand() {
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
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let worker = i9_tests::start_worker(&app.config, app.pool(), &app.topology, stop_rx);
    app.smtp().slow_down(std::time::Duration::from_millis(1500));
    let mut body = hire("Sig", "Term", "sigterm@mail.example");
    body["createLogin"] = json!(true);
    body["sendLoginEmail"] = json!(true);
    post(&app, &token, body).await;
    eventually("the email is being sent", || async {
        app.smtp().started() == 1
    })
    .await;
    stop.send(true).unwrap(); // what SIGTERM does in i9-worker
    let result = tokio::time::timeout(std::time::Duration::from_secs(30), worker)
        .await
        .expect("the worker stops");
    result.unwrap().unwrap();
    assert_eq!(
        app.smtp().to("sigterm@mail.example").len(),
        1,
        "the job in hand finished"
    );
    let done: i64 =
        sqlx::query_scalar("SELECT count(*) FROM processed_jobs WHERE kind = 'send_login_email'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(done, 1);
    // And it was acknowledged: nothing is left for the next worker.
    let conn = i9_common::amqp::connect(&i9_tests::amqp_url())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let q = ch
        .queue_declare(
            app.topology
                .queue(i9_common::jobs::JobKind::SendLoginEmail)
                .into(),
            lapin::options::QueueDeclareOptions {
                passive: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap();
    assert_eq!(q.message_count(), 0);
}

#[tokio::test]
async fn several_relays_share_the_outbox_without_publishing_twice() {
    let app = spawn_stack().await;
    // Two more relays on the same outbox, as with three API or worker processes.
    for _ in 0..2 {
        let mut rc =
            i9_common::relay::RelayConfig::new(app.config.amqp_url.clone(), app.topology.clone());
        rc.batch = 3;
        tokio::spawn(i9_common::relay::run(
            app.pool().clone(),
            rc,
            app.stop_signal(),
        ));
    }
    let token = app.token(ADMIN).await;
    let mut ids = Vec::new();
    for i in 0..20 {
        let mut body = hire(
            &format!("Many{i}"),
            "Relays",
            &format!("many{i}@mail.example"),
        );
        body["createI9"] = json!("yes");
        ids.push(post(&app, &token, body).await["id"].as_i64().unwrap());
    }
    for id in &ids {
        eventually("every I-9", || async { i9_of(&app, *id).await.is_some() }).await;
    }
    let (rows, once): (i64, i64) =
        sqlx::query_as("SELECT count(*), count(*) FILTER (WHERE attempts = 1) FROM job_outbox WHERE kind = 'create_i9'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!((rows, once), (20, 20), "each job published exactly once");
    let i9s: i64 = sqlx::query_scalar("SELECT count(*) FROM i9s")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(i9s, 20);
}

#[tokio::test]
async fn a_login_email_job_delivered_twice_sends_one_email() {
    let app = spawn_stack().await;
    let token = app.token(ADMIN).await;
    let mut body = hire("Dup", "Login", "dup.login@mail.example");
    body["createLogin"] = json!(true);
    body["sendLoginEmail"] = json!(true);
    post(&app, &token, body).await;
    eventually("the login email arrives", || async {
        !app.smtp().to("dup.login@mail.example").is_empty()
    })
    .await;
    let payload: Value =
        sqlx::query_scalar("SELECT payload FROM job_outbox WHERE kind = 'send_login_email'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    let conn = i9_common::amqp::connect(&i9_tests::amqp_url())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    ch.basic_publish(
        app.topology.jobs_exchange().into(),
        "send_login_email".into(),
        BasicPublishOptions::default(),
        payload.to_string().as_bytes(),
        BasicProperties::default(),
    )
    .await
    .unwrap()
    .await
    .unwrap();
    // A later login email: once it is in, the duplicate before it was handled.
    let mut marker = hire("Mark", "Er", "marker@mail.example");
    marker["createLogin"] = json!(true);
    marker["sendLoginEmail"] = json!(true);
    post(&app, &token, marker).await;
    eventually("the marker email arrives", || async {
        !app.smtp().to("marker@mail.example").is_empty()
    })
    .await;
    assert_eq!(
        app.smtp().to("dup.login@mail.example").len(),
        1,
        "exactly one email"
    );
    let tokens: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM password_set_tokens t JOIN users u ON u.id = t.user_id WHERE u.login = 'dup.login@mail.example'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(tokens, 1, "one set-password link issued");
}

#[tokio::test]
async fn the_outbox_backlog_tells_how_many_jobs_wait_how_long_and_why() {
    let app = i9_tests::spawn_app().await; // no relay runs
    sqlx::query(
        "INSERT INTO job_outbox (job_id, kind, payload, created_at, published_at, last_error) VALUES
           ($1, 'create_i9', '{}', now() - interval '10 minutes', now(), NULL),
           ($2, 'create_i9', '{}', now() - interval '2 minutes', NULL, 'returned by the broker'),
           ($3, 'create_i9', '{}', now(), NULL, NULL)",
    )
    .bind(uuid::Uuid::new_v4())
    .bind(uuid::Uuid::new_v4())
    .bind(uuid::Uuid::new_v4())
    .execute(app.pool())
    .await
    .unwrap();
    let b = i9_common::outbox::backlog(app.pool()).await.unwrap();
    assert_eq!(b.jobs, 2, "the unpublished ones");
    assert!((120.0..600.0).contains(&b.oldest_secs), "{b:?}");
    assert_eq!(b.last_error.as_deref(), Some("returned by the broker"));
}

/// The remote-hire email names the employer (the legal entity), the day
/// Section 1 is due and when the link expires; it and the login email are in
/// the employee's language, each as HTML with a plain-text alternative.
#[tokio::test]
async fn emails_name_the_employer_the_due_date_and_the_expiry_in_the_employees_language() {
    let app = spawn_stack().await;
    let token = app.token(ADMIN).await;
    let entity: i64 =
        sqlx::query_scalar("SELECT id FROM legal_entities WHERE entity_name = 'Acme Labs Inc'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    let mut body = hire("Rosa", "Vega", "rosa.vega@mail.example");
    body["createRemotehireI9"] = json!("yes");
    body["languagePreference"] = json!(2);
    body["legalEntity"] = json!(entity);
    body["createLogin"] = json!(true);
    body["sendLoginEmail"] = json!(true);
    let created = post(&app, &token, body).await;
    let link = created["i9FormSection1Link"].as_str().unwrap().to_owned();
    eventually("both emails arrive", || async {
        app.smtp().to("rosa.vega@mail.example").len() >= 2
    })
    .await;
    let mails = app.smtp().to("rosa.vega@mail.example");
    assert_eq!(mails.len(), 2, "one remote-hire and one login email");
    let hire_mail = mails
        .iter()
        .find(|m| m.subject.contains("Sección 1"))
        .expect("the remote-hire email, in Spanish");
    assert_eq!(
        hire_mail.subject,
        "Acme Labs Inc: complete la Sección 1 de su Formulario I-9"
    );
    let expires: chrono::DateTime<chrono::Utc> = sqlx::query_scalar(
        "SELECT r.section1_expires_at FROM i9_requests r JOIN employees e ON e.id = r.employee_id
         WHERE e.email_address = 'rosa.vega@mail.example'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    let expiry = i9_workers::wording::moment(expires, true);
    for part in [&hire_mail.text, &hire_mail.html] {
        assert!(part.contains("Acme Labs Inc le pide"), "{part}");
        assert!(
            part.contains("5 de noviembre de 2026"),
            "the start date: {part}"
        );
        assert!(
            part.contains(&format!("funciona hasta el {expiry}")),
            "{part}"
        );
    }
    assert_eq!(link_in(&hire_mail.text), link);
    assert!(hire_mail.html.contains("<a href=\""), "{}", hire_mail.html);
    let login_mail = mails
        .iter()
        .find(|m| !m.subject.contains("Sección 1"))
        .unwrap();
    assert_eq!(
        login_mail.subject,
        "Acme Labs Inc: su acceso para completar sus formularios de empleo"
    );
    let password_expires: chrono::DateTime<chrono::Utc> = sqlx::query_scalar(
        "SELECT t.expires_at FROM password_set_tokens t JOIN users u ON u.id = t.user_id
         WHERE u.login = 'rosa.vega@mail.example'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    let password_expiry = i9_workers::wording::moment(password_expires, true);
    for part in [&login_mail.text, &login_mail.html] {
        assert!(part.contains("Acme Labs Inc creó un acceso"), "{part}");
        assert!(
            part.contains(&format!("hasta el {password_expiry}")),
            "{part}"
        );
        assert!(part.contains("/account/sign-in?lang=es"), "{part}");
        assert!(
            part.contains("Sección 1 de su Formulario I-9 debe estar completa a más tardar el"),
            "its Section 1's due date: {part}"
        );
    }
    assert!(
        login_mail.text.starts_with("Hola Rosa:"),
        "{}",
        login_mail.text
    );
    assert!(
        login_mail.html.contains("Elija su contraseña"),
        "{}",
        login_mail.html
    );

    // Without a legal entity, in English: "Your employer".
    let mut body = hire("Tom", "Reed", "tom.reed@mail.example");
    body["createRemotehireI9"] = json!("yes");
    post(&app, &token, body).await;
    eventually("the English email arrives", || async {
        !app.smtp().to("tom.reed@mail.example").is_empty()
    })
    .await;
    let mail = app.smtp().to("tom.reed@mail.example").remove(0);
    assert_eq!(
        mail.subject,
        "Your employer: complete Section 1 of your Form I-9"
    );
    assert!(
        mail.text
            .contains("by November 5, 2026, your first day of work"),
        "{}",
        mail.text
    );
    assert!(
        mail.text
            .contains("If it no longer works, ask your employer for a new one."),
        "mid-sentence in lower case: {}",
        mail.text
    );
    assert_eq!(app.smtp().to("tom.reed@mail.example").len(), 1);
}
