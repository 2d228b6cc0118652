//! POST /v1/partners/i9s/section1: create, re-hire (parking what the ended
//! employment left open), 409 for a candidate still employed whatever its
//! I-9, who may call it, and its validation.

use i9_tests::{
    eventually, spawn_app, spawn_partner_stack, TestApp, ADMIN, ATS_BOT, PORTAL, WEST_HR,
};
use serde_json::{json, Value};

use crate::callbacks::{assert_match_the_contract, recorded_events, verified, webhook_validators};

const ATS: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");

pub(crate) async fn partner_token(app: &TestApp) -> String {
    app.sign_in_with(ATS, ATS_BOT, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub(crate) fn candidate(id: &str) -> Value {
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
    // The request carries the push's transaction id into the I-9; one audit
    // entry and one job that creates the I-9 (one statement writes them).
    let (transaction, audited, jobs): (Option<String>, i64, i64) = sqlx::query_as(
        "SELECT (SELECT integration_transaction_id FROM i9_requests WHERE employee_id = $1),
                (SELECT count(*) FROM audit_log WHERE resource_type = 'employee'
                   AND resource_id = $1::TEXT AND action = 'partner.create'),
                (SELECT count(*) FROM job_outbox o JOIN i9_requests r
                   ON o.payload::TEXT LIKE '%' || r.id::TEXT || '%'
                 WHERE r.employee_id = $1 AND o.kind = 'create_i9')",
    )
    .bind(id)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(
        transaction.as_deref(),
        e["IntegrationTransactionId"].as_str()
    );
    assert_eq!((audited, jobs), (1, 1));
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

/// A re-hire by push starts after the ended employment: a `startDate` on
/// or before its `terminatedDate` (or before the first hire) is a 422 on
/// `startDate`, and nothing of the push is written (docs/api.md, "Periods of
/// employment").
#[tokio::test]
async fn a_rehire_dated_into_the_ended_employment_is_a_422() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let first: Value = push(&app, &token, &candidate("cand-7"))
        .await
        .json()
        .await
        .unwrap();
    let id = first["id"].as_i64().unwrap(); // started 2026-12-01
    sqlx::query("DELETE FROM i9_requests WHERE employee_id = $1")
        .bind(id)
        .execute(app.pool())
        .await
        .unwrap();
    terminate(&app, id, "2027-02-26").await;
    let counts = || async {
        sqlx::query_as::<_, (i64, i64, i64, i64, i64)>(
            "SELECT (SELECT count(*) FROM employment_periods), (SELECT count(*) FROM i9_requests),
                    (SELECT count(*) FROM job_outbox), (SELECT count(*) FROM audit_log),
                    (SELECT count(*) FROM i9s)",
        )
        .fetch_one(app.pool())
        .await
        .unwrap()
    };
    let before = counts().await;
    for start in ["2027-02-26", "2027-01-15", "2026-11-01"] {
        let mut again = candidate("cand-7");
        again["startDate"] = json!(start);
        again["jobTitle"] = json!("Changed");
        let r = push(&app, &token, &again).await;
        assert_eq!(r.status(), 422, "{start}");
        let p: Value = r.json().await.unwrap();
        assert_eq!(p["errors"][0]["field"], "startDate");
        assert_eq!(p["errors"][0]["code"], "before_termination");
        let message = p["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("after 2027-02-26"), "{message}");
    }
    assert_eq!(counts().await, before, "nothing written");
    let e = app.get_json(&format!("/v1/employees/{id}"), &token).await;
    assert_eq!(e["terminatedDate"], "2027-02-26");
    assert_ne!(e["jobTitle"], "Changed");

    let mut again = candidate("cand-7");
    again["startDate"] = json!("2027-02-27");
    assert_eq!(push(&app, &token, &again).await.status(), 201);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM employment_periods WHERE employee_id = $1",
            id
        )
        .await,
        2
    );
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
    // The same JSON from other client code (docs/api.md, "Idempotency"):
    // members in another order, other white space, is the same request.
    let body = candidate("cand-3");
    let members = body.as_object().unwrap();
    let mut names: Vec<&String> = members.keys().collect();
    names.reverse();
    let respelled = format!(
        "{{\n  {}\n}}",
        names
            .iter()
            .map(|n| format!("{}:{}", json!(n), members[*n]))
            .collect::<Vec<_>>()
            .join(",\n\t")
    );
    assert_ne!(respelled.as_bytes(), serde_json::to_vec(&body).unwrap());
    let retried = app
        .http
        .post(app.url("/v1/partners/i9s/section1"))
        .bearer_auth(&token)
        .header("idempotency-key", "ats-req-77")
        .header("content-type", "application/json")
        .body(respelled)
        .send()
        .await
        .unwrap();
    assert_eq!(retried.status(), 201);
    assert_eq!(retried.headers()["idempotent-replayed"], "true");
    assert_eq!(retried.json::<Value>().await.unwrap(), first);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
            first["id"].as_i64().unwrap()
        )
        .await,
        1
    );
    // Another body under the key is refused, and writes nothing.
    let mut other = candidate("cand-3");
    other["lastName"] = json!("Diaz-Ruiz");
    let r = app
        .http
        .post(app.url("/v1/partners/i9s/section1"))
        .bearer_auth(&token)
        .header("idempotency-key", "ats-req-77")
        .json(&other)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["errors"][0]["field"], "Idempotency-Key");
    assert_eq!(p["errors"][0]["code"], "reused");
    assert_eq!(
        app.count(
            "SELECT count(*) FROM employees WHERE last_name = 'Diaz-Ruiz' AND id > $1",
            0
        )
        .await,
        0
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

/// `(id, name)` of each item of a locations page; fails on any other field.
fn locations(page: &Value) -> Vec<(i64, String)> {
    page["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let fields: Vec<&String> = item.as_object().unwrap().keys().collect();
            assert_eq!(fields, ["id", "name"], "an item is its id and name only");
            (
                item["id"].as_i64().unwrap(),
                item["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_partner_lists_the_groups_it_may_hire_into() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let (west, portland, seattle, boston) = (
        app.group_id("West Region").await,
        app.group_id("Portland Warehouse").await,
        app.group_id("Seattle Office").await,
        app.group_id("Boston Office").await,
    );
    // ats.bot's group is West Region: it and the groups below it, by name.
    let page = app.get_json("/v1/partners/locations", &token).await;
    assert_eq!(
        locations(&page),
        [
            (portland, "Portland Warehouse".to_owned()),
            (seattle, "Seattle Office".to_owned()),
            (west, "West Region".to_owned()),
        ]
    );
    let href = |page: &Value, rel: &str| i9_tests::link(page, rel);
    assert_eq!(
        href(&page, "self").as_deref(),
        Some("/v1/partners/locations?page=1")
    );
    assert_eq!(
        href(&page, "last").as_deref(),
        Some("/v1/partners/locations?page=1")
    );
    assert_eq!((href(&page, "next"), href(&page, "previous")), (None, None));

    // Paging, and the counts cover the partner's groups only.
    let first = app
        .get_json("/v1/partners/locations?page_size=2", &token)
        .await;
    assert_eq!(
        i9_tests::ids(&first),
        [portland, seattle],
        "the first two by name"
    );
    assert_eq!(
        href(&first, "next").as_deref(),
        Some("/v1/partners/locations?page=2&page_size=2")
    );
    assert_eq!(
        href(&first, "last").as_deref(),
        Some("/v1/partners/locations?page=2&page_size=2")
    );
    let second = app.get_json(&href(&first, "next").unwrap(), &token).await;
    assert_eq!(i9_tests::ids(&second), [west]);
    assert_eq!(href(&second, "next"), None);
    assert_eq!(
        href(&second, "previous").as_deref(),
        Some("/v1/partners/locations?page=1&page_size=2")
    );

    // The name filter: exact, case-insensitive, within the partner's groups.
    let found = app
        .get_json("/v1/partners/locations?name=seattle%20OFFICE", &token)
        .await;
    assert_eq!(locations(&found), [(seattle, "Seattle Office".to_owned())]);
    assert_eq!(
        href(&found, "self").as_deref(),
        Some("/v1/partners/locations?name=seattle+OFFICE&page=1")
    );
    for outside in ["Boston%20Office", "Acme", "Seattle"] {
        let none = app
            .get_json(&format!("/v1/partners/locations?name={outside}"), &token)
            .await;
        assert_eq!(locations(&none), [], "{outside}");
    }
    let r = app.get("/v1/partners/locations?nam=West", &token).await;
    assert_eq!(r.status(), 400, "an unknown parameter");

    // Each listed id is a locationId the push accepts; Boston, not listed, is refused.
    for (n, id) in [west, portland, seattle].into_iter().enumerate() {
        let mut body = candidate(&format!("cand-loc-{n}"));
        body["locationId"] = json!(id);
        body["socialSecurityNumber"] = json!(format!("456-78-901{n}"));
        assert_eq!(push(&app, &token, &body).await.status(), 201, "{id}");
    }
    let mut body = candidate("cand-loc-boston");
    body["locationId"] = json!(boston);
    body["socialSecurityNumber"] = Value::Null;
    assert_eq!(push(&app, &token, &body).await.status(), 403);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM employees WHERE integration_client_id IS NOT NULL AND id > $1",
            0
        )
        .await,
        3
    );
}

#[tokio::test]
async fn a_partner_whose_role_has_permission_11_lists_every_group() {
    let app = spawn_app().await;
    sqlx::query(
        "INSERT INTO role_permissions (role_id, permission_id)
         SELECT id, 11 FROM roles WHERE name = 'Partner Integration'",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let token = partner_token(&app).await;
    let page = app.get_json("/v1/partners/locations", &token).await;
    let names: Vec<String> = locations(&page).into_iter().map(|(_, n)| n).collect();
    assert_eq!(
        names,
        [
            "Acme",
            "Boston Office",
            "East Region",
            "Portland Warehouse",
            "Seattle Office",
            "West Region"
        ]
    );
    let all: i64 = sqlx::query_scalar("SELECT count(*) FROM groups")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(names.len() as i64, all);
}

#[tokio::test]
async fn only_a_partner_token_with_permission_10_and_read_lists_locations() {
    let app = spawn_app().await;
    let forbidden = |r: reqwest::Response| async move {
        assert_eq!(r.status(), 403);
        r.json::<Value>().await.unwrap()["detail"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // The HR portal: a client that is not a partner, even for the partner's
    // own user (permission 10) or an administrator (every permission).
    for user in [ATS_BOT, ADMIN] {
        let portal = app.token(user).await;
        let detail = forbidden(app.get("/v1/partners/locations", &portal).await).await;
        assert!(detail.starts_with("Only a partner client"), "{detail}");
    }
    // The partner client, for a user without permission 10.
    let west = app.sign_in_with(ATS, WEST_HR, None).await;
    let detail = forbidden(
        app.get(
            "/v1/partners/locations",
            west["access_token"].as_str().unwrap(),
        )
        .await,
    )
    .await;
    assert!(detail.contains("permission 10"), "{detail}");
    // A partner token without the read scope.
    let write_only = app.sign_in_with(ATS, ATS_BOT, Some("write")).await;
    let r = app
        .get(
            "/v1/partners/locations",
            write_only["access_token"].as_str().unwrap(),
        )
        .await;
    assert_eq!(r.status(), 403);
    assert!(r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .contains("insufficient_scope"));
    // Reading is all there is.
    let token = partner_token(&app).await;
    let r = app
        .post_json("/v1/partners/locations", &token, &json!({}))
        .await;
    assert_eq!(r.status(), 405);
}

/// Terminate employee `id` as HR does (`PATCH terminatedDate`).
async fn terminate(app: &TestApp, id: i64, on: &str) {
    let admin = app.token(ADMIN).await;
    let r = app
        .patch_json(
            &format!("/v1/employees/{id}"),
            &admin,
            &json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3, "terminatedDate": on}),
        )
        .await;
    assert_eq!(r.status(), 200);
}

async fn i9s_of(app: &TestApp, employee: i64) -> Vec<(i64, String, Option<String>)> {
    sqlx::query_as(
        "SELECT id, status, integration_transaction_id FROM i9s WHERE employee_id = $1 ORDER BY id",
    )
    .bind(employee)
    .fetch_all(app.pool())
    .await
    .unwrap()
}

/// The partner trial's bug: a terminated candidate whose I-9 was still open
/// got a 201 and a link that stayed "being prepared" for good. Now the open
/// I-9 is parked in the push's transaction (its own event and audit entry),
/// the new I-9 is created, and the new link opens its form. Each I-9 keeps
/// the `IntegrationTransactionId` of the push that started it.
#[tokio::test]
async fn a_terminated_candidate_with_an_open_i9_is_rehired_and_the_old_i9_parked() {
    let (app, receiver) = spawn_partner_stack().await;
    let token = partner_token(&app).await;
    let mut body = candidate("cand-back");
    body["onboardingType"] = json!("on-site");
    body["startDate"] = json!("2026-11-05");
    let r = push(&app, &token, &body).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    eventually("the first I-9", || async { app.i9_count(id).await == 1 }).await;
    let first_push = app.get_json(&format!("/v1/employees/{id}"), &token).await
        ["IntegrationTransactionId"]
        .as_str()
        .unwrap()
        .to_owned();
    terminate(&app, id, "2026-12-20").await;

    body["startDate"] = json!("2027-03-01");
    let r = push(&app, &token, &body).await;
    assert_eq!(r.status(), 201);
    let again: Value = r.json().await.unwrap();
    assert_eq!(again["id"], id, "the same employee, re-hired");
    let second_push = app.get_json(&format!("/v1/employees/{id}"), &token).await
        ["IntegrationTransactionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(first_push, second_push);

    eventually("the new I-9", || async { app.i9_count(id).await == 2 }).await;
    let i9s = i9s_of(&app, id).await;
    let (old, new) = (i9s[0].0, i9s[1].0);
    assert_eq!(
        i9s,
        [
            (old, "Parked".to_owned(), Some(first_push.clone())),
            (
                new,
                "Section 1 Incomplete".to_owned(),
                Some(second_push.clone())
            ),
        ]
    );
    // The link of the answer opens the new I-9's form.
    let page = app
        .http
        .get(again["i9Section1Link"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("<form"), "the Section 1 form: {html}");

    // The records: each I-9 its own push's id, the employee the latest.
    let old_record = app.get_json(&format!("/v1/i9s/{old}"), &token).await;
    assert_eq!(old_record["i9Status"], "Parked");
    assert_eq!(old_record["IntegrationTransactionId"], first_push.as_str());
    assert!(
        old_record["i9Notes"]
            .as_str()
            .unwrap()
            .contains("re-hired through the partner operation"),
        "{old_record}"
    );
    let new_record = app.get_json(&format!("/v1/i9s/{new}"), &token).await;
    assert_eq!(new_record["IntegrationTransactionId"], second_push.as_str());
    // The park is the partner's, audited as such.
    let (client, detail): (Option<i64>, Value) = sqlx::query_as(
        "SELECT client_id, detail FROM audit_log WHERE action = 'i9.park' AND resource_id = $1",
    )
    .bind(old.to_string())
    .fetch_one(app.pool())
    .await
    .unwrap();
    let partner: i64 =
        sqlx::query_scalar("SELECT id FROM oauth_clients WHERE client_id = 'greenhouse-ats'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(client, Some(partner));
    assert!(detail["reason"]
        .as_str()
        .unwrap()
        .contains("re-hired through the partner operation"));

    // Exactly these callbacks, in this order.
    eventually("five callbacks", || async {
        receiver.received().len() == 5
    })
    .await;
    let mut events = verified(&receiver);
    events.sort_by_key(|e| e["sequence"].as_i64().unwrap());
    let seen: Vec<(i64, &str, Value, Value)> = events
        .iter()
        .map(|e| {
            (
                e["sequence"].as_i64().unwrap(),
                e["type"].as_str().unwrap(),
                e["i9Id"].clone(),
                e["IntegrationTransactionId"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (1, "i9.created", json!(old), json!(first_push)),
            (2, "employee.terminated", json!(old), json!(first_push)),
            (3, "i9.status_changed", json!(old), json!(first_push)),
            (4, "employee.rehired", json!(old), json!(first_push)),
            (5, "i9.created", json!(new), json!(second_push)),
        ]
    );
    assert_eq!(
        (&events[2]["i9Status"], &events[2]["previousI9Status"]),
        (&json!("Parked"), &json!("Section 1 Incomplete"))
    );
    assert_eq!(events[3]["startDate"], "2027-03-01");
    assert_eq!(events[4]["i9NextStepDueDate"], "2027-03-01");
    assert_eq!(
        recorded_events(&app, id).await.values().sum::<i64>(),
        5,
        "no other event recorded"
    );
    assert_match_the_contract(&webhook_validators(&app).await, &events);
}

/// A pending request of the ended employment (the worker has not made its
/// I-9 yet) is turned into its I-9 and parked, so the re-hire's request can
/// start; no remote-hire email is queued for the parked one.
#[tokio::test]
async fn a_rehire_parks_the_i9_request_of_the_ended_employment_still_pending() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let r = push(&app, &token, &candidate("cand-pending")).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    let first_push: String = sqlx::query_scalar(
        "SELECT integration_transaction_id FROM i9_requests WHERE employee_id = $1",
    )
    .bind(id)
    .fetch_one(app.pool())
    .await
    .unwrap();
    terminate(&app, id, "2026-12-20").await;
    let mut again = candidate("cand-pending");
    again["startDate"] = json!("2027-03-01");
    let r = push(&app, &token, &again).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());

    let requests: Vec<(Option<i64>, Option<String>)> = sqlx::query_as(
        "SELECT i9_id, integration_transaction_id FROM i9_requests WHERE employee_id = $1 ORDER BY created_at, id",
    )
    .bind(id)
    .fetch_all(app.pool())
    .await
    .unwrap();
    let i9s = i9s_of(&app, id).await;
    assert_eq!(i9s.len(), 1, "only the parked one: no worker here");
    assert_eq!(
        (i9s[0].1.as_str(), i9s[0].2.as_deref()),
        ("Parked", Some(first_push.as_str()))
    );
    assert_eq!(requests.len(), 2);
    let first = requests
        .iter()
        .find(|r| r.1.as_deref() == Some(first_push.as_str()))
        .unwrap();
    let second = requests.iter().find(|r| r != &first).unwrap();
    assert_eq!(
        first.0,
        Some(i9s[0].0),
        "the old request has its parked I-9"
    );
    assert_eq!(second.0, None, "the new request waits for the worker");
    let events: Vec<(i64, String)> = sqlx::query_as(
        "SELECT sequence, event_type FROM partner_events WHERE employee_id = $1 ORDER BY sequence",
    )
    .bind(id)
    .fetch_all(app.pool())
    .await
    .unwrap();
    let events: Vec<(i64, &str)> = events.iter().map(|(n, t)| (*n, t.as_str())).collect();
    assert_eq!(
        events,
        [
            (1, "employee.terminated"),
            (2, "i9.created"),
            (3, "i9.status_changed"),
            (4, "employee.rehired"),
        ]
    );
    let emails: i64 =
        sqlx::query_scalar("SELECT count(*) FROM job_outbox WHERE kind = 'send_remote_hire_email'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(
        emails, 0,
        "the worker queues the new I-9's email, nobody the parked one's"
    );
}

/// What a write to employee `id` leaves: its I-9s, I-9 requests, periods,
/// partner events, audit entries, and whether it is named Anna.
async fn footprint(app: &TestApp, id: i64) -> [i64; 6] {
    let mut out = [0; 6];
    for (n, sql) in [
        "SELECT count(*) FROM i9s WHERE employee_id = $1",
        "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
        "SELECT count(*) FROM employment_periods WHERE employee_id = $1",
        "SELECT count(*) FROM partner_events WHERE employee_id = $1",
        "SELECT count(*) FROM audit_log WHERE resource_id = ($1::BIGINT)::TEXT",
        "SELECT count(*) FROM employees WHERE id = $1 AND first_name = 'Anna'",
    ]
    .into_iter()
    .enumerate()
    {
        out[n] = app.count(sql, id).await;
    }
    out
}

/// A terminated candidate whose E-Verify case is still open (an unresolved
/// verification record) is not re-hired with a new I-9: 409 naming the case,
/// nothing written (docs/api.md, "I-9s"). Closed, the same push re-hires.
#[tokio::test]
async fn a_terminated_candidate_with_an_open_everify_case_is_a_409() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let first: Value = push(&app, &token, &candidate("cand-ev"))
        .await
        .json()
        .await
        .unwrap();
    let id = first["id"].as_i64().unwrap();
    sqlx::query("DELETE FROM i9_requests WHERE employee_id = $1")
        .bind(id)
        .execute(app.pool())
        .await
        .unwrap();
    let i9 = app.insert_i9(id, "Completed").await;
    let case: i64 = sqlx::query_scalar(
        "INSERT INTO everify_cases (i9_id, employee_id, legal_entity_id, program, case_number, status,
                                    created_on, created_by_user_id, creator_name)
         VALUES ($1, $2, (SELECT min(id) FROM legal_entities), 'simulator', $3, 'Referred',
                 DATE '2026-11-05', 1, 'Admin') RETURNING id",
    )
    .bind(i9)
    .bind(id)
    .bind("SIM000000000002")
    .fetch_one(app.pool())
    .await
    .unwrap();
    terminate(&app, id, "2026-12-20").await;
    let mut again = candidate("cand-ev");
    again["startDate"] = json!("2027-03-01");
    let before = footprint(&app, id).await;
    // Pushed with an Idempotency-Key: the 409 is not kept for replay, so
    // the same key serves the push after the case is closed (docs/partners.md).
    let keyed = || {
        app.http
            .post(app.url("/v1/partners/i9s/section1"))
            .bearer_auth(&token)
            .header("idempotency-key", "rehire-cand-ev")
            .json(&again)
            .send()
    };
    let r = keyed().await.unwrap();
    assert_eq!(r.status(), 409);
    let p: Value = r.json().await.unwrap();
    // Its own problem type, the case named by a member: no English to parse.
    assert_eq!(p["type"], "/problems/unresolved-verification", "{p}");
    assert_eq!(p["caseId"], case, "{p}");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("E-Verify case {case}")),
        "{detail}"
    );
    assert_eq!(footprint(&app, id).await, before, "nothing written");
    // The same key again, the case still open: the same 409, not a replay.
    let r = keyed().await.unwrap();
    assert_eq!(r.status(), 409);
    assert!(r.headers().get("idempotent-replayed").is_none());
    let kept: i64 =
        sqlx::query_scalar("SELECT count(*) FROM idempotency_keys WHERE idempotency_key = $1")
            .bind("rehire-cand-ev")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(kept, 0, "a 409 is not kept for replay");

    sqlx::query(
        "UPDATE everify_cases SET status = 'Closed', closed_on = DATE '2026-12-20',
                closure_reason = 'EMPLOYEE_QUIT' WHERE id = $1",
    )
    .bind(case)
    .execute(app.pool())
    .await
    .unwrap();
    let r = keyed().await.unwrap();
    assert_eq!(r.status(), 201);
    assert!(r.headers().get("idempotent-replayed").is_none());
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
            id
        )
        .await,
        1,
        "one new I-9 requested"
    );
    // The key now replays the 201.
    let r = keyed().await.unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["idempotent-replayed"], "true");
}

/// A candidate whose employee is still employed is a 409 whatever its I-9
/// (none open: approved, parked): the partner trial's active employee with a
/// closed I-9 silently got a second one. Nothing is written.
#[tokio::test]
async fn a_candidate_still_employed_is_a_409_whatever_its_i9() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let r = push(&app, &token, &candidate("cand-busy")).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    // Its I-9 made and approved.
    let i9 = app.insert_i9(id, "Approved").await;
    sqlx::query("UPDATE i9_requests SET i9_id = $2 WHERE employee_id = $1")
        .bind(id)
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    let before = footprint(&app, id).await;
    assert_eq!(before[..3], [1, 1, 1]);
    for status in ["Approved", "Parked"] {
        sqlx::query("UPDATE i9s SET status = $2 WHERE id = $1")
            .bind(i9)
            .bind(status)
            .execute(app.pool())
            .await
            .unwrap();
        let mut again = candidate("cand-busy");
        again["firstName"] = json!("Anna");
        again["startDate"] = json!("2027-03-01");
        let r = push(&app, &token, &again).await;
        assert_eq!(r.status(), 409, "{status}");
        let p: Value = r.json().await.unwrap();
        let detail = p["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("employee {id}")), "{detail}");
        assert!(detail.contains("terminates employee"), "{detail}");
        assert_eq!(
            footprint(&app, id).await,
            before,
            "nothing written ({status})"
        );
    }
}

/// A partner that lost the answer of a push finds its employee by the
/// candidate key (docs/partners.md, "Finding your employee").
#[tokio::test]
async fn a_partner_finds_its_employee_by_candidate_id() {
    let app = spawn_app().await;
    let token = partner_token(&app).await;
    let mut ids = Vec::new();
    for (candidate_id, ssn) in [
        ("cand-find-1", "456-78-9012"),
        ("cand-find-2", "456-78-9013"),
    ] {
        let mut body = candidate(candidate_id);
        body["socialSecurityNumber"] = json!(ssn);
        let r = push(&app, &token, &body).await;
        assert_eq!(r.status(), 201);
        ids.push(r.json::<Value>().await.unwrap()["id"].as_i64().unwrap());
    }
    let found = |q: &'static str| {
        let (app, token) = (&app, &token);
        async move {
            let page = app
                .get_json(&format!("/v1/employees?integrationCandidateId={q}"), token)
                .await;
            page["searchResult"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_i64().unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(found("cand-find-2").await, [ids[1]]);
    assert_eq!(found("CAND-FIND-1").await, [ids[0]], "case-insensitive");
    assert_eq!(found("cand-find-3").await, Vec::<i64>::new());
}
