//! Partner status callbacks: one per status change, creation included, and
//! one per change of a partner's employee's employment, whoever made it;
//! signed (verified here with the `standardwebhooks` library), retried,
//! recorded, refused towards private addresses unless allowed, and each body
//! valid against its webhook in the served OpenAPI document.

use std::collections::BTreeMap;

use i9_tests::{eventually, spawn, Receiver, Stack, TestApp, ADMIN, ATS_BOT};
use serde_json::{json, Value};

const ATS: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");
const SECRET: &str = "whsec_YWNtZS1ncmVlbmhvdXNlLWRldi1zaWduaW5nLWtleSEh";

async fn stack(allow_private: bool) -> (TestApp, Receiver) {
    let app = spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        move |c| c.allow_private_callbacks = allow_private,
    )
    .await;
    let receiver = app.partner_endpoint().await;
    (app, receiver)
}

pub(crate) async fn hire(app: &TestApp, candidate: &str) -> i64 {
    let token = app.sign_in_with(ATS, ATS_BOT, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = json!({"integrationCandidateId": candidate, "onboardingType": "on-site", "firstName": "Ana",
                      "lastName": "Diaz", "emailAddress": "ana@mail.example", "startDate": "2026-11-05", "locationId": 3});
    let r = app
        .post_json("/v1/partners/i9s/section1", &token, &body)
        .await;
    assert_eq!(r.status(), 201);
    r.json::<Value>().await.unwrap()["id"].as_i64().unwrap()
}

/// The payloads received so far, each verified as a partner would.
pub(crate) fn verified(receiver: &Receiver) -> Vec<Value> {
    let wh = standardwebhooks::Webhook::new(SECRET).unwrap();
    receiver
        .received()
        .into_iter()
        .map(|(headers, body)| {
            wh.verify(&body, &headers).expect("the signature verifies");
            serde_json::from_slice(&body).unwrap()
        })
        .collect()
}

async fn i9_of(app: &TestApp, employee: i64) -> i64 {
    eventually("the I-9 exists", || async {
        app.i9_count(employee).await == 1
    })
    .await;
    sqlx::query_scalar("SELECT id FROM i9s WHERE employee_id = $1")
        .bind(employee)
        .fetch_one(app.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn every_status_change_reaches_the_partner_signed_and_in_sequence() {
    let (app, receiver) = stack(true).await;
    let id = hire(&app, "cand-cb-1").await;
    let i9 = i9_of(&app, id).await;
    eventually("the creation callback", || async {
        receiver.received().len() == 1
    })
    .await;

    // Section 1 is signed (the Section 1 page records it the same way).
    let mut tx = app.pool().begin().await.unwrap();
    sqlx::query("UPDATE i9s SET status = 'Signed Sec 1' WHERE id = $1")
        .bind(i9)
        .execute(&mut *tx)
        .await
        .unwrap();
    i9_common::events::record_status_change(
        &mut tx,
        i9,
        Some(i9_common::domain::I9Status::Section1Incomplete),
        &app.address,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    eventually("the Section 1 callback", || async {
        receiver.received().len() == 2
    })
    .await;

    let admin = app.token(ADMIN).await;
    let section2 = json!({
        "listA1DocTitle": "U.S. Passport", "listA1DocIssuer": "U.S. Department of State", "listA1DocNumber": "X1",
        "employerFirstName": "Ada", "employerLastName": "Admin", "employerTitle": "Administrator",
        "employerBusiness": "Acme", "employerSignature": "Ada Admin"
    });
    for (step, body, n) in [
        ("section2", Some(section2), 3),
        ("complete", None, 4),
        ("approve", None, 5),
    ] {
        let mut req = app
            .http
            .post(app.url(&format!("/v1/i9s/{i9}/{step}")))
            .bearer_auth(&admin);
        if let Some(b) = body {
            req = req.json(&b);
        }
        assert_eq!(req.send().await.unwrap().status(), 200, "{step}");
        eventually("the step's callback", || async {
            receiver.received().len() == n
        })
        .await;
    }

    let events = verified(&receiver);
    let statuses: Vec<&str> = events
        .iter()
        .map(|e| e["i9Status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "Section 1 Incomplete",
            "Signed Sec 1",
            "Signed Sec 2",
            "Completed",
            "Approved"
        ]
    );
    let sequences: Vec<i64> = events
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(sequences, [1, 2, 3, 4, 5]);
    let first = &events[0];
    assert_eq!(first["type"], "i9.created");
    assert_eq!(first["previousI9Status"], Value::Null);
    assert_eq!(first["integrationCandidateId"], "cand-cb-1");
    assert_eq!(first["employeeId"], id);
    assert_eq!(first["i9Id"], i9);
    assert_eq!(first["i9NextStepDueDate"], "2026-11-05");
    assert!(first["i9NextStep"].as_str().unwrap().contains("Section 1"));
    assert_eq!(first["i9Url"], format!("{}/v1/i9s/{i9}", app.address));
    assert_eq!(events[2]["previousI9Status"], "Signed Sec 1");
    assert_eq!(
        events[4]["i9NextStep"],
        Value::Null,
        "nothing follows approval"
    );
    // A tampered body does not verify.
    let (headers, _) = receiver.received().remove(0);
    let wh = standardwebhooks::Webhook::new(SECRET).unwrap();
    assert!(wh.verify(b"{\"i9Status\":\"Approved\"}", &headers).is_err());
    // The worker records each attempt once the partner has answered.
    eventually("five delivered attempts are recorded", || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM callback_attempts WHERE http_status = 204",
        )
        .fetch_one(app.pool())
        .await
        .unwrap()
            == 5
    })
    .await;
}

#[tokio::test]
async fn a_failing_partner_gets_the_callback_later_with_every_attempt_recorded() {
    let (app, receiver) = stack(true).await;
    receiver.fail_next(2);
    hire(&app, "cand-cb-2").await;
    eventually("the callback arrives on the third attempt", || async {
        receiver.received().len() == 1
    })
    .await;
    assert_eq!(receiver.attempts(), 3);
    eventually("the delivery is recorded", || async {
        sqlx::query_scalar::<_, bool>("SELECT delivered_at IS NOT NULL FROM partner_events")
            .fetch_one(app.pool())
            .await
            .unwrap()
    })
    .await;
    let recorded: Vec<(Option<i32>, i32)> =
        sqlx::query_as("SELECT http_status, duration_ms FROM callback_attempts ORDER BY id")
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(
        recorded.iter().map(|r| r.0).collect::<Vec<_>>(),
        [Some(503), Some(503), Some(204)]
    );
    assert!(recorded.iter().all(|r| r.1 >= 0));
    let delivered: bool = sqlx::query_scalar("SELECT delivered_at IS NOT NULL FROM partner_events")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert!(delivered);
}

#[tokio::test]
async fn a_partner_down_past_the_retry_budget_gets_a_dead_lettered_callback() {
    let (app, receiver) = stack(true).await;
    receiver.fail_next(1_000);
    hire(&app, "cand-cb-3").await;
    eventually("the callback is given up", || async {
        sqlx::query_scalar::<_, bool>("SELECT dead_at IS NOT NULL FROM partner_events")
            .fetch_optional(app.pool())
            .await
            .unwrap()
            .unwrap_or(false)
    })
    .await;
    assert_eq!(
        receiver.attempts(),
        3,
        "the shortened budget: three attempts"
    );
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM callback_attempts")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(attempts, 3);
}

#[tokio::test]
async fn a_callback_to_a_private_address_is_refused_unless_allowed() {
    let (app, receiver) = stack(false).await;
    hire(&app, "cand-cb-4").await;
    eventually("the refusal is recorded", || async {
        sqlx::query_scalar::<_, Option<String>>("SELECT error FROM callback_attempts")
            .fetch_optional(app.pool())
            .await
            .unwrap()
            .flatten()
            .is_some_and(|e| e.contains("refused"))
    })
    .await;
    eventually("the callback is dead", || async {
        sqlx::query_scalar::<_, bool>("SELECT dead_at IS NOT NULL FROM partner_events")
            .fetch_one(app.pool())
            .await
            .unwrap()
    })
    .await;
    assert_eq!(receiver.attempts(), 0, "nothing was sent to 127.0.0.1");
}

#[tokio::test]
async fn a_410_from_the_partner_stops_the_retries() {
    let (app, receiver) = stack(true).await;
    receiver.go_away();
    hire(&app, "cand-cb-5").await;
    eventually("the callback is given up after one attempt", || async {
        sqlx::query_scalar::<_, bool>("SELECT dead_at IS NOT NULL FROM partner_events")
            .fetch_optional(app.pool())
            .await
            .unwrap()
            .unwrap_or(false)
    })
    .await;
    assert_eq!(receiver.attempts(), 1);
    let statuses: Vec<Option<i32>> =
        sqlx::query_scalar("SELECT http_status FROM callback_attempts")
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(statuses, [Some(410)]);
}

/// A validator of each webhook's body, by event type, from the document the
/// API serves (`webhooks`, their bodies referring to `components`).
pub(crate) async fn webhook_validators(app: &TestApp) -> BTreeMap<String, jsonschema::Validator> {
    let token = app.token(ADMIN).await;
    let doc = app.get_json("/v1/openapi.json", &token).await;
    webhook_validators_of(&doc)
}

pub(crate) fn webhook_validators_of(doc: &Value) -> BTreeMap<String, jsonschema::Validator> {
    let hooks = doc["webhooks"]
        .as_object()
        .expect("the document has webhooks");
    hooks
        .iter()
        .map(|(event_type, hook)| {
            let body = &hook["post"]["requestBody"]["content"]["application/json"]["schema"];
            assert!(body.is_object(), "{event_type}: a JSON body schema");
            // The body's references point into the document's components.
            let schema = json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "components": doc["components"],
                "allOf": [body],
            });
            let validator = jsonschema::draft202012::new(&schema)
                .unwrap_or_else(|e| panic!("{event_type}: the schema compiles: {e}"));
            (event_type.clone(), validator)
        })
        .collect()
}

/// Every body is valid against the webhook of its `type`; returns how many
/// of each type there were.
pub(crate) fn assert_match_the_contract(
    validators: &BTreeMap<String, jsonschema::Validator>,
    bodies: &[Value],
) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for body in bodies {
        let event_type = body["type"].as_str().expect("a type");
        let validator = validators
            .get(event_type)
            .unwrap_or_else(|| panic!("a webhook for {event_type}"));
        let errors: Vec<String> = validator
            .iter_errors(body)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{body} breaks its webhook's schema: {errors:?}"
        );
        *seen.entry(event_type.to_owned()).or_insert(0) += 1;
    }
    seen
}

/// How many events of each type the database recorded for `employee`.
pub(crate) async fn recorded_events(app: &TestApp, employee: i64) -> BTreeMap<String, i64> {
    sqlx::query_as::<_, (String, i64)>(
        "SELECT event_type, count(*) FROM partner_events WHERE employee_id = $1 GROUP BY event_type",
    )
    .bind(employee)
    .fetch_all(app.pool())
    .await
    .unwrap()
    .into_iter()
    .collect()
}

fn counts<const N: usize>(pairs: [(&str, i64); N]) -> BTreeMap<String, i64> {
    pairs
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(t, n)| (t.to_owned(), n))
        .collect()
}

/// HR's termination, its change, its cancellation and a re-hire of a
/// partner's employee each reach the partner once; a PATCH that leaves the
/// period's termination as it is posts nothing; another employee's posts
/// nothing.
#[tokio::test]
async fn employment_changes_by_hr_reach_the_partner_once_each() {
    let (app, receiver) = stack(true).await;
    let id = hire(&app, "cand-emp-1").await;
    let i9 = i9_of(&app, id).await;
    eventually("the creation callback", || async {
        receiver.received().len() == 1
    })
    .await;
    let admin = app.token(ADMIN).await;
    let base = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3});
    let patch = |extra: Value| {
        let mut body = base.clone();
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let (app, admin) = (&app, &admin);
        async move {
            let r = app
                .patch_json(&format!("/v1/employees/{id}"), admin, &body)
                .await;
            assert_eq!(r.status(), 200, "{body}");
        }
    };
    // (the change, the events recorded after it: terminated, cancelled, re-hired)
    let steps = [
        (json!({"terminatedDate": "2026-12-20"}), (1, 0, 0)),
        (json!({"terminatedDate": "2026-12-20"}), (1, 0, 0)), // the same date
        (json!({"jobTitle": "Driver"}), (1, 0, 0)),
        (json!({"terminatedDate": "2026-12-22"}), (2, 0, 0)), // another date
        (json!({"startDate": "2026-11-06"}), (2, 0, 0)),      // the start alone
        (json!({"terminatedDate": null}), (2, 1, 0)),
        (json!({"terminatedDate": "2026-12-31"}), (3, 1, 0)),
        (
            json!({"rehire": "yes", "startDate": "2027-02-01"}),
            (3, 1, 1),
        ),
        (json!({"jobTitle": "Lead driver"}), (3, 1, 1)),
    ];
    for (change, (terminated, cancelled, rehired)) in steps {
        patch(change.clone()).await;
        assert_eq!(
            recorded_events(&app, id).await,
            counts([
                ("i9.created", 1),
                ("employee.terminated", terminated),
                ("employee.termination_cancelled", cancelled),
                ("employee.rehired", rehired),
            ]),
            "after {change}"
        );
    }
    // Maria is nobody's partner employee: her termination posts nothing.
    let maria = app.employee_id("EMP-1001").await;
    let r = app
        .patch_json(
            &format!("/v1/employees/{maria}"),
            &admin,
            &json!({"firstName": "Maria", "lastName": "Lopez", "locationId": 3, "terminatedDate": "2026-12-31"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert!(recorded_events(&app, maria).await.is_empty());

    eventually("every callback arrives", || async {
        receiver.received().len() == 6
    })
    .await;
    let mut events = verified(&receiver);
    events.sort_by_key(|e| e["sequence"].as_i64().unwrap());
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "i9.created",
            "employee.terminated",
            "employee.terminated",
            "employee.termination_cancelled",
            "employee.terminated",
            "employee.rehired"
        ]
    );
    let sequences: Vec<i64> = events
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(sequences, [1, 2, 3, 4, 5, 6]);
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    let transaction = record["IntegrationTransactionId"].clone();
    assert!(transaction.is_string(), "{record}");
    let first = &events[1];
    for (field, value) in [
        ("employeeId", json!(id)),
        ("integrationCandidateId", json!("cand-emp-1")),
        ("IntegrationTransactionId", transaction.clone()),
        ("startDate", json!("2026-11-05")),
        ("terminatedDate", json!("2026-12-20")),
        ("i9Id", json!(i9)),
        ("i9Status", json!("Section 1 Incomplete")),
        ("i9Url", json!(format!("{}/v1/i9s/{i9}", app.address))),
    ] {
        assert_eq!(first[field], value, "{field} of {first}");
    }
    assert_eq!(events[2]["terminatedDate"], "2026-12-22");
    assert_eq!(events[3]["terminatedDate"], Value::Null);
    assert_eq!(events[3]["startDate"], "2026-11-06");
    let rehired = &events[5];
    assert_eq!(
        (&rehired["startDate"], &rehired["terminatedDate"]),
        (&json!("2027-02-01"), &Value::Null)
    );
    assert_eq!(rehired["i9Id"], i9, "the latest I-9 at the time");
    for (headers, body) in receiver.received() {
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(headers["webhook-id"], body["eventId"].as_str().unwrap());
    }

    let seen = assert_match_the_contract(&webhook_validators(&app).await, &events);
    assert_eq!(seen.len(), 4, "{seen:?}");
}
