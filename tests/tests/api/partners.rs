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

/// `path` answers `status` to `token` (a GET).
async fn get_status(app: &TestApp, token: &str, path: &str) -> u16 {
    app.get(path, token).await.status().as_u16()
}

#[tokio::test]
async fn a_partner_token_reaches_only_the_employees_created_through_it() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let mut own = Vec::new();
    for (c, ssn) in [("cand-a", "456-78-9012"), ("cand-b", "567-89-0123")] {
        let mut body = candidate(c);
        body["socialSecurityNumber"] = json!(ssn);
        let r = push(&app, &token, &body).await;
        assert_eq!(r.status(), 201);
        own.push(r.json::<Value>().await.unwrap()["id"].as_i64().unwrap());
    }
    let own_i9 = app.insert_i9(own[0], "Section 1 Incomplete").await;
    // Maria is in West Region, one of the partner user's groups, but was not
    // created through the partner client.
    let maria = app.employee_id("EMP-1001").await;
    let maria_i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let aisha = app.employee_id("EMP-1003").await;

    let list = app.get_json("/v1/employees", &token).await;
    assert_eq!(i9_tests::ids(&list), own, "its own two employees, no other");
    assert!(i9_tests::ids(&app.get_json("/v1/employees?lastName=Lopez", &token).await).is_empty());
    assert_eq!(
        i9_tests::ids(&app.get_json("/v1/i9s", &token).await),
        vec![own_i9]
    );
    for path in [
        format!("/v1/employees/{}", own[1]),
        format!("/v1/i9s/{own_i9}"),
    ] {
        assert_eq!(get_status(&app, &token, &path).await, 200, "{path}");
    }
    for path in [
        format!("/v1/employees/{maria}"),
        format!("/v1/employees/{aisha}"),
        format!("/v1/i9s/{maria_i9}"),
    ] {
        let r = app.get(&path, &token).await;
        assert_eq!(r.status(), 404, "{path}");
        let p: Value = r.json().await.unwrap();
        assert_eq!(p["detail"], "No such resource.", "as for a missing record");
    }

    // Every other collection and record: 404, as if it did not exist.
    let acme = app.group_id("Acme").await;
    for path in [
        "/v1/eins".to_owned(),
        "/v1/eins/1".to_owned(),
        "/v1/groups".to_owned(),
        format!("/v1/groups/{acme}"),
        format!("/v1/groups/{acme}/users"),
        "/v1/users".to_owned(),
        "/v1/users/1".to_owned(),
        "/v1/users/999999".to_owned(),
        "/v1/roles".to_owned(),
        "/v1/roles/1".to_owned(),
    ] {
        assert_eq!(get_status(&app, &token, &path).await, 404, "{path}");
    }
    assert_eq!(get_status(&app, &token, "/v1/openapi.json").await, 200);

    // Every write but the partner operation: 403, its own employees included.
    let patch =
        json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3, "jobTitle": "Driver"});
    for id in [own[0], maria] {
        let r = app
            .patch_json(&format!("/v1/employees/{id}"), &token, &patch)
            .await;
        assert_eq!(r.status(), 403, "PATCH {id}");
    }
    let r = app.post_json("/v1/employees", &token, &patch).await;
    assert_eq!(r.status(), 403);
    let r = app
        .post_json(&format!("/v1/i9s/{own_i9}/park"), &token, &json!({}))
        .await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM employees WHERE job_title = 'Driver' AND id > $1",
            0
        )
        .await,
        0
    );
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9s WHERE status = 'Parked' AND id = $1",
            own_i9
        )
        .await,
        0
    );

    // Permission 11 no longer widens what a partner reads.
    sqlx::query(
        "INSERT INTO role_permissions (role_id, permission_id)
         SELECT id, 11 FROM roles WHERE name = 'Partner Integration'",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let token = partner_token(&app).await;
    assert_eq!(
        i9_tests::ids(&app.get_json("/v1/employees", &token).await),
        own
    );
    assert_eq!(
        get_status(&app, &token, &format!("/v1/employees/{aisha}")).await,
        404
    );

    // The same user through a client that is not a partner: its role and groups apply.
    let portal = app.token(ATS_BOT).await;
    assert_eq!(
        i9_tests::ids(&app.get_json("/v1/employees", &portal).await),
        vec![
            maria,
            app.employee_id("EMP-1002").await,
            aisha,
            own[0],
            own[1]
        ]
    );
    assert_eq!(
        get_status(&app, &portal, &format!("/v1/i9s/{maria_i9}")).await,
        200
    );
}

#[tokio::test]
async fn a_partner_creates_employees_only_in_its_users_groups() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let mut body = candidate("cand-east");
    body["locationId"] = json!(app.group_id("Boston Office").await);
    let r = push(&app, &token, &body).await;
    assert_eq!(
        r.status(),
        403,
        "Boston is outside the partner user's groups"
    );
    body["locationId"] = json!(app.group_id("Seattle Office").await);
    assert_eq!(push(&app, &token, &body).await.status(), 201);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM employees WHERE integration_client_id IS NOT NULL AND id > $1",
            0
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_partners_conflict_names_no_record_it_cannot_see() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let first: Value = push(&app, &token, &candidate("cand-1"))
        .await
        .json()
        .await
        .unwrap();
    let own = first["id"].as_i64().unwrap();
    // Maria (West, the partner user's group, not its own) and Aisha (Boston).
    let cases = [
        (
            "profileId",
            "EMP-1001",
            "profileId already belongs to another employee.",
        ),
        (
            "profileId",
            "emp-1003",
            "profileId already belongs to another employee.",
        ),
        (
            "socialSecurityNumber",
            "123-45-6789",
            "socialSecurityNumber already belongs to another employee.",
        ),
        (
            "socialSecurityNumber",
            "345-67-8901",
            "socialSecurityNumber already belongs to another employee.",
        ),
    ];
    for (field, value, expected) in cases {
        let mut body = candidate("cand-2");
        body["socialSecurityNumber"] = json!("567-89-0123");
        body[field] = json!(value);
        let r = push(&app, &token, &body).await;
        assert_eq!(r.status(), 409, "{field} {value}");
        let p: Value = r.json().await.unwrap();
        assert_eq!(p["detail"], expected, "{field} {value}");
    }
    // Its own employee's profileId: named, the partner sees it.
    sqlx::query("UPDATE employees SET profile_id = 'ATS-1' WHERE id = $1")
        .bind(own)
        .execute(app.pool())
        .await
        .unwrap();
    let mut body = candidate("cand-3");
    body["socialSecurityNumber"] = json!("567-89-0123");
    body["profileId"] = json!("ATS-1");
    let p: Value = push(&app, &token, &body).await.json().await.unwrap();
    // Named, and without pointing at PATCH, which a partner cannot use.
    assert_eq!(
        p["detail"],
        format!("profileId already belongs to employee {own}."),
        "{p}"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM employees WHERE id > $1", 0)
            .await,
        4,
        "nothing written by the refused calls"
    );
}

/// Pushes of one new candidate at once, without an Idempotency-Key (partner
/// trial): one creates it, the others get a 409, never a 500.
#[tokio::test]
async fn concurrent_pushes_of_one_new_candidate_create_it_once_and_answer_409_to_the_rest() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let mut body = candidate("cand-race");
    body.as_object_mut().unwrap().remove("socialSecurityNumber");
    let answers = futures_util::future::join_all((0..6).map(|_| push(&app, &token, &body))).await;
    let mut statuses: Vec<u16> = answers.iter().map(|r| r.status().as_u16()).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 409, 409, 409, 409, 409]);
    let employees: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM employees WHERE integration_candidate_id = 'cand-race'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(employees, 1);
}

/// The employer moved the partner's employee out of the partner's reach: a
/// re-push of its candidate is refused (403) and changes nothing (partner
/// trial), as any write outside a partner's reach is.
#[tokio::test]
async fn a_partner_cannot_write_to_its_candidate_once_the_employer_moved_it_out_of_reach() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let r = push(&app, &token, &candidate("cand-moved")).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    let admin = app.sign_in_with(PORTAL, ADMIN, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = app
        .patch_json(
            &format!("/v1/employees/{id}"),
            &admin,
            &json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 6}),
        )
        .await;
    assert_eq!(r.status(), 200, "moved to Boston Office");
    assert_eq!(
        get_status(&app, &token, &format!("/v1/employees/{id}")).await,
        404
    );

    let mut again = candidate("cand-moved");
    again["startDate"] = json!("2027-01-04");
    let r = push(&app, &token, &again).await;
    assert_eq!(r.status(), 403);
    let p: Value = r.json().await.unwrap();
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("outside your client's reach"),
        "{p}"
    );
    let (location, requests): (i64, i64) = sqlx::query_as(
        "SELECT location_id, (SELECT count(*) FROM i9_requests WHERE employee_id = e.id)
         FROM employees e WHERE id = $1",
    )
    .bind(id)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!((location, requests), (6, 1), "not moved back, no new I-9");
}
