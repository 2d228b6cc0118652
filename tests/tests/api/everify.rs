//! E-Verify cases (docs/everify.md) against the built-in simulator: one
//! test per scenario of the simulator's table, each driving one partner's
//! employee end to end through the API, the worker (`submit_everify_case`)
//! and the poll round (`workers/src/everify.rs`), counting the partner
//! events the suite's receiver gets (exactly those, in order) and checking
//! the 409 of a step that does not fit, and the employee blocked from a new
//! I-9 while the case is unresolved (Pending before the worker starts, and
//! every status that waits for the employer); the late-reason and opening
//! rules; visibility and the partner's read-only reach.

use i9_tests::{
    eventually, spawn, test_worker_config, Receiver, Stack, TestApp, ADMIN, ATS_BOT, BOSTON_VIEWER,
};
use serde_json::{json, Value};

use crate::callbacks::verified;

const ATS: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");

struct Case {
    app: TestApp,
    receiver: Receiver,
    token: String,
    employee: i64,
    i9: i64,
    _worker: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// The whole stack with the simulator's steps at a second, its outage at two
/// failed calls, and a poll round running; a worker too when `worker`.
async fn stack(worker: bool) -> (TestApp, Receiver) {
    let app = spawn(
        Stack {
            jobs: true,
            no_worker: !worker,
            ..Stack::default()
        },
        |c| {
            c.allow_private_callbacks = true;
            c.everify_sim.step = std::time::Duration::from_secs(1);
            c.everify_sim.unavailable_retries = 2;
            c.everify_poll = std::time::Duration::from_millis(200);
        },
    )
    .await;
    let receiver = app.partner_endpoint().await;
    let ctx = i9_workers::Context::new((*app.config).clone(), app.pool().clone())
        .expect("worker context");
    tokio::spawn(i9_workers::everify::run(ctx, app.stop_signal()));
    (app, receiver)
}

/// A partner's employee of `acme-us` (E-Verify, Active) named `last_name`,
/// starting today, with an I-9 in `status`.
async fn employee(app: &TestApp, last_name: &str, status: &str) -> (i64, i64) {
    let employee = app
        .insert_employee("Ana", last_name, "Portland Warehouse", None)
        .await;
    let today = app.config.today();
    sqlx::query(
        "UPDATE employees SET legal_entity_id = (SELECT id FROM legal_entities WHERE seed_key = 'acme-us'),
                integration_client_id = (SELECT id FROM oauth_clients WHERE client_id = 'greenhouse-ats'),
                integration_candidate_id = 'cand-' || id
         WHERE id = $1",
    )
    .bind(employee)
    .execute(app.pool())
    .await
    .unwrap();
    sqlx::query("UPDATE employment_periods SET start_date = $2 WHERE employee_id = $1")
        .bind(employee)
        .bind(today)
        .execute(app.pool())
        .await
        .unwrap();
    let i9 = app.insert_i9(employee, status).await;
    (employee, i9)
}

/// A case opened for a `Completed` I-9 of an employee named `last_name`:
/// while it is `Pending` and no worker runs yet, the employee is blocked
/// from a new I-9 ([`Case::blocked`]); then the worker starts.
async fn open_case(last_name: &str) -> (Case, i64) {
    let (app, receiver) = stack(false).await;
    let token = app.token(ADMIN).await;
    // Completed, not Signed Sec 2: no open I-9 blocks a new one, only the case.
    let (employee, i9) = employee(&app, last_name, "Completed").await;
    let r = app
        .post_json(&format!("/v1/i9s/{i9}/everify"), &token, &json!({}))
        .await;
    assert_eq!(r.status(), 202);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], "Pending", "{body}");
    assert_eq!(body["program"], "simulator");
    assert_eq!(body["late"], false);
    let id = body["id"].as_i64().unwrap();
    assert_eq!(location, format!("/v1/everify-cases/{id}"));
    blocked(&app, &token, employee, id).await;
    let worker = app.start_worker_with(test_worker_config(&app.topology), app.stop_signal());
    (
        Case {
            app,
            receiver,
            token,
            employee,
            i9,
            _worker: worker,
        },
        id,
    )
}

/// While case `id` is unresolved, `employee` cannot get a new I-9
/// (docs/everify.md, "Unresolved verification records"): the record shows the
/// case; `createI9` `yes` is a 409 naming it and writes nothing; `if allowed`
/// answers 200 and requests no I-9.
async fn blocked(app: &TestApp, token: &str, employee: i64, id: i64) {
    let path = format!("/v1/employees/{employee}");
    let rec = app.get_json(&path, token).await;
    assert_eq!(rec["unresolvedVerification"], true, "{rec}");
    assert_eq!(rec["everifyCase"]["id"], id, "{rec}");
    let portland = app.group_id("Portland Warehouse").await;
    let requests = || {
        app.count(
            "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
            employee,
        )
    };
    let before = (requests().await, app.i9_count(employee).await);
    let body = |choice: &str| json!({"firstName": "Ana", "lastName": rec["lastName"], "locationId": portland, "createI9": choice});
    let r = app.patch_json(&path, token, &body("yes")).await;
    assert_eq!(r.status(), 409);
    let problem: Value = r.json().await.unwrap();
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("unresolved verification record")
            && detail.contains(&format!("/v1/everify-cases/{id}")),
        "{problem}"
    );
    let r = app.patch_json(&path, token, &body("if allowed")).await;
    assert_eq!(r.status(), 200);
    let after = (requests().await, app.i9_count(employee).await);
    assert_eq!(after, before, "no I-9 requested or created");
}

impl Case {
    /// [`blocked`], in a status that waits for the employer (so the program
    /// cannot close the case between the read and the write).
    async fn blocked(&self, id: i64) {
        blocked(&self.app, &self.token, self.employee, id).await;
    }

    /// Closed, the case blocks no more: `createI9` `yes` requests exactly one I-9.
    async fn unblocked(&self) {
        let path = format!("/v1/employees/{}", self.employee);
        let rec = self.app.get_json(&path, &self.token).await;
        assert_eq!(rec["unresolvedVerification"], false, "{rec}");
        let portland = self.app.group_id("Portland Warehouse").await;
        let body = json!({"firstName": "Ana", "lastName": rec["lastName"], "locationId": portland, "createI9": "yes"});
        let r = self.app.patch_json(&path, &self.token, &body).await;
        assert_eq!(r.status(), 200);
        let requests = self
            .app
            .count(
                "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
                self.employee,
            )
            .await;
        assert_eq!(requests, 1);
    }

    async fn get(&self, id: i64) -> Value {
        self.app
            .get_json(&format!("/v1/everify-cases/{id}"), &self.token)
            .await
    }

    async fn wait_for(&self, id: i64, status: &str) -> Value {
        eventually(&format!("case {id} is {status}"), || async {
            self.get(id).await["status"] == status
        })
        .await;
        self.get(id).await
    }

    async fn step(&self, id: i64, step: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .app
            .http
            .post(self.app.url(&format!("/v1/everify-cases/{id}/{step}")))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// The step is refused: 409.
    async fn refused(&self, id: i64, step: &str) {
        let body = (step == "close").then(|| json!({"closureReason": "EMPLOYEE_QUIT"}));
        let (status, problem) = self.step(id, step, body).await;
        assert_eq!(status, 409, "{step}: {problem}");
    }

    async fn ok(&self, id: i64, step: &str, body: Option<Value>) -> Value {
        let (status, rec) = self.step(id, step, body).await;
        assert_eq!(status, 202, "{step}: {rec}");
        rec
    }

    /// Exactly `expected` E-Verify events (type and case status, in order)
    /// reach the partner, signed, in the employee's sequence, and no other
    /// was recorded.
    async fn events(&self, expected: &[(&str, &str)]) -> Vec<Value> {
        let n = expected.len();
        eventually(&format!("{n} E-Verify events delivered"), || async {
            verified(&self.receiver).len() >= n
        })
        .await;
        let events = verified(&self.receiver);
        let got: Vec<(String, String)> = events
            .iter()
            .map(|e| {
                (
                    e["type"].as_str().unwrap().to_owned(),
                    e["caseStatus"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = expected
            .iter()
            .map(|(t, s)| (format!("everify.{t}"), (*s).to_owned()))
            .collect();
        assert_eq!(got, want);
        let sequences: Vec<i64> = events
            .iter()
            .map(|e| e["sequence"].as_i64().unwrap())
            .collect();
        assert_eq!(sequences, (1..=n as i64).collect::<Vec<_>>());
        let recorded: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM partner_events WHERE employee_id = $1 AND event_type LIKE 'everify.%'",
        )
        .bind(self.employee)
        .fetch_one(self.app.pool())
        .await
        .unwrap();
        assert_eq!(recorded, n as i64, "no other event was recorded");
        let validators = crate::callbacks::webhook_validators(&self.app).await;
        for e in &events {
            let t = e["type"].as_str().unwrap();
            assert!(validators[t].is_valid(e), "{t} matches its webhook: {e}");
            assert_eq!(e["employeeId"], self.employee);
            assert_eq!(e["i9Id"], self.i9);
            assert_eq!(e["program"], "simulator");
            let text = e.to_string();
            assert!(!text.contains("Ana"), "no names in an event: {text}");
        }
        events
    }
}

fn number(id: i64) -> String {
    format!("SIM{id:012}")
}

#[tokio::test]
async fn any_other_name_is_employment_authorized_and_closed() {
    let (c, id) = open_case("Diaz").await;
    let rec = c.wait_for(id, "Closed").await;
    assert_eq!(rec["result"], "Employment Authorized");
    assert_eq!(rec["closureReason"], "EMPLOYEE_CONTINUES_TO_WORK_AFTER_EA");
    assert_eq!(rec["caseNumber"], number(id));
    assert_eq!(rec["nextStep"], Value::Null);
    let events = c
        .events(&[("case_opened", "Pending"), ("status_changed", "Closed")])
        .await;
    assert_eq!(events[0]["previousCaseStatus"], Value::Null);
    assert_eq!(events[1]["previousCaseStatus"], "Pending");
    assert_eq!(events[1]["result"], "Employment Authorized");
    assert_eq!(events[1]["caseNumber"], number(id));
    for step in [
        "refer",
        "notify",
        "no-action",
        "confirm-details",
        "resubmit",
        "close",
    ] {
        c.refused(id, step).await;
    }
    // Verified: no second case.
    let r = c
        .app
        .post_json(&format!("/v1/i9s/{}/everify", c.i9), &c.token, &json!({}))
        .await;
    assert_eq!(r.status(), 409);
    // The records show the latest case.
    let i9 = c.app.get_json(&format!("/v1/i9s/{}", c.i9), &c.token).await;
    assert_eq!(i9["everifyCase"]["id"], id);
    assert_eq!(i9["everifyCase"]["status"], "Closed");
    assert_eq!(i9["everifyCase"]["result"], "Employment Authorized");
    let emp = c
        .app
        .get_json(&format!("/v1/employees/{}", c.employee), &c.token)
        .await;
    assert_eq!(emp["everifyCase"]["caseNumber"], number(id));
    assert_eq!(emp["everifyCase"]["result"], "Employment Authorized");
    assert_eq!(emp["unresolvedVerification"], false);
    let of_i9 = c
        .app
        .get_json(&format!("/v1/i9s/{}/everify", c.i9), &c.token)
        .await;
    assert_eq!(of_i9.as_array().unwrap().len(), 1);
    c.unblocked().await;
}

#[tokio::test]
async fn ev_moretime_then_employment_authorized() {
    let (c, id) = open_case("EV-MORETIME").await;
    let rec = c.wait_for(id, "E-Verify Needs More Time").await;
    assert_eq!(rec["nextStep"], "DHS answers");
    let (status, problem) = c
        .step(
            id,
            "close",
            Some(json!({"closureReason": "INCORRECT_DATA"})),
        )
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "closureReason");
    c.refused(id, "refer").await;
    c.wait_for(id, "Closed").await;
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "E-Verify Needs More Time"),
        ("status_changed", "Closed"),
    ])
    .await;
}

#[tokio::test]
async fn ev_moretime_tnc_then_a_dhs_mismatch_referred_and_authorized() {
    let (c, id) = open_case("EV-MORETIME-TNC").await;
    c.wait_for(id, "E-Verify Needs More Time").await;
    let rec = c.wait_for(id, "Tentative Nonconfirmation").await;
    assert_eq!(rec["agency"], "DHS");
    c.blocked(id).await;
    c.ok(id, "notify", None).await;
    c.ok(id, "refer", None).await;
    c.wait_for(id, "Closed").await;
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "E-Verify Needs More Time"),
        ("status_changed", "Tentative Nonconfirmation"),
        ("status_changed", "Referred"),
        ("status_changed", "Closed"),
    ])
    .await;
}

/// A mismatch of `agency`, notified and referred; then `then` (the statuses
/// the program takes), each reached before the next.
async fn referred(name: &str, agency: &str) -> (Case, i64) {
    let (c, id) = open_case(name).await;
    let rec = c.wait_for(id, "Tentative Nonconfirmation").await;
    assert_eq!(rec["agency"], agency);
    c.blocked(id).await;
    assert_eq!(
        rec["nextStep"],
        "Notify the employee and give the Further Action Notice"
    );
    assert!(rec["nextStepDueDate"].is_string());
    c.refused(id, "refer").await; // the notice first
    c.refused(id, "no-action").await; // the notice first too
    c.refused(id, "confirm-details").await;
    c.ok(id, "notify", None).await;
    c.refused(id, "notify").await; // once
    let rec = c.ok(id, "refer", None).await;
    assert_eq!(rec["status"], "Referred");
    assert_eq!(rec["nextStep"], format!("The employee contacts {agency}"));
    c.refused(id, "no-action").await;
    (c, id)
}

/// Every step of a case is dated on E-Verify's day, the U.S. Eastern date,
/// and its window counted from it (docs/everify.md, "Which day (7)"); the
/// creation deadline stays Section 2's `dateDue`, on the service's day. The
/// two days differ between 00:00 and 04:00 or 05:00 UTC, the only hours in
/// which this test tells them apart; the day may turn during the test, so
/// a date is either E-Verify's day before it or the one after.
#[tokio::test]
async fn the_steps_are_dated_on_the_eastern_day() {
    let before = i9_common::domain::everify::eastern_date(chrono::Utc::now());
    let (c, id) = open_case("TNC-SSA").await;
    assert_eq!(c.app.config.clock_offset_days, 0);
    c.wait_for(id, "Tentative Nonconfirmation").await;
    c.ok(id, "notify", None).await;
    let referred = c.ok(id, "refer", None).await;
    assert_eq!(referred["status"], "Referred");
    let rec = c.get(id).await;
    let after = i9_common::domain::everify::eastern_date(chrono::Utc::now());
    let day = |v: &Value| -> chrono::NaiveDate {
        let d = v
            .as_str()
            .unwrap_or_else(|| panic!("a day: {v}"))
            .parse()
            .unwrap();
        assert!(
            before <= d && d <= after,
            "{d} is E-Verify's day ({before}..={after})"
        );
        d
    };
    day(&rec["createdOn"]);
    day(&rec["resultIssuedOn"]);
    day(&rec["employeeNotifiedOn"]);
    let referred_on = day(&rec["referredOn"]);
    let history = rec["history"].as_array().unwrap();
    assert!(history.len() >= 4, "open, program, notify, refer: {rec}");
    for h in history {
        day(&h["onDay"]);
    }
    // The employee's 8 federal working days, counted from E-Verify's day.
    assert_eq!(
        referred["nextStepDueDate"],
        i9_common::domain::calendar::federal_working_days_after(referred_on, 8).to_string()
    );
    // Started today on the service's day: not late, whatever E-Verify's day.
    assert_eq!(rec["late"], false);
}

#[tokio::test]
async fn tnc_ssa_referred_continuance_then_authorized() {
    let (c, id) = referred("TNC-SSA", "SSA").await;
    c.wait_for(id, "Case in Continuance").await;
    let rec = c.wait_for(id, "Closed").await;
    assert_eq!(rec["result"], "Employment Authorized");
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Tentative Nonconfirmation"),
        ("status_changed", "Referred"),
        ("status_changed", "Case in Continuance"),
        ("status_changed", "Closed"),
    ])
    .await;
}

#[tokio::test]
async fn tnc_dhs_referred_then_authorized() {
    let (c, id) = referred("TNC-DHS", "DHS").await;
    let rec = c.wait_for(id, "Closed").await;
    assert_eq!(rec["result"], "Employment Authorized");
    let history: Vec<&str> = rec["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["step"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["open", "program", "notify", "refer", "program"]);
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Tentative Nonconfirmation"),
        ("status_changed", "Referred"),
        ("status_changed", "Closed"),
    ])
    .await;
}

#[tokio::test]
async fn tnc_dual_referred_continuance_then_authorized() {
    let (c, id) = referred("TNC-DUAL", "SSA and DHS").await;
    c.wait_for(id, "Case in Continuance").await;
    c.wait_for(id, "Closed").await;
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Tentative Nonconfirmation"),
        ("status_changed", "Referred"),
        ("status_changed", "Case in Continuance"),
        ("status_changed", "Closed"),
    ])
    .await;
}

#[tokio::test]
async fn tnc_ssa_fnc_referred_then_final_nonconfirmation_closed_by_the_employer() {
    let (c, id) = referred("TNC-SSA-FNC", "SSA").await;
    let rec = c.wait_for(id, "Final Nonconfirmation").await;
    assert_eq!(rec["basis"], "agency");
    assert_eq!(rec["nextStep"], "Close the case");
    c.blocked(id).await;
    // Continuing to employ needs a typed reason; a no-show code does not fit.
    let (status, problem) = c
        .step(
            id,
            "close",
            Some(json!({"closureReason": "EMPLOYEE_CONTINUES_TO_WORK_AFTER_FNC"})),
        )
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "closureNote");
    let (status, problem) = c
        .step(
            id,
            "close",
            Some(json!({"closureReason": "EMPLOYEE_TERMINATED_FOR_NO_SHOW"})),
        )
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "closureReason");
    let rec = c
        .ok(
            id,
            "close",
            Some(json!({"closureReason": "EMPLOYEE_TERMINATED_FOR_FNC"})),
        )
        .await;
    assert_eq!(rec["status"], "Closed");
    assert_eq!(rec["result"], "Final Nonconfirmation");
    assert_eq!(rec["employedAtClosure"], false);
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Tentative Nonconfirmation"),
        ("status_changed", "Referred"),
        ("status_changed", "Final Nonconfirmation"),
        ("status_changed", "Closed"),
    ])
    .await;
}

#[tokio::test]
async fn tnc_dhs_fnc_referred_continuance_then_final_nonconfirmation() {
    let (c, id) = referred("TNC-DHS-FNC", "DHS").await;
    c.wait_for(id, "Case in Continuance").await;
    c.wait_for(id, "Final Nonconfirmation").await;
    c.blocked(id).await;
    c.ok(
        id,
        "close",
        Some(
            json!({"closureReason": "EMPLOYEE_CONTINUES_TO_WORK_AFTER_FNC",
                    "closureNote": "Reviewing with counsel"}),
        ),
    )
    .await;
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Tentative Nonconfirmation"),
        ("status_changed", "Referred"),
        ("status_changed", "Case in Continuance"),
        ("status_changed", "Final Nonconfirmation"),
        ("status_changed", "Closed"),
    ])
    .await;
}

#[tokio::test]
async fn tnc_noshow_final_nonconfirmation_once_the_eight_days_have_passed() {
    let (c, id) = referred("TNC-NOSHOW", "DHS").await;
    // Nothing while the employee's eight federal working days run.
    let ctx = i9_workers::Context::new((*c.app.config).clone(), c.app.pool().clone()).unwrap();
    let round = i9_workers::everify::round(&ctx, c.app.config.everify_today())
        .await
        .unwrap();
    assert_eq!(round.applied, 0);
    c.blocked(id).await;
    // The referral a month ago: the days have passed.
    sqlx::query("UPDATE everify_cases SET referred_on = referred_on - 30 WHERE id = $1")
        .bind(id)
        .execute(c.app.pool())
        .await
        .unwrap();
    let rec = c.wait_for(id, "Final Nonconfirmation").await;
    assert_eq!(rec["basis"], "no_show");
    c.ok(
        id,
        "close",
        Some(json!({"closureReason": "EMPLOYEE_TERMINATED_FOR_NO_SHOW"})),
    )
    .await;
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Tentative Nonconfirmation"),
        ("status_changed", "Referred"),
        ("status_changed", "Final Nonconfirmation"),
        ("status_changed", "Closed"),
    ])
    .await;
}

#[tokio::test]
async fn tnc_continuance_stays_until_the_employment_ends() {
    let (c, id) = referred("TNC-CONTINUANCE", "DHS").await;
    let rec = c.wait_for(id, "Case in Continuance").await;
    assert!(rec["nextStep"]
        .as_str()
        .unwrap()
        .contains("contact E-Verify"));
    // Only an ended employment closes it while the agency has it.
    let (status, problem) = c
        .step(
            id,
            "close",
            Some(json!({"closureReason": "OTHER", "closureNote": "x"})),
        )
        .await;
    assert_eq!(status, 422, "{problem}");
    c.blocked(id).await;
    c.ok(id, "close", Some(json!({"closureReason": "EMPLOYEE_QUIT"})))
        .await;
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Tentative Nonconfirmation"),
        ("status_changed", "Referred"),
        ("status_changed", "Case in Continuance"),
        ("status_changed", "Closed"),
    ])
    .await;
}

#[tokio::test]
async fn resubmit_closes_the_case_and_the_new_one_is_authorized() {
    let (c, id) = open_case("RESUBMIT").await;
    let rec = c.wait_for(id, "Close Case and Resubmit").await;
    assert_eq!(rec["nextStep"], "Close and create a new case");
    c.blocked(id).await;
    c.refused(id, "refer").await;
    let (status, new) = c.step(id, "resubmit", None).await;
    assert_eq!(status, 202, "{new}");
    let new_id = new["id"].as_i64().unwrap();
    assert_ne!(new_id, id);
    assert_eq!(new["resubmitOf"], id);
    let old = c.get(id).await;
    assert_eq!(old["status"], "Closed");
    assert_eq!(old["resubmittedAs"], new_id);
    let rec = c.wait_for(new_id, "Closed").await;
    assert_eq!(rec["result"], "Employment Authorized");
    let events = c
        .events(&[
            ("case_opened", "Pending"),
            ("status_changed", "Close Case and Resubmit"),
            ("status_changed", "Closed"),
            ("case_opened", "Pending"),
            ("status_changed", "Closed"),
        ])
        .await;
    assert_eq!(events[3]["caseId"], new_id);
    // The events link the two cases (the ATS trial): the old case's `Closed`
    // names the new one, every event of the new one names the old one.
    assert_eq!(events[2]["caseId"], id);
    assert_eq!(events[2]["closureReason"], "INCORRECT_DATA");
    assert_eq!(events[2]["result"], "Close Case and Resubmit");
    assert_eq!(events[2]["resubmittedAs"], new_id);
    assert_eq!(events[2]["resubmitOf"], Value::Null);
    for e in &events[..2] {
        assert_eq!(e["resubmittedAs"], Value::Null, "{e}");
        assert_eq!(e["resubmitOf"], Value::Null, "{e}");
    }
    for e in &events[3..] {
        assert_eq!(e["caseId"], new_id);
        assert_eq!(e["resubmitOf"], id, "{e}");
        assert_eq!(e["resubmittedAs"], Value::Null, "{e}");
    }
}

/// `DUPLICATE`: a Duplicate Case alert, which blocks a new I-9 like any
/// unresolved case; `continue-duplicate` needs its reason (and the text of
/// `OTHER`), then the case goes on and is verified.
#[tokio::test]
async fn duplicate_continued_with_a_reason_then_authorized() {
    let (c, id) = open_case("DUPLICATE").await;
    let rec = c.wait_for(id, "Duplicate Case").await;
    assert_eq!(rec["nextStep"], "Continue with a reason or close the case");
    assert_eq!(rec["nextStepDueDate"], Value::Null);
    c.blocked(id).await;
    c.refused(id, "notify").await;
    c.refused(id, "confirm-details").await;
    let (status, problem) = c.step(id, "continue-duplicate", Some(json!({}))).await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "reason");
    let (status, problem) = c
        .step(id, "continue-duplicate", Some(json!({"reason": "OTHER"})))
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "reasonOther");
    assert_eq!(
        c.get(id).await["status"],
        "Duplicate Case",
        "nothing written"
    );
    let rec = c
        .ok(id, "continue-duplicate", Some(json!({"reason": "REHIRE"})))
        .await;
    assert_eq!(rec["status"], "Pending");
    assert_eq!(rec["duplicateReason"], "REHIRE");
    let rec = c.wait_for(id, "Closed").await;
    assert_eq!(rec["result"], "Employment Authorized");
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Duplicate Case"),
        ("status_changed", "Pending"),
        ("status_changed", "Closed"),
    ])
    .await;
}

/// A Duplicate Case created in error is closed as one (`DUPLICATE_CASE`):
/// the employee is then free of it.
#[tokio::test]
async fn duplicate_closed_as_a_duplicate() {
    let (c, id) = open_case("DUPLICATE").await;
    c.wait_for(id, "Duplicate Case").await;
    let rec = c
        .ok(
            id,
            "close",
            Some(json!({"closureReason": "DUPLICATE_CASE"})),
        )
        .await;
    assert_eq!(rec["status"], "Closed");
    assert_eq!(rec["result"], "Duplicate Case");
    assert_eq!(rec["employedAtClosure"], Value::Null);
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Duplicate Case"),
        ("status_changed", "Closed"),
    ])
    .await;
    c.unblocked().await;
}

#[tokio::test]
async fn incomplete_then_confirmed_and_authorized() {
    let (c, id) = open_case("INCOMPLETE").await;
    let rec = c.wait_for(id, "Case Incomplete").await;
    assert_eq!(rec["nextStep"], "Confirm the case data or close the case");
    c.blocked(id).await;
    c.refused(id, "notify").await;
    let rec = c.ok(id, "confirm-details", None).await;
    assert_eq!(rec["status"], "Pending");
    c.wait_for(id, "Closed").await;
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Case Incomplete"),
        ("status_changed", "Pending"),
        ("status_changed", "Closed"),
    ])
    .await;
}

#[tokio::test]
async fn unavailable_retries_then_authorized() {
    let (c, id) = open_case("UNAVAILABLE").await;
    let rec = c.wait_for(id, "Closed").await;
    assert_eq!(rec["result"], "Employment Authorized");
    let attempts: i32 =
        sqlx::query_scalar("SELECT unavailable_attempts FROM everify_cases WHERE id = $1")
            .bind(id)
            .fetch_one(c.app.pool())
            .await
            .unwrap();
    assert_eq!(attempts, 2, "two failed calls, then the answer");
    c.events(&[("case_opened", "Pending"), ("status_changed", "Closed")])
        .await;
}

/// `no-action` on a mismatch: a Final Nonconfirmation (`no_action`), closed
/// with its own codes only; a step that does not fit is a 409 naming the next one.
#[tokio::test]
async fn a_step_that_does_not_fit_the_status_is_409() {
    let (c, id) = open_case("TNC-DHS").await;
    c.wait_for(id, "Tentative Nonconfirmation").await;
    let (status, problem) = c.step(id, "resubmit", None).await;
    assert_eq!(status, 409);
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("Notify the employee"),
        "{problem}"
    );
    // No action is recorded only after the notice (the HR trial).
    c.refused(id, "no-action").await;
    c.ok(id, "notify", None).await;
    let rec = c.ok(id, "no-action", None).await;
    assert_eq!(rec["status"], "Final Nonconfirmation");
    assert_eq!(rec["basis"], "no_action");
    c.refused(id, "refer").await;
    let (status, _) = c
        .step(
            id,
            "close",
            Some(json!({"closureReason": "EMPLOYEE_TERMINATED_FOR_FNC"})),
        )
        .await;
    assert_eq!(status, 422);
    let (status, problem) = c.step(id, "close", Some(json!({}))).await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "closureReason");
    // A flag that contradicts the code is refused, not rewritten (the HR trial).
    let (status, problem) = c
        .step(
            id,
            "close",
            Some(json!({"closureReason": "EMPLOYEE_TERMINATED_FOR_NO_ACTION", "employedAtClosure": true})),
        )
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "employedAtClosure");
    assert_eq!(problem["errors"][0]["code"], "contradicts_closure_reason");
    c.ok(
        id,
        "close",
        Some(json!({"closureReason": "EMPLOYEE_TERMINATED_FOR_NO_ACTION"})),
    )
    .await;
    c.refused(id, "close").await;
    let audit: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE resource_type = 'everify_case' AND resource_id = $1 ORDER BY id",
    )
    .bind(id.to_string())
    .fetch_all(c.app.pool())
    .await
    .unwrap();
    assert_eq!(
        audit,
        [
            "everify.case_opened",
            "everify.status_changed",
            "everify.step",
            "everify.step",
            "everify.step",
            "everify.closed"
        ]
    );
}

/// One open case per person: an employee whose case on one I-9 is open gets
/// a 409 naming it when a case is opened on another of its I-9s, and
/// nothing is written; once that case is closed, the other opens.
#[tokio::test]
async fn one_open_case_per_employee() {
    let (c, first) = open_case("TNC-DHS").await;
    c.wait_for(first, "Tentative Nonconfirmation").await;
    let second_i9 = c.app.insert_i9(c.employee, "Completed").await;
    let cases = || {
        c.app.count(
            "SELECT count(*) FROM everify_cases WHERE employee_id = $1",
            c.employee,
        )
    };
    let r = c
        .app
        .post_json(
            &format!("/v1/i9s/{second_i9}/everify"),
            &c.token,
            &json!({}),
        )
        .await;
    assert_eq!(r.status(), 409);
    let p: Value = r.json().await.unwrap();
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("on I-9 {}", c.i9))
            && detail.contains(&format!("/v1/everify-cases/{first}")),
        "{p}"
    );
    assert_eq!(cases().await, 1, "nothing written");
    c.ok(
        first,
        "close",
        Some(json!({"closureReason": "INCORRECT_DATA"})),
    )
    .await;
    let r = c
        .app
        .post_json(
            &format!("/v1/i9s/{second_i9}/everify"),
            &c.token,
            &json!({}),
        )
        .await;
    assert_eq!(r.status(), 202);
    assert_eq!(cases().await, 2);
}

/// Two openings at the same moment on two I-9s of one employee (the HR
/// trial: a double click, or two HR users, opened two cases in 3 of 5
/// rounds): exactly one is opened, the other is a 409, every round.
#[tokio::test]
async fn two_openings_at_once_for_one_employee_open_one_case() {
    let (app, _receiver) = stack(false).await;
    let token = app.token(ADMIN).await;
    for round in 0..5 {
        let (employee, first) = employee(&app, "TNC-DHS", "Completed").await;
        let second = app.insert_i9(employee, "Completed").await;
        let body = json!({});
        let (p1, p2) = (
            format!("/v1/i9s/{first}/everify"),
            format!("/v1/i9s/{second}/everify"),
        );
        let (a, b) = tokio::join!(
            app.post_json(&p1, &token, &body),
            app.post_json(&p2, &token, &body)
        );
        let mut statuses = [a.status().as_u16(), b.status().as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [202, 409], "round {round}");
        let cases = app
            .count(
                "SELECT count(*) FROM everify_cases WHERE employee_id = $1 AND status <> 'Closed'",
                employee,
            )
            .await;
        assert_eq!(cases, 1, "round {round}: one open case");
    }
}

#[tokio::test]
async fn the_opening_rules_and_the_late_reason() {
    let (app, _receiver) = stack(true).await;
    let token = app.token(ADMIN).await;
    let open = |i9: i64, body: Value| {
        let app = &app;
        let token = token.clone();
        async move {
            let r = app
                .post_json(&format!("/v1/i9s/{i9}/everify"), &token, &body)
                .await;
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }
    };
    let codes = |p: &Value| -> Vec<(String, String)> {
        p["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["field"].as_str().unwrap().to_owned(),
                    e["code"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    // Sections 1 and 2 first.
    let (_, i9) = employee(&app, "Diaz", "Signed Sec 1").await;
    let (status, p) = open(i9, json!({})).await;
    assert_eq!(status, 409, "{p}");
    // On time: no late reason.
    let (_, i9) = employee(&app, "Diaz", "Completed").await;
    let (status, p) = open(i9, json!({"lateReason": "AWAITING_SSN"})).await;
    assert_eq!(status, 422);
    assert_eq!(codes(&p), [("lateReason".into(), "not_late".into())]);
    // Late: a reason is required, a typed one without personal data.
    sqlx::query("UPDATE i9s SET start_date = DATE '2026-01-05' WHERE id = $1")
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    let (status, p) = open(i9, json!({})).await;
    assert_eq!(status, 422);
    assert_eq!(codes(&p), [("lateReason".into(), "required".into())]);
    let (status, p) = open(i9, json!({"lateReason": "OTHER"})).await;
    assert_eq!(status, 422);
    assert_eq!(codes(&p), [("lateReasonOther".into(), "required".into())]);
    let (status, p) = open(
        i9,
        json!({"lateReason": "OTHER", "lateReasonOther": "waited for card 078-05-1120"}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(codes(&p), [("lateReasonOther".into(), "sensitive".into())]);
    assert!(!p.to_string().contains("078-05-1120"), "never the value");
    let (status, p) = open(
        i9,
        json!({"lateReason": "OTHER", "lateReasonOther": "x".repeat(201)}),
    )
    .await;
    assert_eq!(status, 422, "{p}");
    let (status, p) = open(i9, json!({"lateReason": "SOON"})).await;
    assert_eq!(status, 422);
    assert_eq!(codes(&p), [("lateReason".into(), "invalid_value".into())]);
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM everify_cases WHERE i9_id = $1")
            .bind(i9)
            .fetch_one(app.pool())
            .await
            .unwrap()
    };
    assert_eq!(count().await, 0, "nothing written");
    let (status, rec) = open(
        i9,
        json!({"lateReason": "OTHER", "lateReasonOther": "The hiring manager was away"}),
    )
    .await;
    assert_eq!(status, 202, "{rec}");
    assert_eq!(rec["late"], true);
    assert_eq!(rec["dueOn"], "2026-01-08");
    // One open case per I-9.
    let (status, p) = open(i9, json!({})).await;
    assert_eq!(status, 409, "{p}");
    assert_eq!(count().await, 1);
    // Hired before the MOU.
    let (_, i9) = employee(&app, "Diaz", "Approved").await;
    sqlx::query("UPDATE i9s SET start_date = DATE '2023-01-02' WHERE id = $1")
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    let (status, p) = open(i9, json!({"lateReason": "AUDIT_REVEALED_NEW_HIRE_NOT_RUN"})).await;
    assert_eq!(status, 422);
    assert_eq!(codes(&p), [("startDate".into(), "hired_before_mou".into())]);
    // A legal entity not enrolled, and one not in good standing.
    let lee = app.employee_id("EMP-1003").await; // acme-labs
    sqlx::query("UPDATE employment_periods SET start_date = $2 WHERE employee_id = $1")
        .bind(lee)
        .bind(app.config.today())
        .execute(app.pool())
        .await
        .unwrap();
    let i9 = app.insert_i9(lee, "Signed Sec 2").await;
    let (status, p) = open(i9, json!({})).await;
    assert_eq!(status, 422, "{p}");
    assert_eq!(
        codes(&p),
        [("legalEntity".into(), "everify_not_enrolled".into())]
    );
    sqlx::query(
        "UPDATE legal_entities SET everify_id = '7654321', everify_status = 'Terminated'
         WHERE seed_key = 'acme-labs'",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let (status, p) = open(i9, json!({})).await;
    assert_eq!(status, 422);
    assert_eq!(
        codes(&p),
        [("legalEntity".into(), "everify_not_in_good_standing".into())]
    );
}

#[tokio::test]
async fn cases_are_seen_as_their_i9s_and_partners_only_read() {
    let (c, id) = open_case("TNC-DHS").await;
    c.wait_for(id, "Tentative Nonconfirmation").await;
    // Outside the caller's groups: not found.
    let boston = c.app.token(BOSTON_VIEWER).await;
    assert_eq!(
        c.app
            .get(&format!("/v1/everify-cases/{id}"), &boston)
            .await
            .status(),
        404
    );
    let list = c.app.get_json("/v1/everify-cases", &boston).await;
    assert_eq!(list["total"], 0);
    // The partner reads its employee's case, and takes no step.
    let partner = c.app.sign_in_with(ATS, ATS_BOT, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let rec = c
        .app
        .get_json(&format!("/v1/everify-cases/{id}"), &partner)
        .await;
    assert_eq!(rec["status"], "Tentative Nonconfirmation");
    let staff = |rec: &Value| -> Vec<Value> {
        let mut v: Vec<Value> = [
            "createdByUserId",
            "creatorName",
            "creatorEmail",
            "closedBy",
            "closureNote",
            "lateReasonOther",
        ]
        .iter()
        .map(|k| rec[*k].clone())
        .collect();
        v.extend(
            rec["history"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|h| h["byUserId"].clone()),
        );
        v
    };
    // Seen by the employer's HR: who opened the case.
    let hr = c.get(id).await;
    assert!(hr["createdByUserId"].is_i64(), "{hr}");
    assert!(hr["creatorName"].is_string(), "{hr}");
    let r = c
        .app
        .http
        .post(c.app.url(&format!("/v1/everify-cases/{id}/notify")))
        .bearer_auth(&partner)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = c
        .app
        .post_json(&format!("/v1/i9s/{}/everify", c.i9), &partner, &json!({}))
        .await;
    assert_eq!(r.status(), 403);
    // The list's filters.
    let all = c
        .app
        .get_json(
            &format!(
                "/v1/everify-cases?unresolved=true&employeeId={}",
                c.employee
            ),
            &c.token,
        )
        .await;
    assert_eq!(all["total"], 1);
    assert_eq!(all["searchResult"][0]["id"], id);
    let none = c
        .app
        .get_json(
            &format!("/v1/everify-cases?status=Closed&i9Id={}", c.i9),
            &c.token,
        )
        .await;
    assert_eq!(none["total"], 0);
    // By the program's number, in any letter case (the HR trial).
    let by_number = c
        .app
        .get_json(
            &format!("/v1/everify-cases?caseNumber={}", number(id).to_lowercase()),
            &c.token,
        )
        .await;
    assert_eq!(by_number["total"], 1);
    assert_eq!(by_number["searchResult"][0]["id"], id);
    let overdue = c
        .app
        .get_json("/v1/everify-cases?overdue=true", &c.token)
        .await;
    assert_eq!(overdue["total"], 0);
    assert_eq!(
        c.app
            .get("/v1/everify-cases?colour=blue", &c.token)
            .await
            .status(),
        400
    );
    // The partner (the employer's vendor) never sees the employer's staff or
    // their free text (docs/partners.md): a late case, closed with a note.
    sqlx::query(
        "UPDATE everify_cases SET late = TRUE, late_reason = 'OTHER',
                late_reason_other = 'The hiring manager was away' WHERE id = $1",
    )
    .bind(id)
    .execute(c.app.pool())
    .await
    .unwrap();
    c.ok(
        id,
        "close",
        Some(json!({"closureReason": "OTHER", "closureNote": "Created in error"})),
    )
    .await;
    let hr = c.get(id).await;
    assert_eq!(hr["closureNote"], "Created in error");
    assert_eq!(hr["lateReasonOther"], "The hiring manager was away");
    assert!(hr["closedBy"].is_i64(), "{hr}");
    let by_hr = staff(&hr);
    assert_eq!(by_hr.len(), 6 + 3, "open, program, close: {hr}");
    assert!(
        by_hr.iter().filter(|v| !v.is_null()).count() >= 7,
        "the employer sees its staff: {hr}"
    );
    let i9_path = format!("/v1/i9s/{}/everify", c.i9);
    let list_path = format!("/v1/everify-cases?employeeId={}", c.employee);
    let as_partner = [
        c.app
            .get_json(&format!("/v1/everify-cases/{id}"), &partner)
            .await,
        c.app.get_json(&i9_path, &partner).await[0].clone(),
        c.app.get_json(&list_path, &partner).await["searchResult"][0].clone(),
    ];
    for rec in &as_partner {
        assert_eq!(rec["id"], id, "{rec}");
        assert_eq!(
            rec["closureReason"], "OTHER",
            "the code is the program's: {rec}"
        );
        assert!(
            staff(rec).iter().all(Value::is_null),
            "no staff data to a partner: {rec}"
        );
    }
    assert_eq!(as_partner[0]["history"].as_array().unwrap().len(), 3);
    let events = c
        .events(&[
            ("case_opened", "Pending"),
            ("status_changed", "Tentative Nonconfirmation"),
            ("status_changed", "Closed"),
        ])
        .await;
    for e in &events {
        let text = e.to_string();
        assert!(!text.contains("Created in error"), "{text}");
    }
}

/// A Final Nonconfirmation (the HR trial): its "Close the case" is due on the
/// day the result arrived and overdue from the next day, in the record and
/// the `overdue` filter; closing it says whether the employee still works
/// here, `OTHER` needing `employedAtClosure` (422 `required`, nothing
/// written), the codes that say it not.
#[tokio::test]
async fn a_final_nonconfirmation_is_closed_promptly_saying_whether_the_employee_stays() {
    let (c, id) = open_case("TNC-DHS").await;
    c.wait_for(id, "Tentative Nonconfirmation").await;
    c.ok(id, "notify", None).await;
    let rec = c.ok(id, "no-action", None).await;
    assert_eq!(rec["status"], "Final Nonconfirmation");
    // E-Verify dates its steps on the U.S. Eastern day (docs/everify.md, "Windows").
    let today = c.app.config.everify_today().to_string();
    assert_eq!(rec["resultIssuedOn"], today.as_str());
    assert_eq!(rec["nextStep"], "Close the case");
    assert_eq!(rec["nextStepDueDate"], today.as_str());
    assert_eq!(rec["overdue"], false);
    let overdue = |v: bool| {
        let c = &c;
        async move {
            c.app
                .get_json(
                    &format!("/v1/everify-cases?overdue={v}&employeeId={}", c.employee),
                    &c.token,
                )
                .await["total"]
                .as_i64()
                .unwrap()
        }
    };
    assert_eq!((overdue(true).await, overdue(false).await), (0, 1));
    // The result arrived yesterday: the case is overdue.
    sqlx::query(
        "UPDATE everify_cases SET result_issued_on = result_issued_on - 1,
                next_step_due_on = next_step_due_on - 1 WHERE id = $1",
    )
    .bind(id)
    .execute(c.app.pool())
    .await
    .unwrap();
    let rec = c.get(id).await;
    assert_eq!(rec["overdue"], true, "{rec}");
    assert_eq!((overdue(true).await, overdue(false).await), (1, 0));
    let emp = c
        .app
        .get_json(&format!("/v1/employees/{}", c.employee), &c.token)
        .await;
    assert_eq!(emp["everifyCase"]["result"], "Final Nonconfirmation");
    assert_eq!(
        emp["everifyCase"]["nextStepDueDate"],
        rec["nextStepDueDate"]
    );
    // OTHER does not say whether the employee still works here.
    let (status, problem) = c
        .step(
            id,
            "close",
            Some(json!({"closureReason": "OTHER", "closureNote": "x"})),
        )
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(
        problem["errors"],
        json!([{"field": "employedAtClosure", "code": "required",
                "message": problem["errors"][0]["message"]}]),
        "{problem}"
    );
    let (status, problem) = c
        .step(id, "close", Some(json!({"closureReason": "OTHER"})))
        .await;
    assert_eq!(status, 422, "{problem}");
    let mut fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    fields.sort();
    assert_eq!(fields, ["closureNote", "employedAtClosure"], "both named");
    assert_eq!(
        c.get(id).await["status"],
        "Final Nonconfirmation",
        "nothing written"
    );
    let rec = c
        .ok(
            id,
            "close",
            Some(json!({"closureReason": "OTHER", "closureNote": "x", "employedAtClosure": true})),
        )
        .await;
    assert_eq!(rec["status"], "Closed");
    assert_eq!(rec["employedAtClosure"], true);
    assert_eq!(rec["overdue"], false);
    assert_eq!((overdue(true).await, overdue(false).await), (0, 1));
    c.events(&[
        ("case_opened", "Pending"),
        ("status_changed", "Tentative Nonconfirmation"),
        ("status_changed", "Final Nonconfirmation"),
        ("status_changed", "Closed"),
    ])
    .await;
}

/// The steps without fields take no body, or `{}`; anything else is refused
/// as every JSON body is (the ATS trial: `{"noticeLanguage": "es"}` and text
/// that is not JSON were taken and dropped): a 422 naming the member, a 400,
/// a 415, each problem details, and nothing done.
#[tokio::test]
async fn the_steps_without_fields_take_no_body_or_an_empty_object() {
    let (c, id) = open_case("TNC-DHS").await;
    c.wait_for(id, "Tentative Nonconfirmation").await;
    let raw = |step: &str, content_type: Option<&str>, body: &'static str| {
        let mut req = c
            .app
            .http
            .post(c.app.url(&format!("/v1/everify-cases/{id}/{step}")))
            .bearer_auth(&c.token)
            .body(body);
        if let Some(t) = content_type {
            req = req.header("content-type", t);
        }
        async move {
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            let media = r
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_owned());
            (
                status,
                media,
                r.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let problem = Some("application/problem+json".to_owned());
    let (status, media, p) = raw(
        "notify",
        Some("application/json"),
        r#"{"noticeLanguage": "es"}"#,
    )
    .await;
    assert_eq!(status, 422, "{p}");
    assert_eq!(media, problem);
    assert_eq!(p["errors"][0]["field"], "noticeLanguage", "{p}");
    assert_eq!(p["errors"][0]["code"], "unknown_field", "{p}");
    assert_eq!(p["errors"].as_array().unwrap().len(), 1);
    let (status, media, p) = raw("notify", Some("application/json"), "not json at all").await;
    assert_eq!((status, media), (400, problem.clone()), "{p}");
    let (status, media, p) = raw("notify", Some("text/plain"), "es").await;
    assert_eq!((status, media), (415, problem.clone()), "{p}");
    // Every such step, whatever the status: the body is read first.
    for step in [
        "confirm-details",
        "notify",
        "refer",
        "no-action",
        "resubmit",
    ] {
        let (status, p) = c.step(id, step, Some(json!({"x": 1}))).await;
        assert_eq!(status, 422, "{step}: {p}");
        assert_eq!(p["errors"][0]["field"], "x", "{step}: {p}");
        let (status, _, p) = raw(step, Some("application/json"), "[]").await;
        assert_eq!(status, 400, "{step}: {p}");
    }
    let rec = c.get(id).await;
    assert_eq!(
        rec["employeeNotifiedOn"],
        Value::Null,
        "nothing done: {rec}"
    );
    assert_eq!(rec["history"].as_array().unwrap().len(), 2);
    // No body (with or without a Content-Type), or `{}`: taken.
    let (status, _, rec) = raw("notify", Some("application/json"), "").await;
    assert_eq!(status, 202, "{rec}");
    assert!(rec["employeeNotifiedOn"].is_string(), "{rec}");
    let rec = c.ok(id, "refer", Some(json!({}))).await;
    assert_eq!(rec["status"], "Referred");
    // A partner's body changes nothing of its 403.
    let partner = c.app.sign_in_with(ATS, ATS_BOT, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = c
        .app
        .http
        .post(c.app.url(&format!("/v1/everify-cases/{id}/no-action")))
        .bearer_auth(&partner)
        .body("not json at all")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
}

/// The entries of an I-9's history that are its E-Verify cases' (action,
/// actor kind, case id), newest first, and the history's total.
async fn everify_history(c: &Case) -> (Vec<(String, String, i64)>, i64) {
    let history = c
        .app
        .get_json(&format!("/v1/i9s/{}/history?page_size=100", c.i9), &c.token)
        .await;
    let entries = history["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap().starts_with("everify."))
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_owned(),
                e["actor"]["kind"].as_str().unwrap().to_owned(),
                e["everifyCaseId"].as_i64().unwrap(),
            )
        })
        .collect();
    (entries, history["total"].as_i64().unwrap())
}

/// The text of the I-9's PDF, its whitespace folded to single spaces (a
/// cell that wraps reads as one phrase).
async fn pdf_words(c: &Case) -> String {
    let r = c.app.get(&format!("/v1/i9s/{}/pdf", c.i9), &c.token).await;
    assert_eq!(r.status(), 200);
    let text = crate::inspection::pdf_text(&r.bytes().await.unwrap());
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The HR trial: the I-9's history (and so the PDF's audit trail) held no
/// `everify.*` entry, and the PDF named no one for the case's steps and
/// showed no next step. A case opened, notified, referred, answered Final
/// Nonconfirmation and closed by the employer gives exactly its 7 entries
/// in the I-9's history, newest first, each naming the case; the employee's
/// history holds none (it holds no entry of its I-9s either: docs/api.md,
/// "History of a record"); the PDF shows the open case's next step and its
/// days, who took each step, and who closed it.
#[tokio::test]
async fn the_i9s_history_and_pdf_hold_its_case() {
    let (c, id) = open_case("TNC-SSA-FNC").await;
    c.wait_for(id, "Tentative Nonconfirmation").await;
    let rec = c.ok(id, "notify", None).await;
    let due = rec["nextStepDueDate"].as_str().unwrap().to_owned();
    let notified = rec["employeeNotifiedOn"].as_str().unwrap().to_owned();
    assert!(
        rec["nextStep"]
            .as_str()
            .unwrap()
            .starts_with("The employee decides"),
        "{rec}"
    );
    // The open case in the PDF: waiting for the employer, so it stays.
    let text = pdf_words(&c).await;
    for expected in [
        "Next step",
        "The employee decides: refer the case, or record no action",
        "Next step due by",
        &due,
        "Employee notified on",
        &notified,
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
    assert!(!text.contains("Referred on"), "{text}");
    assert!(text.contains("Closed by"), "{text}"); // no one yet: a dash

    c.ok(id, "refer", None).await;
    c.wait_for(id, "Final Nonconfirmation").await;
    let rec = c
        .ok(
            id,
            "close",
            Some(json!({"closureReason": "EMPLOYEE_TERMINATED_FOR_FNC"})),
        )
        .await;
    assert_eq!(rec["status"], "Closed");
    let admin = rec["closedBy"].as_i64().unwrap();
    let referred = rec["referredOn"].as_str().unwrap().to_owned();

    let (entries, total) = everify_history(&c).await;
    let user = |a: &str| (a.to_owned(), "user".to_owned(), id);
    let system = |a: &str| (a.to_owned(), "system".to_owned(), id);
    assert_eq!(
        entries,
        [
            user("everify.closed"),
            user("everify.step"),
            system("everify.status_changed"),
            user("everify.step"),
            user("everify.step"),
            system("everify.status_changed"),
            user("everify.case_opened"),
        ]
    );
    // The I-9's own entries and its case's, nothing else.
    let rows = |t: &'static str, r: i64| {
        let app = &c.app;
        async move {
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM audit_log WHERE resource_type = $1 AND resource_id = $2::TEXT",
            )
            .bind(t)
            .bind(r)
            .fetch_one(app.pool())
            .await
            .unwrap();
            n
        }
    };
    assert_eq!(total, rows("i9", c.i9).await + 7);
    assert_eq!(rows("everify_case", id).await, 7);
    // Paged as before: 2 a page, the newest first.
    let page = c
        .app
        .get_json(
            &format!("/v1/i9s/{}/history?page_size=2&page=1", c.i9),
            &c.token,
        )
        .await;
    assert_eq!(page["total"], total);
    assert_eq!(page["searchResult"].as_array().unwrap().len(), 2);
    assert_eq!(page["searchResult"][0]["action"], "everify.closed");
    assert_eq!(page["searchResult"][1]["action"], "everify.step");
    let employee = c
        .app
        .get_json(
            &format!("/v1/employees/{}/history?page_size=100", c.employee),
            &c.token,
        )
        .await;
    assert!(
        employee["searchResult"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| !e["action"].as_str().unwrap().starts_with("everify.")
                && e["everifyCaseId"].is_null()),
        "{employee}"
    );

    // The closed case in the PDF: who took each step, who closed it, and
    // the case's entries in the audit trail.
    let text = pdf_words(&c).await;
    let by_admin = format!("user {admin} (admin)");
    for expected in [
        "Day Step Status Result By",
        &format!("everify.case_opened (case {id})"),
        &format!("everify.closed (case {id})"),
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
    // The case's fields (two to a row: labels and values interleave in the
    // text).
    let fields = text
        .split("Case SIM")
        .nth(1)
        .unwrap()
        .split("Day Step Status Result By")
        .next()
        .unwrap();
    for expected in ["Closed by", &by_admin, "Referred on", &referred] {
        assert!(fields.contains(expected), "{expected:?} in:\n{fields}");
    }
    // The steps: open, program, notify, refer, program, close: four by
    // the user, two by the simulator.
    let steps = text
        .split("Day Step Status Result By")
        .nth(1)
        .unwrap()
        .split("Audit trail of the record")
        .next()
        .unwrap();
    assert_eq!(steps.matches(&by_admin).count(), 4, "{steps}");
    assert_eq!(steps.matches("simulator").count(), 2, "{steps}");
    assert!(!text.contains("Next step"), "closed: no next step: {text}");
    // The audit trail: the case's 7 entries, each naming the case (a
    // cell may wrap between the action and the case).
    assert_eq!(text.matches("everify.").count(), 7, "{text}");
    assert_eq!(text.matches(&format!("(case {id})")).count(), 7, "{text}");
    assert_eq!(text.matches("everify.status_changed").count(), 2, "{text}");
}
