//! Expiring-document reminders (docs/reminders.md): each threshold of a
//! reverification or receipt date is reminded once, by one email per
//! notification address and, for a partner's employee, one partner event;
//! a second round, or a second worker at once, sends nothing more; the
//! dashboard queues list what is due.

use std::time::Duration;

use chrono::{Days, NaiveDate};
use i9_common::domain::Thresholds;
use i9_tests::{eventually, ids, spawn_partner_stack, spawn_stack, TestApp, ADMIN};
use i9_workers::reminders::{round, Round, Settings};
use serde_json::Value;

/// The day the tests start from.
fn day(n: u64) -> NaiveDate {
    NaiveDate::from_ymd_opt(2027, 1, 1).unwrap() + Days::new(n)
}

fn settings(app: &TestApp) -> Settings {
    Settings {
        interval: Duration::from_secs(3600),
        thresholds: Thresholds::default(),
        public_base_url: app.address.clone(),
    }
}

/// An employee of the Seattle office with an SSN and these notification
/// addresses, and a Completed I-9; returns the I-9's id.
async fn i9_notifying(app: &TestApp, name: &str, first: Option<&str>, second: Option<&str>) -> i64 {
    static SERIAL: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(4321);
    let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let ssn = format!("321-54-{serial:04}");
    let e = app
        .insert_employee(name, "Remind", "Seattle Office", Some(&ssn))
        .await;
    sqlx::query(
        "UPDATE employees SET notification_email1 = $2, notification_email2 = $3 WHERE id = $1",
    )
    .bind(e)
    .bind(first)
    .bind(second)
    .execute(app.pool())
    .await
    .unwrap();
    app.insert_i9(e, "Completed").await
}

/// Set the reverification date (Supplement B's engineer writes it through
/// the API; these tests set it as stored).
async fn set_dates(
    app: &TestApp,
    i9: i64,
    expiration: Option<NaiveDate>,
    receipt: Option<NaiveDate>,
) {
    sqlx::query("UPDATE i9s SET i9_expiration = $2, receipt_due_date = $3 WHERE id = $1")
        .bind(i9)
        .bind(expiration)
        .bind(receipt)
        .execute(app.pool())
        .await
        .unwrap();
}

/// Reminder email jobs queued so far (what a round decides; the worker sends them).
async fn email_jobs(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM job_outbox WHERE kind = 'send_reminder_email'")
        .fetch_one(app.pool())
        .await
        .unwrap()
}

/// The reminders recorded for `i9`: (threshold, sent), in order of the key.
async fn recorded(app: &TestApp, i9: i64) -> Vec<(String, String, bool)> {
    sqlx::query_as(
        "SELECT kind, threshold, sent FROM reminders WHERE i9_id = $1 ORDER BY kind, due_date, id",
    )
    .bind(i9)
    .fetch_all(app.pool())
    .await
    .unwrap()
}

async fn emails_reach(app: &TestApp, address: &str, n: usize) {
    eventually(&format!("{n} emails to {address}"), || async {
        app.smtp().to(address).len() == n
    })
    .await;
}

#[tokio::test]
async fn each_threshold_is_reminded_once_to_each_notification_address() {
    let app = spawn_stack().await;
    let s = settings(&app);
    let i9 = i9_notifying(
        &app,
        "Nora",
        Some("hr@acme.example"),
        Some("boss@acme.example"),
    )
    .await;
    set_dates(&app, i9, Some(day(100)), None).await;

    // 100 days before: no threshold reached.
    assert_eq!(round(app.pool(), &s, day(0)).await.unwrap().sent, 0);
    // 90 days before: one reminder, an email to each address.
    let r = round(app.pool(), &s, day(10)).await.unwrap();
    assert_eq!((r.sent, r.emails, r.events), (1, 2, 0));
    assert_eq!(email_jobs(&app).await, 2);
    // A second round, the same day or the next, sends nothing more.
    for today in [day(10), day(11), day(69)] {
        assert_eq!(
            round(app.pool(), &s, today).await.unwrap().sent,
            0,
            "{today}"
        );
    }
    assert_eq!(email_jobs(&app).await, 2);
    // 30 and 7 days before; the due date itself is not overdue; the day after is.
    for (today, jobs) in [
        (day(70), 4),
        (day(93), 6),
        (day(100), 6),
        (day(101), 8),
        (day(150), 8),
    ] {
        round(app.pool(), &s, today).await.unwrap();
        assert_eq!(email_jobs(&app).await, jobs, "{today}");
    }
    assert_eq!(
        recorded(&app, i9).await,
        ["90", "30", "7", "overdue"].map(|t| ("reverification".to_owned(), t.to_owned(), true))
    );
    // Four emails to each address (the overdue one last: the queue is in order).
    emails_reach(&app, "hr@acme.example", 4).await;
    emails_reach(&app, "boss@acme.example", 4).await;
    assert_eq!(app.smtp().messages().len(), 8);
    let mails = app.smtp().to("hr@acme.example");
    // Each says how far off the date is, from the day of its round: the
    // 30-day and the 7-day emails are not the same email.
    let subjects: Vec<&str> = mails.iter().map(|m| m.subject.as_str()).collect();
    assert_eq!(
        subjects,
        [
            "Form I-9 reverification due in 90 days (April 11, 2027): Nora Remind",
            "Form I-9 reverification due in 30 days (April 11, 2027): Nora Remind",
            "Form I-9 reverification due in 7 days (April 11, 2027): Nora Remind",
            "Overdue: Form I-9 reverification was due April 11, 2027: Nora Remind",
        ]
    );
    let body = &mails[0].text;
    assert!(
        body.contains(
            "Reverification on the Form I-9 of Nora Remind is due in 90 days, by April 11, 2027."
        ) && body
            .lines()
            .any(|l| l.trim_end() == format!("Form I-9: record {i9}"))
            && body.contains(&format!("POST {}/v1/i9s/{i9}/reverify", app.address)),
        "{body}"
    );
    assert!(
        mails[3]
            .text
            .contains("was due on April 11, 2027 and is 1 day overdue."),
        "{}",
        mails[3].text
    );
    // Named as API calls, never as a link to open: they need a token.
    assert!(!mails.iter().any(|m| m.html.contains("<a ")));
    // The employee's name, nothing more: no SSN, even in part.
    for m in app.smtp().messages() {
        assert!(
            !m.text.contains("6789") && !m.html.contains("6789"),
            "{}",
            m.text
        );
    }
}

#[tokio::test]
async fn an_i9_first_seen_inside_several_thresholds_gets_only_the_tightest() {
    let app = spawn_stack().await;
    let s = settings(&app);
    let i9 = i9_notifying(&app, "Omar", Some("hr@acme.example"), None).await;
    set_dates(&app, i9, Some(day(5)), None).await;

    let r = round(app.pool(), &s, day(0)).await.unwrap();
    assert_eq!((r.sent, r.emails), (1, 1));
    // The 7-day reminder went; 90 and 30 are recorded as passed, unsent.
    let rows = recorded(&app, i9).await;
    let rows: Vec<(&str, bool)> = rows.iter().map(|(_, t, s)| (t.as_str(), *s)).collect();
    assert_eq!(rows, [("7", true), ("30", false), ("90", false)]);
    assert_eq!(round(app.pool(), &s, day(1)).await.unwrap().sent, 0);
    // Passed, several days late: overdue alone.
    assert_eq!(round(app.pool(), &s, day(20)).await.unwrap().sent, 1);
    assert_eq!(email_jobs(&app).await, 2);
    emails_reach(&app, "hr@acme.example", 2).await;
    assert_eq!(app.smtp().messages().len(), 2);
}

#[tokio::test]
async fn two_workers_at_once_send_each_reminder_once() {
    let app = spawn_stack().await;
    let s = settings(&app);
    let mut i9s = Vec::new();
    for n in 0..6u64 {
        let i9 = i9_notifying(&app, &format!("Race{n}"), Some("hr@acme.example"), None).await;
        set_dates(&app, i9, Some(day(20 + n)), None).await;
        i9s.push(i9);
    }
    // Two workers' rounds at once, on their own connections.
    let other = sqlx::PgPool::connect(&app.db.url).await.unwrap();
    let (a, b) = tokio::join!(round(app.pool(), &s, day(0)), round(&other, &s, day(0)));
    let (a, b): (Round, Round) = (a.unwrap(), b.unwrap());
    assert_eq!(a.sent + b.sent, 6, "{a:?} {b:?}");
    assert_eq!(a.emails + b.emails, 6);
    assert_eq!(email_jobs(&app).await, 6);
    for i9 in i9s {
        assert_eq!(recorded(&app, i9).await.iter().filter(|r| r.2).count(), 1);
    }
    emails_reach(&app, "hr@acme.example", 6).await;
    // And nothing more from a third round.
    assert_eq!(round(&other, &s, day(0)).await.unwrap().sent, 0);
    assert_eq!(email_jobs(&app).await, 6);
}

#[tokio::test]
async fn a_new_due_date_starts_a_new_cycle() {
    let app = spawn_stack().await;
    let s = settings(&app);
    let i9 = i9_notifying(&app, "Pia", Some("hr@acme.example"), None).await;
    set_dates(&app, i9, Some(day(30)), None).await;
    assert_eq!(round(app.pool(), &s, day(0)).await.unwrap().sent, 1);
    emails_reach(&app, "hr@acme.example", 1).await;
    // Reverified: a date two years on. Nothing until 90 days before it.
    set_dates(&app, i9, Some(day(730)), None).await;
    assert_eq!(round(app.pool(), &s, day(1)).await.unwrap().sent, 0);
    assert_eq!(round(app.pool(), &s, day(639)).await.unwrap().sent, 0);
    assert_eq!(round(app.pool(), &s, day(640)).await.unwrap().sent, 1);
    assert_eq!(email_jobs(&app).await, 2);
    emails_reach(&app, "hr@acme.example", 2).await;
}

#[tokio::test]
async fn parked_terminated_and_undated_i9s_are_not_reminded() {
    let app = spawn_stack().await;
    let s = settings(&app);
    let parked = i9_notifying(&app, "Parked", Some("hr@acme.example"), None).await;
    set_dates(&app, parked, Some(day(5)), Some(day(5))).await;
    sqlx::query("UPDATE i9s SET status = 'Parked' WHERE id = $1")
        .bind(parked)
        .execute(app.pool())
        .await
        .unwrap();
    let gone = i9_notifying(&app, "Gone", Some("hr@acme.example"), None).await;
    set_dates(&app, gone, Some(day(5)), None).await;
    sqlx::query(
        "UPDATE employment_periods SET terminated_date = $2
         WHERE employee_id = (SELECT employee_id FROM i9s WHERE id = $1)",
    )
    .bind(gone)
    .bind(day(0))
    .execute(app.pool())
    .await
    .unwrap();
    i9_notifying(&app, "Citizen", Some("hr@acme.example"), None).await;
    let r = round(app.pool(), &s, day(0)).await.unwrap();
    assert_eq!((r.looked_at, r.sent), (0, 0));
    // An employee leaving later is still employed: reminded.
    sqlx::query(
        "UPDATE employment_periods SET terminated_date = $2
         WHERE employee_id = (SELECT employee_id FROM i9s WHERE id = $1)",
    )
    .bind(gone)
    .bind(day(1))
    .execute(app.pool())
    .await
    .unwrap();
    assert_eq!(round(app.pool(), &s, day(0)).await.unwrap().sent, 1);
    assert_eq!(email_jobs(&app).await, 1);
}

#[tokio::test]
async fn receipt_dates_are_reminded_apart_and_listed_with_their_kind() {
    let app = spawn_stack().await;
    let s = settings(&app);
    let both = i9_notifying(&app, "Both", Some("hr@acme.example"), None).await;
    set_dates(&app, both, Some(day(60)), Some(day(20))).await;
    let receipt = i9_notifying(&app, "Receipt", None, Some("boss@acme.example")).await;
    set_dates(&app, receipt, None, Some(day(3))).await;
    // Section 2's List B document was the receipt: the email names it.
    sqlx::query("UPDATE i9s SET list_b_doc_title = $2, list_b_doc_receipt = TRUE WHERE id = $1")
        .bind(receipt)
        .bind("Driver's License")
        .execute(app.pool())
        .await
        .unwrap();
    let later = i9_notifying(&app, "Later", None, None).await;
    set_dates(&app, later, Some(day(200)), None).await;

    // Each kind its own cycle: `both` gets a receipt reminder (30) and a
    // reverification one (90); `receipt` its 7-day one.
    let r = round(app.pool(), &s, day(0)).await.unwrap();
    assert_eq!((r.sent, r.emails), (3, 3));
    let kinds: Vec<(String, String, bool)> = recorded(&app, both)
        .await
        .into_iter()
        .filter(|r| r.2)
        .collect();
    assert_eq!(
        kinds,
        [
            ("receipt".to_owned(), "30".to_owned(), true),
            ("reverification".to_owned(), "90".to_owned(), true)
        ]
    );
    emails_reach(&app, "boss@acme.example", 1).await;
    let m = &app.smtp().to("boss@acme.example")[0];
    assert_eq!(
        m.subject,
        "Form I-9 receipt replacement due in 3 days (January 4, 2027): Receipt Remind"
    );
    assert!(
        m.text.starts_with(
            "The real document replacing a receipt (Driver's License) on the Form I-9 of Receipt Remind"
        ),
        "{}",
        m.text
    );
    emails_reach(&app, "hr@acme.example", 2).await;

    // The dashboard, on today's date: what is due within N days, soonest
    // first, each with its date and kind.
    let admin = app.token(ADMIN).await;
    let today = chrono::Utc::now().date_naive();
    set_dates(
        &app,
        both,
        Some(today + Days::new(60)),
        Some(today + Days::new(20)),
    )
    .await;
    set_dates(&app, receipt, None, Some(today + Days::new(3))).await;
    set_dates(&app, later, Some(today + Days::new(200)), None).await;
    let expiring = app
        .get_json("/v1/i9s?queue=expiring&withinDays=30", &admin)
        .await;
    assert_eq!(ids(&expiring), [receipt, both]);
    let items = expiring["searchResult"].as_array().unwrap();
    let due = |i: &Value| (i["documentDueDate"].clone(), i["documentDueKind"].clone());
    assert_eq!(
        due(&items[0]),
        (
            Value::from((today + Days::new(3)).to_string()),
            Value::from("receipt")
        )
    );
    assert_eq!(
        due(&items[1]),
        (
            Value::from((today + Days::new(20)).to_string()),
            Value::from("receipt")
        )
    );
    assert_eq!(
        ids(&app
            .get_json("/v1/i9s?queue=receipt&withinDays=3", &admin)
            .await),
        [receipt]
    );
    assert_eq!(
        ids(&app
            .get_json("/v1/i9s?queue=reverification&withinDays=90", &admin)
            .await),
        [both]
    );
    let all = app
        .get_json("/v1/i9s?queue=expiring&withinDays=365", &admin)
        .await;
    assert_eq!(ids(&all), [receipt, both, later]);
    assert_eq!(
        due(&all["searchResult"][2]),
        (
            Value::from((today + Days::new(200)).to_string()),
            Value::from("reverification")
        )
    );
    // withinDays is required with these queues.
    assert_eq!(
        app.get("/v1/i9s?queue=expiring", &admin).await.status(),
        400
    );
}

#[tokio::test]
async fn a_partner_employee_gets_one_event_per_reminder_and_no_address_no_email() {
    let (app, receiver) = spawn_partner_stack().await;
    let s = settings(&app);
    let employee = crate::callbacks::hire(&app, "cand-remind-1").await;
    eventually("the I-9 exists", || async {
        app.i9_count(employee).await == 1
    })
    .await;
    eventually("the creation callback", || async {
        receiver.received().len() == 1
    })
    .await;
    let i9: i64 = sqlx::query_scalar("SELECT id FROM i9s WHERE employee_id = $1")
        .bind(employee)
        .fetch_one(app.pool())
        .await
        .unwrap();
    set_dates(&app, i9, Some(day(25)), None).await;
    // A non-partner employee's reminder posts nothing.
    let own = i9_notifying(&app, "Own", Some("hr@acme.example"), None).await;
    set_dates(&app, own, Some(day(25)), None).await;

    let r = round(app.pool(), &s, day(0)).await.unwrap();
    assert_eq!((r.sent, r.emails, r.events), (2, 1, 1));
    assert_eq!(round(app.pool(), &s, day(1)).await.unwrap().sent, 0);
    // The overdue one: a second event.
    let r = round(app.pool(), &s, day(26)).await.unwrap();
    assert_eq!((r.sent, r.events), (2, 1));
    assert_eq!(round(app.pool(), &s, day(27)).await.unwrap().sent, 0);
    eventually("the reminder callbacks", || async {
        receiver.received().len() == 3
    })
    .await;
    let events = crate::callbacks::recorded_events(&app, employee).await;
    assert_eq!(events.get("i9.document_due"), Some(&2), "{events:?}");
    let bodies = crate::callbacks::verified(&receiver);
    let validators = crate::callbacks::webhook_validators(&app).await;
    let seen = crate::callbacks::assert_match_the_contract(&validators, &bodies);
    assert_eq!(seen.get("i9.document_due"), Some(&2), "{seen:?}");
    let due: Vec<&Value> = bodies
        .iter()
        .filter(|b| b["type"] == "i9.document_due")
        .collect();
    assert_eq!(due[0]["threshold"], "30");
    assert_eq!(due[1]["threshold"], "overdue");
    for b in &due {
        assert_eq!(b["dueKind"], "reverification");
        assert_eq!(b["dueDate"], "2027-01-26");
        assert_eq!(b["i9Id"], i9);
        assert_eq!(b["employeeId"], employee);
        assert_eq!(b["integrationCandidateId"], "cand-remind-1");
        assert_eq!(b["i9Url"], format!("{}/v1/i9s/{i9}", app.address));
    }
    // In sequence after the creation event.
    assert_eq!(bodies[0]["sequence"], 1);
    assert_eq!(
        (due[0]["sequence"].clone(), due[1]["sequence"].clone()),
        (2.into(), 3.into())
    );
    // The partner's employee has no notification address: only the other's emails.
    emails_reach(&app, "hr@acme.example", 2).await;
    assert_eq!(email_jobs(&app).await, 2);
}

/// The worker's own rounds run on `Config::today`, moved by
/// `CLOCK_OFFSET_DAYS` for a trial.
#[tokio::test]
async fn the_worker_reminds_on_its_shortened_clock() {
    let app = spawn_stack().await;
    let i9 = i9_notifying(&app, "Trial", Some("hr@acme.example"), None).await;
    let today = chrono::Utc::now().date_naive();
    set_dates(&app, i9, Some(today + Days::new(50)), None).await;
    let mut config = (*app.config).clone();
    config.clock_offset_days = 20; // 30 days before, on the worker's clock
    config.reminder_interval = Duration::from_secs(1);
    tokio::spawn(i9_workers::reminders::run(
        app.pool().clone(),
        config,
        app.stop_signal(),
    ));
    emails_reach(&app, "hr@acme.example", 1).await;
    let sent: Vec<(String, String, bool)> = recorded(&app, i9)
        .await
        .into_iter()
        .filter(|r| r.2)
        .collect();
    assert_eq!(sent, [("reverification".to_owned(), "30".to_owned(), true)]);
}

/// A stack whose worker the test starts (after the round).
async fn stack_without_worker() -> TestApp {
    i9_tests::spawn(
        i9_tests::Stack {
            jobs: true,
            no_worker: true,
            ..i9_tests::Stack::default()
        },
        |_| {},
    )
    .await
}

#[tokio::test]
async fn three_copies_of_a_reminder_email_job_send_one_email() {
    use i9_common::jobs::JobKind;
    let app = stack_without_worker().await;
    let i9 = i9_notifying(&app, "Copy", Some("hr@acme.example"), None).await;
    set_dates(&app, i9, Some(day(30)), None).await;
    assert_eq!(
        round(app.pool(), &settings(&app), day(0))
            .await
            .unwrap()
            .emails,
        1
    );
    let payload = crate::once::published_job(&app, JobKind::SendReminderEmail).await;
    crate::once::publish_copies(&app, JobKind::SendReminderEmail, &payload, 2).await;
    app.smtp().slow_down(Duration::from_millis(1500));
    let mut wc = i9_tests::test_worker_config(&app.topology);
    wc.prefetch = 4;
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let worker = app.start_worker_with(wc, stop_rx);
    emails_reach(&app, "hr@acme.example", 1).await;
    crate::once::settle(&app, JobKind::SendReminderEmail, stop, worker).await;
    assert_eq!(app.smtp().to("hr@acme.example").len(), 1, "one email");
    assert_eq!(app.smtp().attempt_times("hr@acme.example").len(), 1);
}

#[tokio::test]
async fn an_email_whose_date_changed_or_address_went_meanwhile_is_not_sent() {
    use i9_common::jobs::JobKind;
    let app = stack_without_worker().await;
    let reverified = i9_notifying(&app, "Reverified", Some("a@acme.example"), None).await;
    set_dates(&app, reverified, Some(day(10)), None).await;
    let removed = i9_notifying(&app, "Removed", None, Some("b@acme.example")).await;
    set_dates(&app, removed, None, Some(day(11))).await;
    let kept = i9_notifying(&app, "Kept", Some("c@acme.example"), None).await;
    set_dates(&app, kept, Some(day(12)), None).await;
    assert_eq!(
        round(app.pool(), &settings(&app), day(0))
            .await
            .unwrap()
            .emails,
        3
    );
    // Before the worker takes the jobs: reverified (a new date), the
    // second notification address removed.
    set_dates(&app, reverified, Some(day(400)), None).await;
    sqlx::query("UPDATE employees SET notification_email2 = NULL WHERE id = (SELECT employee_id FROM i9s WHERE id = $1)")
        .bind(removed)
        .execute(app.pool())
        .await
        .unwrap();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let worker = app.start_worker_with(i9_tests::test_worker_config(&app.topology), stop_rx);
    emails_reach(&app, "c@acme.example", 1).await;
    crate::once::settle(&app, JobKind::SendReminderEmail, stop, worker).await;
    assert_eq!(app.smtp().messages().len(), 1, "only the one still due");
    // Each job was done (not retried, not dead-lettered).
    let done: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM processed_jobs WHERE kind = 'send_reminder_email' AND processed_at IS NOT NULL",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(done, 3);
    assert_eq!(app.dead_letters().await, 0);
}
