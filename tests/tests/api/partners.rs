//! POST /v1/partners/i9s/section1: create, re-hire, 409 for an active
//! candidate with an open I-9, who may call it, and its validation.

use i9_tests::{spawn_app, TestApp, ADMIN, ATS_BOT, PORTAL, WEST_HR};
use serde_json::{json, Value};

const ATS: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");

async fn partner_token(app: &TestApp) -> String {
    app.sign_in_with(ATS, ATS_BOT, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn candidate(id: &str) -> Value {
    json!({"integrationCandidateId": id, "onboardingType": "remote", "firstName": "Ana", "lastName": "Diaz",
           "emailAddress": "ana.diaz@mail.example", "startDate": "2026-12-01", "locationId": 3,
           "employeeReturnUrl": "https://ats.example/candidates/8812", "socialSecurityNumber": "456-78-9012"})
}

async fn push(app: &TestApp, token: &str, body: &Value) -> reqwest::Response {
    app.post_json("/v1/partners/i9s/section1", token, body)
        .await
}

#[tokio::test]
async fn a_new_candidate_becomes_an_employee_with_an_i9_request() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let r = push(&app, &token, &candidate("cand-1")).await;
    assert_eq!(r.status(), 201);
    let request_id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.unwrap();
    let id = body["id"].as_i64().unwrap();
    assert!(body["i9Section1Link"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{}/i9/section1/", app.address)));
    assert_eq!(
        body["links"],
        json!([{"rel": "self", "href": format!("/v1/employees/{id}")}])
    );
    let e = app.get_json(&format!("/v1/employees/{id}"), &token).await;
    assert_eq!(e["integrationClientSystem"], "Greenhouse");
    assert_eq!(e["integrationCandidateId"], "cand-1");
    assert_eq!(e["integrationHrUrl"], "http://127.0.0.1:9099/i9-status");
    assert_eq!(e["integrationRequestId"], request_id.as_str());
    assert_eq!(e["integrationClientProcess"], "remote");
    assert!(e["IntegrationTransactionId"].is_string());
    assert_eq!(
        e["employeeReturnUrl"],
        "https://ats.example/candidates/8812"
    );
    assert_eq!(e["startDate"], "2026-12-01");
    let remote: bool = sqlx::query_scalar("SELECT remote FROM i9_requests WHERE employee_id = $1")
        .bind(id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert!(remote);
    // Other employees carry no integration fields.
    let admin = app.token(ADMIN).await;
    let maria = app
        .get_json(
            &format!("/v1/employees/{}", app.employee_id("EMP-1001").await),
            &admin,
        )
        .await;
    assert_eq!(maria["integrationCandidateId"], Value::Null);
}

#[tokio::test]
async fn an_active_candidate_with_an_open_i9_is_a_409_and_a_terminated_one_is_rehired() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let first: Value = push(&app, &token, &candidate("cand-2"))
        .await
        .json()
        .await
        .unwrap();
    let id = first["id"].as_i64().unwrap();
    let r = push(&app, &token, &candidate("cand-2")).await;
    assert_eq!(r.status(), 409);
    let p: Value = r.json().await.unwrap();
    assert!(p["detail"]
        .as_str()
        .unwrap()
        .contains(&format!("employee {id}")));

    // The I-9 is done and the employee leaves; the partner hires them again.
    sqlx::query("UPDATE i9_requests SET i9_id = NULL WHERE employee_id = $1")
        .bind(id)
        .execute(app.pool())
        .await
        .unwrap();
    sqlx::query("DELETE FROM i9_requests WHERE employee_id = $1")
        .bind(id)
        .execute(app.pool())
        .await
        .unwrap();
    sqlx::query(
        "UPDATE employment_periods SET terminated_date = DATE '2026-12-20' WHERE employee_id = $1",
    )
    .bind(id)
    .execute(app.pool())
    .await
    .unwrap();
    let mut again = candidate("cand-2");
    again["startDate"] = json!("2027-03-01");
    again["onboardingType"] = json!("on-site");
    let r = push(&app, &token, &again).await;
    assert_eq!(r.status(), 201);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["id"], id, "the same employee, re-hired");
    let periods = app
        .count(
            "SELECT count(*) FROM employment_periods WHERE employee_id = $1",
            id,
        )
        .await;
    assert_eq!(periods, 2);
    let e = app.get_json(&format!("/v1/employees/{id}"), &token).await;
    assert_eq!(
        (e["startDate"].as_str(), e["terminatedDate"].as_str()),
        (Some("2027-03-01"), None)
    );
    assert_eq!(e["integrationClientProcess"], "on-site");
}

#[tokio::test]
async fn only_partner_clients_with_permission_10_may_call_it() {
    let app = spawn_app().await;
    // A partner user through a client that is not a partner.
    let portal = app.token(ATS_BOT).await;
    let r = push(&app, &portal, &candidate("c")).await;
    assert_eq!(r.status(), 403);
    // A user without permission 10 through the partner client.
    let west = app.sign_in_with(ATS, WEST_HR, None).await;
    let r = push(
        &app,
        west["access_token"].as_str().unwrap(),
        &candidate("c"),
    )
    .await;
    assert_eq!(r.status(), 403);
    let admin_via_portal = app.sign_in_with(PORTAL, ADMIN, None).await;
    let r = push(
        &app,
        admin_via_portal["access_token"].as_str().unwrap(),
        &candidate("c"),
    )
    .await;
    assert_eq!(
        r.status(),
        403,
        "permission 10 alone is not enough: the client must be a partner"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM employees WHERE id > $1", 0)
            .await,
        3
    );
}

#[tokio::test]
async fn the_partner_body_is_checked_field_by_field() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let body = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3, "onboardingType": "hybrid",
                      "employeeReturnUrl": "javascript:alert(1)", "createI9": "yes", "terminatedDate": "2026-01-01"});
    let r = push(&app, &token, &body).await;
    assert_eq!(r.status(), 422);
    let p: Value = r.json().await.unwrap();
    let got: Vec<(String, String)> = p["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for (f, c) in [
        ("integrationCandidateId", "required"),
        ("startDate", "required"),
        ("emailAddress", "required"),
        ("onboardingType", "invalid_value"),
        ("employeeReturnUrl", "invalid_format"),
        ("createI9", "not_accepted"),
        ("terminatedDate", "not_accepted"),
    ] {
        assert!(
            got.contains(&(f.to_owned(), c.to_owned())),
            "{f}/{c} in {got:?}"
        );
    }
    assert_eq!(
        app.count("SELECT count(*) FROM employees WHERE id > $1", 0)
            .await,
        3
    );
}

#[tokio::test]
async fn an_idempotency_key_replays_the_partner_answer() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let send = || {
        app.http
            .post(app.url("/v1/partners/i9s/section1"))
            .bearer_auth(&token)
            .header("idempotency-key", "ats-req-77")
            .json(&candidate("cand-3"))
            .send()
    };
    let first: Value = send().await.unwrap().json().await.unwrap();
    let again = send().await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again, first);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
            first["id"].as_i64().unwrap()
        )
        .await,
        1
    );
}
