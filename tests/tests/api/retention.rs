//! Retention and purge of I-9s (docs/retention.md): the rule (leap days,
//! year ends), the stored date following terminations, cancellations and
//! re-hires, the purge (personal data gone, one destruction record), legal
//! holds, what is never purged, the dry run, and concurrent rounds.

use chrono::NaiveDate;
use i9_common::models::retention::{self, PurgedBy, RULE};
use i9_tests::{eventually, spawn_app, spawn_app_with, TestApp, ADMIN, BOSTON_VIEWER};
use serde_json::{json, Value};

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

async fn stored_date(app: &TestApp, i9: i64) -> Option<NaiveDate> {
    sqlx::query_scalar("SELECT retention_date FROM i9s WHERE id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap()
}

/// PATCH `change` onto the employee's names and group (which a PATCH needs).
async fn patch(app: &TestApp, token: &str, employee: i64, change: Value) {
    let rec = app
        .get_json(&format!("/v1/employees/{employee}"), token)
        .await;
    let mut body = json!({"firstName": rec["firstName"], "lastName": rec["lastName"],
                          "locationId": rec["locationId"]});
    for (k, v) in change.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = app
        .patch_json(&format!("/v1/employees/{employee}"), token, &body)
        .await;
    let status = r.status();
    assert_eq!(status, 200, "{}", r.text().await.unwrap());
}

async fn destructions(app: &TestApp, i9: i64) -> i64 {
    app.count("SELECT count(*) FROM i9_destructions WHERE i9_id = $1", i9)
        .await
}

async fn delete(app: &TestApp, path: &str, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .delete(app.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

/// James (EMP-1002) was hired 2025-01-13 and terminated 2026-06-30: his
/// I-9s are due on 2028-01-13 (hire + 3 years is later).
const JAMES_DUE: &str = "2028-01-13";

#[tokio::test]
async fn the_rule_counts_whole_years_and_a_leap_day_ends_on_march_first() {
    let app = spawn_app().await;
    // (date of hire, termination date, retention date)
    let cases = [
        // Hire on Feb 29 + 3 years: Feb 29 does not exist in 2027, Mar 1 is
        // the anniversary (never a day early).
        ("2024-02-29", Some("2025-06-01"), Some("2027-03-01")),
        // Termination on Feb 29 + 1 year: Mar 1.
        ("2020-02-29", Some("2024-02-29"), Some("2025-03-01")),
        // Feb 28 stays Feb 28, also into a leap year.
        ("2021-02-28", Some("2023-02-28"), Some("2024-02-28")),
        // Mar 1 stays Mar 1 across a leap year.
        ("2023-03-01", Some("2025-03-01"), Some("2026-03-01")),
        // Year ends: Dec 31 + 3 years, and termination + 1 into the next year.
        ("2023-12-31", Some("2024-01-01"), Some("2026-12-31")),
        ("2020-01-01", Some("2025-12-31"), Some("2026-12-31")),
        ("2023-01-01", Some("2025-12-31"), Some("2026-12-31")),
        ("2022-12-31", Some("2025-01-01"), Some("2026-01-01")),
        // Hire + 3 later vs termination + 1 later.
        ("2026-10-05", Some("2026-11-30"), Some("2029-10-05")),
        ("2020-01-06", Some("2026-06-30"), Some("2027-06-30")),
        // Employed: none.
        ("2024-03-01", None, None),
    ];
    for (hired, terminated, want) in cases {
        let got: Option<NaiveDate> = sqlx::query_scalar("SELECT i9_retention_date($1, $2)")
            .bind(day(hired))
            .bind(terminated.map(day))
            .fetch_one(app.pool())
            .await
            .unwrap();
        assert_eq!(
            got,
            want.map(day),
            "hired {hired}, terminated {terminated:?}"
        );
    }
    // An unknown date of hire gives no date: never purged on a guess.
    let got: Option<NaiveDate> = sqlx::query_scalar("SELECT i9_retention_date(NULL, $1)")
        .bind(day("2025-01-01"))
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(got, None);
    // 4 years from a Feb 29 is a Feb 29.
    let got: NaiveDate = sqlx::query_scalar("SELECT i9_years_after($1, 4)")
        .bind(day("2024-02-29"))
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(got, day("2028-02-29"));
}

#[tokio::test]
async fn the_date_is_stored_on_termination_and_cleared_when_it_is_cancelled() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await; // hired 2026-10-05
    let i9 = app.insert_i9(maria, "Approved").await;
    assert_eq!(stored_date(&app, i9).await, None, "none while employed");
    patch(&app, &token, maria, json!({"terminatedDate": "2026-11-30"})).await;
    assert_eq!(stored_date(&app, i9).await, Some(day("2029-10-05")));
    let rec = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_eq!(rec["retentionDate"], "2029-10-05", "the record reads it");
    assert_eq!(rec["legalHold"], false);
    // Another termination date, far later: termination + 1 year wins.
    patch(&app, &token, maria, json!({"terminatedDate": "2029-12-31"})).await;
    assert_eq!(stored_date(&app, i9).await, Some(day("2030-12-31")));
    // Cancelled: cleared.
    patch(&app, &token, maria, json!({"terminatedDate": null})).await;
    assert_eq!(stored_date(&app, i9).await, None);
    let rec = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_eq!(rec["retentionDate"], Value::Null);
}

#[tokio::test]
async fn a_rehire_keeps_the_old_periods_date_and_an_i9_moved_to_the_new_period_follows_it() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await; // 2025-01-13 to 2026-06-30
    let old_period: i64 = app
        .count(
            "SELECT id FROM employment_periods WHERE employee_id = $1",
            james,
        )
        .await;
    let i9 = app.insert_i9(james, "Approved").await;
    sqlx::query("UPDATE i9s SET employment_period_id = $2 WHERE id = $1")
        .bind(i9)
        .bind(old_period)
        .execute(app.pool())
        .await
        .unwrap();
    assert_eq!(stored_date(&app, i9).await, Some(day(JAMES_DUE)));
    patch(
        &app,
        &token,
        james,
        json!({"rehire": "yes", "startDate": "2027-02-01"}),
    )
    .await;
    assert_eq!(
        stored_date(&app, i9).await,
        Some(day(JAMES_DUE)),
        "an I-9 of an older, ended period keeps its date"
    );
    // A re-hire on Supplement B points the I-9 at the new period: current
    // again, no date.
    let new_period: i64 = app
        .count(
            "SELECT max(id) FROM employment_periods WHERE employee_id = $1",
            james,
        )
        .await;
    sqlx::query("UPDATE i9s SET employment_period_id = $2 WHERE id = $1")
        .bind(i9)
        .bind(new_period)
        .execute(app.pool())
        .await
        .unwrap();
    assert_eq!(stored_date(&app, i9).await, None);
    // Ended again: from the new period (hire 2027-02-01 + 3 years).
    patch(&app, &token, james, json!({"terminatedDate": "2027-03-31"})).await;
    assert_eq!(stored_date(&app, i9).await, Some(day("2030-02-01")));
}

#[tokio::test]
async fn a_purge_removes_the_personal_data_and_keeps_one_destruction_record() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await;
    let i9 = app.insert_i9(james, "Approved").await;
    sqlx::query(
        "UPDATE i9s SET date_of_birth = DATE '1990-04-01', alien_number = $2,
                        list_a1_doc_title = 'U.S. Passport', list_a1_doc_number = $3,
                        employer_first_name = 'Ada', translator_last_name = 'Tran',
                        ssn_last4 = '1234', email_address = 'james@example.com'
         WHERE id = $1",
    )
    .bind(i9)
    // Bound, not literal: the statement text is logged at DEBUG and the log scan
    // reads an A-Number's nine digits as a social security number.
    .bind("A123456789")
    .bind("X1234567")
    .execute(app.pool())
    .await
    .unwrap();
    // Its Section 1 link (a row of its own).
    sqlx::query(
        "INSERT INTO i9_requests (id, employee_id, remote, section1_token_hash, section1_expires_at,
                                  section1_token_ciphertext, i9_id)
         VALUES (gen_random_uuid(), $1, TRUE, '\\x01', now(), '\\x02', $2)",
    )
    .bind(james)
    .bind(i9)
    .execute(app.pool())
    .await
    .unwrap();
    // The day before: nothing.
    let round = retention::purge_round(app.pool(), day("2028-01-12"), PurgedBy::Worker)
        .await
        .unwrap();
    assert!(round.i9s.is_empty(), "{round:?}");
    let rec = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_eq!(rec["lastName"], "Chen");
    // On the date: purged.
    let round = retention::purge_round(app.pool(), day(JAMES_DUE), PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(round.i9s.len(), 1);
    assert_eq!(round.i9s[0].i9_id, i9);
    assert_eq!(
        round.employees,
        vec![james],
        "nothing of James is left to keep"
    );
    // Each of these was set (or copied from the employee) before the purge.
    let left: (String, String, i32) = sqlx::query_as(
        "SELECT first_name, last_name,
                num_nonnulls(ssn_ciphertext, ssn_last4, date_of_birth, alien_number,
                             list_a1_doc_title, list_a1_doc_number, employer_first_name,
                             translator_last_name, email_address)
         FROM i9s WHERE id = $1",
    )
    .bind(i9)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(left, (String::new(), String::new(), 0));
    assert_eq!(destructions(&app, i9).await, 1);
    assert_eq!(
        app.count("SELECT count(*) FROM i9_requests WHERE i9_id = $1", i9)
            .await,
        0,
        "the Section 1 link went too"
    );
    let (rule, due, by): (String, NaiveDate, String) = sqlx::query_as(
        "SELECT rule, retention_date, purged_by FROM i9_destructions WHERE i9_id = $1",
    )
    .bind(i9)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(
        (rule.as_str(), due, by.as_str()),
        (RULE, day(JAMES_DUE), "worker")
    );
    // The employee's own personal data went with it.
    let (ssn, dob, last): (Option<String>, Option<NaiveDate>, String) =
        sqlx::query_as("SELECT ssn_last4, date_of_birth, last_name FROM employees WHERE id = $1")
            .bind(james)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!((ssn, dob, last), (None, None, String::new()));
    // The records answer 410, and the lists leave them out.
    let r = app.get(&format!("/v1/i9s/{i9}"), &token).await;
    assert_eq!(r.status(), 410);
    let body: Value = r.json().await.unwrap();
    assert!(body["detail"].as_str().unwrap().contains(RULE), "{body}");
    assert_eq!(
        app.get(&format!("/v1/employees/{james}"), &token)
            .await
            .status(),
        410
    );
    let list = app
        .get_json(&format!("/v1/i9s?employeeId={james}"), &token)
        .await;
    assert_eq!(list["total"], 0);
    let employees = app.get_json("/v1/employees", &token).await;
    assert!(!i9_tests::ids(&employees).contains(&james), "{employees}");
    // Nothing is written to them any more.
    let r = app
        .post_json(&format!("/v1/i9s/{i9}/approve"), &token, &json!({}))
        .await;
    assert_eq!(r.status(), 410);
    let r = app
        .patch_json(
            &format!("/v1/employees/{james}"),
            &token,
            &json!({"firstName": "James", "lastName": "Chen", "locationId": 1}),
        )
        .await;
    assert_eq!(r.status(), 410);
    // Audited, without personal data.
    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_log WHERE action = 'i9.purge' AND resource_id = $1::TEXT",
            i9
        )
        .await,
        1
    );
    // Another round: nothing more, still one record.
    let again = retention::purge_round(app.pool(), day("2030-01-01"), PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(again, retention::Round::default());
    assert_eq!(destructions(&app, i9).await, 1);
}

#[tokio::test]
async fn a_hold_on_the_employee_keeps_the_record_until_it_is_lifted() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await;
    let i9 = app.insert_i9(james, "Approved").await;
    let r = app
        .post_json(
            &format!("/v1/employees/{james}/legal-holds"),
            &token,
            &json!({"reason": "Litigation matter 2026-114"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let hold: Value = r.json().await.unwrap();
    assert_eq!(hold["active"], true);
    assert_eq!(hold["employeeId"], james);
    let rec = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_eq!(rec["legalHold"], true);
    let emp = app
        .get_json(&format!("/v1/employees/{james}"), &token)
        .await;
    assert_eq!(emp["legalHold"], true);
    let as_of = day("2030-01-01");
    let dry = retention::dry_run(app.pool(), as_of).await.unwrap();
    assert!(dry.i9s.is_empty() && dry.employees.is_empty(), "{dry:?}");
    let round = retention::purge_round(app.pool(), as_of, PurgedBy::Worker)
        .await
        .unwrap();
    assert!(round.i9s.is_empty() && round.employees.is_empty());
    assert_eq!(destructions(&app, i9).await, 0);
    // Lifted: the next round takes it.
    let path = format!("/v1/legal-holds/{}", hold["id"]);
    let r = delete(&app, &path, &token).await;
    assert_eq!(r.status(), 200);
    let lifted: Value = r.json().await.unwrap();
    assert_eq!(lifted["active"], false);
    assert_eq!(
        delete(&app, &path, &token).await.status(),
        409,
        "lifted already"
    );
    let holds = app.get_json("/v1/legal-holds", &token).await;
    assert_eq!(holds["total"], 1, "a lifted hold stays as history");
    let round = retention::purge_round(app.pool(), as_of, PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(round.i9s.len(), 1);
    assert_eq!(destructions(&app, i9).await, 1);
    for action in ["legal_hold.set", "legal_hold.lift"] {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = $1")
            .bind(action)
            .fetch_one(app.pool())
            .await
            .unwrap();
        assert_eq!(n, 1, "{action}");
    }
}

#[tokio::test]
async fn a_hold_on_the_legal_entity_keeps_its_employees_records() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await; // acme-us
    let i9 = app.insert_i9(james, "Approved").await;
    let entity: i64 = app
        .count("SELECT legal_entity_id FROM employees WHERE id = $1", james)
        .await;
    let r = app
        .post_json(
            &format!("/v1/eins/{entity}/legal-holds"),
            &token,
            &json!({"reason": "DOL audit 2027"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let hold: Value = r.json().await.unwrap();
    let as_of = day("2030-01-01");
    let round = retention::purge_round(app.pool(), as_of, PurgedBy::Worker)
        .await
        .unwrap();
    assert!(round.i9s.is_empty());
    assert_eq!(destructions(&app, i9).await, 0);
    let r = delete(&app, &format!("/v1/legal-holds/{}", hold["id"]), &token).await;
    assert_eq!(r.status(), 200);
    let round = retention::purge_round(app.pool(), as_of, PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(round.i9s.len(), 1);
}

#[tokio::test]
async fn legal_holds_need_permission_5_and_a_reason() {
    let app = spawn_app().await;
    let james = app.employee_id("EMP-1002").await;
    let viewer = app.token(BOSTON_VIEWER).await;
    let path = format!("/v1/employees/{james}/legal-holds");
    let r = app.post_json(&path, &viewer, &json!({"reason": "x"})).await;
    assert_eq!(r.status(), 403);
    let token = app.token(ADMIN).await;
    for body in [
        json!({}),
        json!({"reason": "  "}),
        json!({"reason": "x", "other": 1}),
    ] {
        let r = app.post_json(&path, &token, &body).await;
        assert_eq!(r.status(), 422, "{body}");
    }
    let r = app
        .post_json(
            "/v1/employees/999999/legal-holds",
            &token,
            &json!({"reason": "x"}),
        )
        .await;
    assert_eq!(r.status(), 404);
    let r = app
        .post_json(
            "/v1/eins/999999/legal-holds",
            &token,
            &json!({"reason": "x"}),
        )
        .await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        delete(&app, "/v1/legal-holds/999999", &token)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.count("SELECT count(*) FROM legal_holds WHERE $1 > 0", 1)
            .await,
        0
    );
}

#[tokio::test]
async fn in_progress_i9s_and_i9s_without_a_date_are_never_purged() {
    let app = spawn_app().await;
    let james = app.employee_id("EMP-1002").await; // terminated
    let maria = app.employee_id("EMP-1001").await; // employed
    let open = app.insert_i9(james, "Signed Sec 2").await;
    assert_eq!(stored_date(&app, open).await, Some(day(JAMES_DUE)));
    let employed = app.insert_i9(maria, "Approved").await;
    let far = day("2100-01-01");
    assert_eq!(
        retention::dry_run(app.pool(), far).await.unwrap(),
        retention::DryRun::default(),
        "no I-9, no employee (one I-9 of James is in progress), nothing held"
    );
    let round = retention::purge_round(app.pool(), far, PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(round, retention::Round::default());
    for i9 in [open, employed] {
        assert_eq!(destructions(&app, i9).await, 0);
    }
    // Once it is done, it goes.
    sqlx::query("UPDATE i9s SET status = 'Approved' WHERE id = $1")
        .bind(open)
        .execute(app.pool())
        .await
        .unwrap();
    let round = retention::purge_round(app.pool(), far, PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(round.i9s.len(), 1);
}

#[tokio::test]
async fn a_dry_run_lists_what_would_go_and_changes_nothing() {
    let app = spawn_app().await;
    let james = app.employee_id("EMP-1002").await;
    let i9 = app.insert_i9(james, "Completed").await;
    assert_eq!(
        retention::dry_run(app.pool(), day("2028-01-12"))
            .await
            .unwrap(),
        retention::DryRun::default()
    );
    let listed = retention::dry_run(app.pool(), day(JAMES_DUE))
        .await
        .unwrap();
    assert_eq!(listed.i9s.len(), 1);
    assert_eq!(
        (
            listed.i9s[0].i9_id,
            listed.i9s[0].employee_id,
            listed.i9s[0].retention_date
        ),
        (i9, james, day(JAMES_DUE))
    );
    // James goes with his last I-9: listed too, and still there.
    assert_eq!(listed.employees, vec![james]);
    assert!(listed.kept.is_empty());
    assert_eq!(destructions(&app, i9).await, 0);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9s WHERE id = $1 AND purged_at IS NULL AND last_name <> ''",
            i9
        )
        .await,
        1
    );
    assert_eq!(
        app.count(
            "SELECT count(*) FROM employees WHERE id = $1 AND purged_at IS NULL AND last_name <> ''",
            james
        )
        .await,
        1
    );
    // Listed again: nothing changed.
    assert_eq!(
        retention::dry_run(app.pool(), day(JAMES_DUE))
            .await
            .unwrap(),
        listed
    );
    // What it listed is what a round does.
    let round = retention::purge_round(app.pool(), day(JAMES_DUE), PurgedBy::Admin)
        .await
        .unwrap();
    assert_eq!((round.i9s, round.employees), (listed.i9s, listed.employees));
}

#[tokio::test]
async fn a_dry_run_lists_an_employee_only_when_every_i9_of_theirs_would_be_purged() {
    let app = spawn_app().await;
    let james = app.employee_id("EMP-1002").await;
    let maria = app.employee_id("EMP-1001").await; // employed
    let done = app.insert_i9(james, "Approved").await;
    let open = app.insert_i9(james, "Signed Sec 2").await;
    app.insert_i9(maria, "Approved").await;
    let far = day("2030-01-01");
    let dry = retention::dry_run(app.pool(), far).await.unwrap();
    let i9s: Vec<i64> = dry.i9s.iter().map(|d| d.i9_id).collect();
    assert_eq!(i9s, vec![done]);
    assert!(
        dry.employees.is_empty(),
        "James keeps an I-9 in progress, Maria is employed: {dry:?}"
    );
    sqlx::query("UPDATE i9s SET status = 'Approved' WHERE id = $1")
        .bind(open)
        .execute(app.pool())
        .await
        .unwrap();
    let dry = retention::dry_run(app.pool(), far).await.unwrap();
    assert_eq!(dry.i9s.len(), 2);
    assert_eq!(dry.employees, vec![james]);
    // A hold on James keeps both I-9s and James.
    let token = app.token(ADMIN).await;
    let r = app
        .post_json(
            &format!("/v1/employees/{james}/legal-holds"),
            &token,
            &json!({"reason": "Litigation matter 2026-114"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let dry = retention::dry_run(app.pool(), far).await.unwrap();
    assert!(dry.i9s.is_empty() && dry.employees.is_empty(), "{dry:?}");
    assert_eq!(dry.kept.len(), 2);
}

/// The dry run and the round name each record past its date that a hold
/// keeps, with the hold and what it is on; the round's log line counts them
/// (ids and counts only).
#[tokio::test]
async fn what_a_legal_hold_keeps_is_listed_and_counted() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await; // acme-us, terminated
    let maria = app.employee_id("EMP-1001").await; // acme-us, employed: no date
    let a = app.insert_i9(james, "Approved").await;
    let b = app.insert_i9(james, "Completed").await;
    app.insert_i9(maria, "Approved").await;
    let entity: i64 = app
        .count("SELECT legal_entity_id FROM employees WHERE id = $1", james)
        .await;
    let hold = |path: String| {
        let app = &app;
        let token = &token;
        async move {
            let r = app
                .post_json(&path, token, &json!({"reason": "DOL audit 2027"}))
                .await;
            assert_eq!(r.status(), 201);
            r.json::<Value>().await.unwrap()["id"].as_i64().unwrap()
        }
    };
    let on_james = hold(format!("/v1/employees/{james}/legal-holds")).await;
    let on_entity = hold(format!("/v1/eins/{entity}/legal-holds")).await;
    let far = day("2030-01-01");
    let dry = retention::dry_run(app.pool(), far).await.unwrap();
    assert!(dry.i9s.is_empty() && dry.employees.is_empty(), "{dry:?}");
    let kept: Vec<(i64, i64, i64, retention::HoldOn)> = dry
        .kept
        .iter()
        .map(|k| (k.i9_id, k.employee_id, k.hold_id, k.on))
        .collect();
    let due = day(JAMES_DUE);
    assert!(dry.kept.iter().all(|k| k.retention_date == due));
    assert_eq!(
        kept,
        vec![
            (a, james, on_james, retention::HoldOn::Employee(james)),
            (a, james, on_entity, retention::HoldOn::LegalEntity(entity)),
            (b, james, on_james, retention::HoldOn::Employee(james)),
            (b, james, on_entity, retention::HoldOn::LegalEntity(entity)),
        ],
        "each I-9 with each hold that keeps it; Maria's I-9 has no date"
    );
    assert_eq!(retention::count_i9s(&dry.kept), 2);
    // The day before the date: nothing is past it, nothing is listed.
    let before = retention::dry_run(app.pool(), day("2028-01-12"))
        .await
        .unwrap();
    assert!(before.kept.is_empty(), "{before:?}");
    // The round: nothing purged, two I-9s kept, and the log line says so.
    let round = retention::purge_round(app.pool(), far, PurgedBy::Worker)
        .await
        .unwrap();
    assert!(round.i9s.is_empty() && round.employees.is_empty());
    assert_eq!(round.kept, dry.kept);
    assert_eq!(
        round.summary(),
        "purged 0 I-9s and 0 employees; kept by legal hold: 2"
    );
    // One hold lifted: the other still keeps both.
    let r = delete(&app, &format!("/v1/legal-holds/{on_james}"), &token).await;
    assert_eq!(r.status(), 200);
    let round = retention::purge_round(app.pool(), far, PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(round.kept.len(), 2);
    assert!(round.kept.iter().all(|k| k.hold_id == on_entity));
    assert_eq!(
        round.summary(),
        "purged 0 I-9s and 0 employees; kept by legal hold: 2"
    );
    // Both lifted: purged, nothing kept.
    let r = delete(&app, &format!("/v1/legal-holds/{on_entity}"), &token).await;
    assert_eq!(r.status(), 200);
    let round = retention::purge_round(app.pool(), far, PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(
        round.summary(),
        "purged 2 I-9s and 1 employee; kept by legal hold: 0"
    );
}

#[tokio::test]
async fn two_concurrent_rounds_purge_each_i9_once() {
    let app = spawn_app().await;
    let james = app.employee_id("EMP-1002").await;
    let mut ids = Vec::new();
    for _ in 0..40 {
        ids.push(app.insert_i9(james, "Approved").await);
    }
    let today = day("2030-01-01");
    let (a, b) = tokio::join!(
        retention::purge_round(app.pool(), today, PurgedBy::Worker),
        retention::purge_round(app.pool(), today, PurgedBy::Admin),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut purged: Vec<i64> = a.i9s.iter().chain(&b.i9s).map(|d| d.i9_id).collect();
    purged.sort_unstable();
    assert_eq!(purged, ids, "each exactly once");
    let records: i64 = sqlx::query_scalar("SELECT count(*) FROM i9_destructions")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(records, 40);
    let employees = a.employees.len() + b.employees.len();
    assert_eq!(employees, 1, "the employee purged once");
}

#[tokio::test]
async fn the_workers_daily_round_purges_on_its_today() {
    // Today moved past James's date (as CLOCK_OFFSET_DAYS does in a trial),
    // a round every second.
    let app = spawn_app_with(|c| {
        c.clock_offset_days = (day("2030-01-01") - chrono::Utc::now().date_naive()).num_days();
        c.records_purge_interval = std::time::Duration::from_secs(1);
    })
    .await;
    let james = app.employee_id("EMP-1002").await;
    let i9 = app.insert_i9(james, "Approved").await;
    let job = tokio::spawn(i9_workers::retention::run(
        app.pool().clone(),
        app.config.clone(),
        app.stop_signal(),
    ));
    eventually("the worker purges the I-9", || async {
        destructions(&app, i9).await == 1
    })
    .await;
    let by: String = sqlx::query_scalar("SELECT purged_by FROM i9_destructions WHERE i9_id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(by, "worker");
    // Stamped on the worker's (moved) today, not the real date: never
    // before the retention date.
    let on: NaiveDate = sqlx::query_scalar(
        "SELECT (purged_at AT TIME ZONE 'UTC')::DATE FROM i9_destructions WHERE i9_id = $1",
    )
    .bind(i9)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(on, app.config.today());
    assert!(on >= day(JAMES_DUE));
    job.abort();
}

/// The round stamps its own day: on a moved clock (`CLOCK_OFFSET_DAYS`,
/// `Config::today`) a record never reads as purged before its retention
/// date, in the I-9, the employee, the destruction record and the 410.
#[tokio::test]
async fn a_purge_is_dated_on_the_day_of_its_round() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await;
    let i9 = app.insert_i9(james, "Approved").await;
    let today = day("2030-01-01");
    let round = retention::purge_round(app.pool(), today, PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!((round.i9s.len(), round.employees.len()), (1, 1));
    for (sql, id) in [
        (
            "SELECT (purged_at AT TIME ZONE 'UTC')::DATE FROM i9s WHERE id = $1",
            i9,
        ),
        (
            "SELECT (purged_at AT TIME ZONE 'UTC')::DATE FROM i9_destructions WHERE i9_id = $1",
            i9,
        ),
        (
            "SELECT (purged_at AT TIME ZONE 'UTC')::DATE FROM employees WHERE id = $1",
            james,
        ),
    ] {
        let on: NaiveDate = sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(app.pool())
            .await
            .unwrap();
        assert_eq!(on, today, "{sql}");
    }
    // One stamp for the round: the I-9 and its destruction record agree.
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9s i JOIN i9_destructions d ON d.i9_id = i.id
             WHERE i.id = $1 AND i.purged_at = d.purged_at",
            i9
        )
        .await,
        1
    );
    for path in [format!("/v1/i9s/{i9}"), format!("/v1/employees/{james}")] {
        let r = app.get(&path, &token).await;
        assert_eq!(r.status(), 410);
        let body: Value = r.json().await.unwrap();
        let detail = body["detail"].as_str().unwrap();
        assert!(
            detail.contains("purged on 2030-01-01") && detail.contains(JAMES_DUE),
            "{detail}"
        );
    }
}

/// Supplement A's preparers and Supplement B's entries are personal data of
/// their I-9 (`I9_PERSONAL_TABLES`): deleted by its purge, those of another
/// I-9 left alone.
#[tokio::test]
async fn a_purge_deletes_the_i9s_preparers_and_supplement_b_entries() {
    let app = spawn_app().await;
    let james = app.employee_id("EMP-1002").await;
    let maria = app.employee_id("EMP-1001").await; // employed: kept
    let purged = app.insert_i9(james, "Approved").await;
    let kept = app.insert_i9(maria, "Approved").await;
    for i9 in [purged, kept] {
        for position in [1_i16, 2] {
            sqlx::query(
                "INSERT INTO i9_preparers (i9_id, position, last_name, first_name, address, city,
                                           state, zip, signature, signed_date)
                 VALUES ($1, $2, 'Tran', 'Linh', '1 Main St', 'Seattle', 'WA', '98101',
                         'Linh Tran', DATE '2025-01-10')",
            )
            .bind(i9)
            .bind(position)
            .execute(app.pool())
            .await
            .unwrap();
        }
        sqlx::query(
            "INSERT INTO i9_supplement_b (i9_id, kind, rehire_date, new_last_name,
                                          employer_name, employer_signature, signed_on)
             VALUES ($1, 'rehire', DATE '2025-06-01', 'Chen-Li', 'Ada Park', 'Ada Park',
                     DATE '2025-06-01')",
        )
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO i9_supplement_b (i9_id, kind, document_list, document_title,
                                          document_issuer, document_number, employer_name,
                                          employer_signature, signed_on)
             VALUES ($1, 'reverification', 'A', 'Employment Authorization Document',
                     'USCIS', $2, 'Ada Park', 'Ada Park', DATE '2025-07-01')",
        )
        .bind(i9)
        .bind("EAD0000001")
        .execute(app.pool())
        .await
        .unwrap();
    }
    let rows = |table: &'static str| {
        let pool = app.pool().clone();
        async move {
            // A constant table name; the ids bound.
            let per_i9: Vec<i64> = sqlx::query_scalar(&format!(
                "SELECT count(t.i9_id) FROM unnest($1::BIGINT[]) WITH ORDINALITY AS x(id, n)
                 LEFT JOIN {table} t ON t.i9_id = x.id GROUP BY x.n ORDER BY x.n"
            ))
            .bind(vec![purged, kept])
            .fetch_all(&pool)
            .await
            .unwrap();
            per_i9
        }
    };
    assert_eq!(rows("i9_preparers").await, [2, 2]);
    assert_eq!(rows("i9_supplement_b").await, [2, 2]);
    let round = retention::purge_round(app.pool(), day("2030-01-01"), PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(round.i9s.len(), 1);
    assert_eq!(round.i9s[0].i9_id, purged);
    assert_eq!(rows("i9_preparers").await, [0, 2]);
    assert_eq!(rows("i9_supplement_b").await, [0, 2]);
    // And I9_PERSONAL_TABLES names exactly those, with the Section 1 links.
    assert_eq!(
        retention::I9_PERSONAL_TABLES,
        [
            "i9_requests",
            "i9_preparers",
            "i9_reverification_requests",
            "i9_supplement_b",
            "everify_cases"
        ]
    );
}

/// A replay (same `Idempotency-Key`) of a create whose employee was purged
/// since answers 410 as the employee does, and writes nothing.
#[tokio::test]
async fn a_replayed_create_of_a_purged_employee_is_gone() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let body = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3,
                      "startDate": "2026-11-05", "createI9": "yes",
                      "emailAddress": "ana.diaz@mail.example"});
    let send = || {
        app.http
            .post(app.url("/v1/employees"))
            .bearer_auth(&token)
            .header("idempotency-key", "hire-ana")
            .json(&body)
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 201);
    let ana = first.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    purge_after_section1(&app, &token, ana).await;
    let footprint = counts(&app).await;
    let again = send().await.unwrap();
    assert_gone(again).await;
    assert_eq!(counts(&app).await, footprint, "nothing written");
}

/// The same for the partner operation's replay.
#[tokio::test]
async fn a_replayed_partner_call_of_a_purged_employee_is_gone() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let partner = crate::partners::partner_token(&app).await;
    let send = || {
        app.http
            .post(app.url("/v1/partners/i9s/section1"))
            .bearer_auth(&partner)
            .header("idempotency-key", "ats-req-9")
            .json(&crate::partners::candidate("cand-9"))
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 201);
    let ana = first.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    purge_after_section1(&app, &admin, ana).await;
    let footprint = counts(&app).await;
    let again = send().await.unwrap();
    assert_gone(again).await;
    assert_eq!(counts(&app).await, footprint, "nothing written");
}

/// Employees, I-9s, I-9 requests and idempotency records.
async fn counts(app: &TestApp) -> (i64, i64, i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM employees), (SELECT count(*) FROM i9s),
                (SELECT count(*) FROM i9_requests), (SELECT count(*) FROM idempotency_keys)",
    )
    .fetch_one(app.pool())
    .await
    .unwrap()
}

/// The I-9 that `employee`'s Section 1 link started (the worker's part, done
/// here), approved, the employee terminated, and both purged.
async fn purge_after_section1(app: &TestApp, token: &str, employee: i64) {
    let i9 = app.insert_i9(employee, "Approved").await;
    sqlx::query("UPDATE i9_requests SET i9_id = $2 WHERE employee_id = $1")
        .bind(employee)
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    patch(
        app,
        token,
        employee,
        json!({"terminatedDate": "2026-12-31"}),
    )
    .await;
    let round = retention::purge_round(app.pool(), day("2030-01-01"), PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(round.employees, vec![employee]);
}

async fn assert_gone(r: reqwest::Response) {
    assert_eq!(r.status(), 410);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["type"], "/problems/purged");
    assert!(
        body["detail"].as_str().unwrap().contains("purged on"),
        "{body}"
    );
}

/// `GET /v1/legal-holds/{id}` (the hold's `self` link), with the employees
/// the hold covers counted when answered.
#[tokio::test]
async fn a_hold_is_read_at_its_self_link_with_the_employees_it_covers() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await; // acme-us
    let i9 = app.insert_i9(james, "Approved").await;
    let entity: i64 = app
        .count("SELECT legal_entity_id FROM employees WHERE id = $1", james)
        .await;
    let r = app
        .post_json(
            &format!("/v1/eins/{entity}/legal-holds"),
            &token,
            &json!({"reason": "DOL audit 2027"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let hold: Value = r.json().await.unwrap();
    // Maria and James: the fixture's employees of acme-us.
    assert_eq!(hold["employeesCovered"], 2);
    let this = i9_tests::link(&hold, "self").unwrap();
    assert_eq!(this, location);
    let read = app.get_json(&this, &token).await;
    assert_eq!(read, hold, "the self link answers the hold");
    // An employee of no legal entity is not one of them; one of acme-us is.
    app.insert_employee("Noel", "Entityless", "Seattle Office", None)
        .await;
    let joined = app
        .insert_employee("Jo", "Joined", "Seattle Office", None)
        .await;
    sqlx::query("UPDATE employees SET legal_entity_id = $2 WHERE id = $1")
        .bind(joined)
        .bind(entity)
        .execute(app.pool())
        .await
        .unwrap();
    assert_eq!(app.get_json(&this, &token).await["employeesCovered"], 3);
    // On an employee: that one.
    let r = app
        .post_json(
            &format!("/v1/employees/{james}/legal-holds"),
            &token,
            &json!({"reason": "Litigation matter 2026-114"}),
        )
        .await;
    let on_james: Value = r.json().await.unwrap();
    assert_eq!(on_james["employeesCovered"], 1);
    let listed = app.get_json("/v1/legal-holds", &token).await;
    let covered: Vec<&Value> = listed["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["employeesCovered"])
        .collect();
    assert_eq!(covered, [&json!(1), &json!(3)], "newest first");
    // Lifted: still read at its link; James purged, the counts follow.
    for h in [&hold, &on_james] {
        let r = delete(&app, &format!("/v1/legal-holds/{}", h["id"]), &token).await;
        assert_eq!(r.status(), 200);
    }
    let round = retention::purge_round(app.pool(), day("2030-01-01"), PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(round.i9s[0].i9_id, i9);
    let read = app.get_json(&this, &token).await;
    assert_eq!(
        (read["active"].clone(), read["employeesCovered"].clone()),
        (json!(false), json!(2))
    );
    let read = app
        .get_json(&format!("/v1/legal-holds/{}", on_james["id"]), &token)
        .await;
    assert_eq!(read["employeesCovered"], 0);
    // As the list: permission 5; no such hold, 404.
    let viewer = app.token(BOSTON_VIEWER).await;
    assert_eq!(app.get(&this, &viewer).await.status(), 403);
    assert_eq!(
        app.get("/v1/legal-holds/999999", &token).await.status(),
        404
    );
    assert_eq!(app.get("/v1/legal-holds/x", &token).await.status(), 404);
}

/// A hold on a legal entity keeps the I-9s of the employees whose legal
/// entity it is (an I-9 has no legal entity of its own: it is its
/// employee's); an employee of no legal entity is not covered.
#[tokio::test]
async fn a_legal_entity_hold_covers_exactly_the_employees_of_that_entity() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await; // acme-us
    let entity: i64 = app
        .count("SELECT legal_entity_id FROM employees WHERE id = $1", james)
        .await;
    let none = app
        .insert_employee("Noel", "Entityless", "Seattle Office", None)
        .await;
    let moved = app
        .insert_employee("Jo", "Joined", "Seattle Office", None)
        .await;
    sqlx::query("UPDATE employees SET legal_entity_id = $2 WHERE id = $1")
        .bind(moved)
        .bind(entity)
        .execute(app.pool())
        .await
        .unwrap();
    let mut i9s = Vec::new();
    for e in [james, none, moved] {
        i9s.push(app.insert_i9(e, "Approved").await);
        if e != james {
            patch(&app, &token, e, json!({"terminatedDate": "2026-11-30"})).await;
        }
    }
    let r = app
        .post_json(
            &format!("/v1/eins/{entity}/legal-holds"),
            &token,
            &json!({"reason": "DOL audit 2027"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let round = retention::purge_round(app.pool(), day("2030-01-01"), PurgedBy::Worker)
        .await
        .unwrap();
    let purged: Vec<i64> = round.i9s.iter().map(|d| d.i9_id).collect();
    assert_eq!(purged, vec![i9s[1]], "only the I-9 of no legal entity");
    let kept: Vec<i64> = round.kept.iter().map(|k| k.i9_id).collect();
    assert_eq!(kept, vec![i9s[0], i9s[2]]);
}

/// Legal holds, and the employees and I-9s active or lifted.
async fn holds_state(app: &TestApp) -> (i64, i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM legal_holds),
                (SELECT count(*) FROM legal_holds WHERE lifted_at IS NULL),
                (SELECT count(*) FROM audit_log WHERE action LIKE 'legal\\_hold.%')",
    )
    .fetch_one(app.pool())
    .await
    .unwrap()
}

/// A hold on a legal entity covers every employee of it, in every group and
/// those who join it later: a user limited to some groups (west.hr, West
/// Region) may neither set nor lift one (403, saying why), reads it with
/// the employees it sees counted, and keeps setting and lifting holds on the
/// employees it sees (docs/retention.md, "Who may hold a legal entity").
#[tokio::test]
async fn a_user_limited_to_some_groups_may_not_set_or_lift_a_legal_entity_hold() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let west = app.token(i9_tests::WEST_HR).await;
    let aisha = app.employee_id("EMP-1003").await; // acme-labs, Boston: not West's
    let james = app.employee_id("EMP-1002").await; // acme-us, Seattle: West's
    let labs: i64 = app
        .count("SELECT legal_entity_id FROM employees WHERE id = $1", aisha)
        .await;
    let us: i64 = app
        .count("SELECT legal_entity_id FROM employees WHERE id = $1", james)
        .await;
    assert_eq!(
        app.get(&format!("/v1/employees/{aisha}"), &west)
            .await
            .status(),
        404,
        "west.hr does not see Aisha"
    );
    let r = app
        .post_json(
            &format!("/v1/eins/{labs}/legal-holds"),
            &admin,
            &json!({"reason": "DOL audit 2027"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let hold: Value = r.json().await.unwrap();
    assert_eq!(hold["employeesCovered"], 1);
    let path = format!("/v1/legal-holds/{}", hold["id"]);
    let before = holds_state(&app).await;
    assert_eq!(before, (1, 1, 1));

    // Lifting it: 403, why, and nothing written.
    let r = delete(&app, &path, &west).await;
    assert_eq!(r.status(), 403);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let body: Value = r.json().await.unwrap();
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("every employee") && detail.contains("permission 11"),
        "{body}"
    );
    assert_eq!(holds_state(&app).await, before, "still active, not audited");
    // Setting one: 403 too, even on acme-us, whose employees it sees today
    // (one may join it in another group tomorrow); 404 for no such entity.
    for entity in [labs, us] {
        let r = app
            .post_json(
                &format!("/v1/eins/{entity}/legal-holds"),
                &west,
                &json!({"reason": "DOL audit 2027"}),
            )
            .await;
        assert_eq!(r.status(), 403, "{entity}");
    }
    let r = app
        .post_json(
            "/v1/eins/999999/legal-holds",
            &west,
            &json!({"reason": "DOL audit 2027"}),
        )
        .await;
    assert_eq!(r.status(), 404);
    assert_eq!(holds_state(&app).await, before, "nothing set");

    // Read-only: listed and read, counting only the employees it sees.
    let read = app.get_json(&path, &west).await;
    assert_eq!(
        (read["active"].clone(), read["employeesCovered"].clone()),
        (json!(true), json!(0))
    );
    let listed = app.get_json("/v1/legal-holds", &west).await;
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["searchResult"][0]["employeesCovered"], 0);

    // Holds on the employees it sees stay its own to set and lift; on one it
    // does not see, 404.
    let r = app
        .post_json(
            &format!("/v1/employees/{james}/legal-holds"),
            &west,
            &json!({"reason": "Litigation matter 2026-114"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let on_james: Value = r.json().await.unwrap();
    let r = delete(&app, &format!("/v1/legal-holds/{}", on_james["id"]), &west).await;
    assert_eq!(r.status(), 200);
    let r = app
        .post_json(
            &format!("/v1/employees/{aisha}/legal-holds"),
            &west,
            &json!({"reason": "Litigation matter 2026-114"}),
        )
        .await;
    assert_eq!(r.status(), 404);

    // The unrestricted administrator lifts it.
    let r = delete(&app, &path, &admin).await;
    assert_eq!(r.status(), 200);
    assert_eq!(holds_state(&app).await, (2, 0, 4));
}

/// A hold on a purged employee answers 410 as the employee does, and
/// writes nothing.
#[tokio::test]
async fn a_hold_on_a_purged_employee_is_gone() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await;
    app.insert_i9(james, "Approved").await;
    let round = retention::purge_round(app.pool(), day("2030-01-01"), PurgedBy::Worker)
        .await
        .unwrap();
    assert_eq!(round.employees, vec![james]);
    let r = app
        .post_json(
            &format!("/v1/employees/{james}/legal-holds"),
            &token,
            &json!({"reason": "Litigation matter 2026-114"}),
        )
        .await;
    assert_eq!(r.status(), 410);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["type"], "/problems/purged");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("purged on 2030-01-01") && detail.contains(RULE),
        "{body}"
    );
    assert!(!detail.contains("Chen"), "no personal data: {body}");
    assert_eq!(holds_state(&app).await, (0, 0, 0), "nothing written");
}

/// The history of an employee names the hold of each `legal_hold.set` and
/// `legal_hold.lift` entry (its id, what it is on); other entries none.
#[tokio::test]
async fn the_history_names_the_hold_set_and_lifted() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await;
    let r = app
        .post_json(
            &format!("/v1/employees/{james}/legal-holds"),
            &token,
            &json!({"reason": "Litigation matter 2026-114"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let hold: Value = r.json().await.unwrap();
    let r = delete(&app, &format!("/v1/legal-holds/{}", hold["id"]), &token).await;
    assert_eq!(r.status(), 200);
    app.get_json(&format!("/v1/employees/{james}"), &token)
        .await; // an ssn.read, naming no hold
    let history = app
        .get_json(&format!("/v1/employees/{james}/history"), &token)
        .await;
    let entries = history["searchResult"].as_array().unwrap();
    let named: Vec<(&str, &Value)> = entries
        .iter()
        .filter(|e| !e["legalHold"].is_null())
        .map(|e| (e["action"].as_str().unwrap(), &e["legalHold"]))
        .collect();
    let expected = json!({"id": hold["id"], "on": "employee"});
    assert_eq!(
        named,
        vec![
            ("legal_hold.lift", &expected),
            ("legal_hold.set", &expected)
        ],
        "newest first"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["action"] == "ssn.read" && e["legalHold"].is_null()),
        "{history}"
    );
    let reason = "Litigation matter";
    assert!(!history.to_string().contains(reason), "never the reason");
}

/// A re-hire of a purged employee answers 410 saying to hire the person as a
/// new employee.
#[tokio::test]
async fn a_rehire_of_a_purged_employee_says_to_hire_a_new_employee() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await;
    app.insert_i9(james, "Approved").await;
    retention::purge_round(app.pool(), day("2030-01-01"), PurgedBy::Worker)
        .await
        .unwrap();
    let periods = app
        .count(
            "SELECT count(*) FROM employment_periods WHERE employee_id = $1",
            james,
        )
        .await;
    let r = app
        .patch_json(
            &format!("/v1/employees/{james}"),
            &token,
            &json!({"firstName": "James", "lastName": "Chen", "locationId": 1,
                    "rehire": "yes", "startDate": "2030-02-01"}),
        )
        .await;
    assert_eq!(r.status(), 410);
    let body: Value = r.json().await.unwrap();
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("destroyed") && detail.contains("new employee (POST /v1/employees)"),
        "{body}"
    );
    assert_eq!(
        app.count(
            "SELECT count(*) FROM employment_periods WHERE employee_id = $1",
            james
        )
        .await,
        periods,
        "no new period"
    );
}

/// The round's line counts in words that agree with the numbers.
#[test]
fn the_rounds_line_pluralizes() {
    let due = |id| retention::Due {
        i9_id: id,
        employee_id: 1,
        legal_entity_id: None,
        retention_date: day("2028-01-13"),
    };
    let round = retention::Round {
        i9s: vec![due(1)],
        employees: vec![1],
        kept: vec![],
    };
    assert_eq!(
        round.summary(),
        "purged 1 I-9 and 1 employee; kept by legal hold: 0"
    );
    let round = retention::Round {
        i9s: vec![due(1), due(2)],
        employees: vec![],
        kept: vec![],
    };
    assert_eq!(
        round.summary(),
        "purged 2 I-9s and 0 employees; kept by legal hold: 0"
    );
}

/// The worker logs one line every round, also one that purges and keeps
/// nothing: its day and the counts.
#[tokio::test]
async fn the_worker_logs_every_round() {
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::util::SubscriberInitExt;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let app = spawn_app_with(|c| {
        c.clock_offset_days = (day("2030-01-01") - chrono::Utc::now().date_naive()).num_days();
        c.records_purge_interval = std::time::Duration::from_secs(1);
    })
    .await;
    let captured = Captured::default();
    let writer = captured.clone();
    // This test's runtime has one thread: the worker's task logs here.
    let _guard = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_env_filter("i9_workers=info")
        .with_writer(move || writer.clone())
        .finish()
        .set_default();
    let lines = || {
        String::from_utf8(captured.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .filter(|l| l.contains("purge round of"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let job = tokio::spawn(i9_workers::retention::run(
        app.pool().clone(),
        app.config.clone(),
        app.stop_signal(),
    ));
    eventually("two rounds logged", || async { lines().len() >= 2 }).await;
    job.abort();
    let today = app.config.today();
    let quiet =
        format!("purge round of {today}: purged 0 I-9s and 0 employees; kept by legal hold: 0");
    let lines = lines();
    assert!(lines.iter().all(|l| l.contains(" INFO ")), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains(&quiet)),
        "a round with nothing to do logs too: {lines:?}"
    );
}

/// A replay of a create whose employee was re-hired and whose first I-9 was
/// purged since (the employee not): the first answer again, without the
/// Section 1 link that went with the I-9; never a 500.
#[tokio::test]
async fn a_replayed_create_whose_i9_alone_was_purged_answers_without_the_link() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let body = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3,
                      "startDate": "2026-11-05", "createI9": "yes",
                      "emailAddress": "ana.diaz@mail.example"});
    let send = || {
        app.http
            .post(app.url("/v1/employees"))
            .bearer_auth(&token)
            .header("idempotency-key", "hire-ana")
            .json(&body)
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 201);
    let first: Value = first.json().await.unwrap();
    assert!(first["i9FormSection1Link"].is_string(), "{first}");
    let ana = first["id"].as_i64().unwrap();
    purge_i9_after_rehire(&app, &token, ana).await;
    let footprint = counts(&app).await;
    let again = send().await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["id"], ana);
    assert!(again["i9FormSection1Link"].is_null(), "{again}");
    assert_eq!(counts(&app).await, footprint, "nothing written");
}

/// The same for the partner operation's replay.
#[tokio::test]
async fn a_replayed_partner_call_whose_i9_alone_was_purged_answers_without_the_link() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let partner = crate::partners::partner_token(&app).await;
    let send = || {
        app.http
            .post(app.url("/v1/partners/i9s/section1"))
            .bearer_auth(&partner)
            .header("idempotency-key", "ats-req-9")
            .json(&crate::partners::candidate("cand-9"))
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 201);
    let first: Value = first.json().await.unwrap();
    assert!(first["i9Section1Link"].is_string(), "{first}");
    let ana = first["id"].as_i64().unwrap();
    purge_i9_after_rehire(&app, &admin, ana).await;
    let footprint = counts(&app).await;
    let again = send().await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["id"], ana);
    assert!(again["i9Section1Link"].is_null(), "{again}");
    assert_eq!(counts(&app).await, footprint, "nothing written");
}

/// The I-9 that `employee`'s Section 1 link started, approved; the employee
/// terminated and re-hired; the round purges that I-9 and not the employee.
async fn purge_i9_after_rehire(app: &TestApp, token: &str, employee: i64) {
    let i9 = app.insert_i9(employee, "Approved").await;
    sqlx::query("UPDATE i9_requests SET i9_id = $2 WHERE employee_id = $1")
        .bind(employee)
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    // The I-9 of the first period (as the worker records it): it keeps that
    // period's retention date through the re-hire.
    sqlx::query(
        "UPDATE i9s SET employment_period_id =
             (SELECT min(id) FROM employment_periods WHERE employee_id = $1)
         WHERE id = $2",
    )
    .bind(employee)
    .bind(i9)
    .execute(app.pool())
    .await
    .unwrap();
    patch(
        app,
        token,
        employee,
        json!({"terminatedDate": "2026-12-31"}),
    )
    .await;
    patch(
        app,
        token,
        employee,
        json!({"rehire": "yes", "startDate": "2027-02-01"}),
    )
    .await;
    let round = retention::purge_round(app.pool(), day("2030-01-01"), PurgedBy::Worker)
        .await
        .unwrap();
    let purged: Vec<i64> = round.i9s.iter().map(|d| d.i9_id).collect();
    assert_eq!(purged, vec![i9]);
    assert!(round.employees.is_empty(), "the employee works here again");
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
            employee
        )
        .await,
        0,
        "the link went with the I-9"
    );
}
