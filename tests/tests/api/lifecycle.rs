//! The I-9 lifecycle after Section 1: Section 2 and its document rules,
//! complete, approve, park; every illegal step is a 409.

use i9_tests::{spawn_app, TestApp, ADMIN, BOSTON_VIEWER, WEST_HR};
use serde_json::{json, Value};

fn section2_bc() -> Value {
    json!({
        "listBDocTitle": "Driver's License", "listBDocIssuer": "Oregon DMV", "listBDocNumber": "D1234567",
        "listBDocExpiration": "2030-04-01", "listCDocTitle": "Social Security Card", "listCDocIssuer": "SSA",
        "listCDocNumber": "on file", "employerFirstName": "Wes", "employerLastName": "Turner",
        "employerTitle": "HR Manager", "employerBusiness": "Acme Staffing US LLC", "employerSignature": "Wes Turner"
    })
}

async fn step(
    app: &TestApp,
    token: &str,
    i9: i64,
    name: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut req = app
        .http
        .post(app.url(&format!("/v1/i9s/{i9}/{name}")))
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send().await.unwrap()
}

async fn status(r: reqwest::Response, expected: u16) -> Value {
    let code = r.status().as_u16();
    let body: Value = r.json().await.unwrap();
    assert_eq!(code, expected, "{body}");
    body
}

#[tokio::test]
async fn an_i9_goes_from_section_1_to_approved() {
    let app = spawn_app().await;
    let west = app.token(WEST_HR).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;

    let rec = status(
        step(&app, &west, i9, "section2", Some(section2_bc())).await,
        200,
    )
    .await;
    assert_eq!(rec["i9Status"], "Signed Sec 2");
    assert_eq!(rec["listBDocTitle"], "Driver's License");
    assert_eq!(rec["listCDocNumber"], "on file");
    assert_eq!(rec["employerLastName"], "Turner");
    assert_eq!(
        rec["signedDateEmployer"],
        chrono::Utc::now().date_naive().to_string()
    );
    let employee = app.get_json(&format!("/v1/employees/{maria}"), &west).await;
    assert_eq!(employee["i9Status"], "Signed Sec 2");

    let rec = status(step(&app, &west, i9, "complete", None).await, 200).await;
    assert_eq!(rec["i9Status"], "Completed");
    assert!(rec["dateCompleted"].is_string());
    let rec = status(step(&app, &west, i9, "approve", None).await, 200).await;
    assert_eq!(rec["i9Status"], "Approved");
    assert!(rec["dateApproved"].is_string());
    let actions: Vec<String> =
        sqlx::query_scalar("SELECT action FROM audit_log WHERE resource_type = 'i9' ORDER BY id")
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(actions, ["i9.section2", "i9.complete", "i9.approve"]);
}

#[tokio::test]
async fn every_illegal_step_is_a_409() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    // (status, steps that must be refused)
    let cases: &[(&str, &[&str])] = &[
        ("Section 1 Incomplete", &["section2", "complete", "approve"]),
        ("Signed Sec 1", &["complete", "approve"]),
        ("Signed Sec 2", &["section2", "approve"]),
        ("Completed", &["section2", "complete"]),
        ("Approved", &["section2", "complete", "approve", "park"]),
        ("Parked", &["section2", "complete", "approve", "park"]),
    ];
    for (from, refused) in cases {
        let i9 = app.insert_i9(maria, from).await;
        for s in *refused {
            let body = (*s == "section2").then(section2_bc);
            let p = status(step(&app, &token, i9, s, body).await, 409).await;
            assert!(
                p["detail"].as_str().unwrap().contains(from),
                "{from} {s}: {p}"
            );
        }
        let still: String = sqlx::query_scalar("SELECT status FROM i9s WHERE id = $1")
            .bind(i9)
            .fetch_one(app.pool())
            .await
            .unwrap();
        assert_eq!(&still, from, "nothing changed");
        // Close it so the next one may be open.
        sqlx::query("UPDATE i9s SET status = 'Approved' WHERE id = $1")
            .bind(i9)
            .execute(app.pool())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn parking_works_from_every_status_before_approved() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    for from in [
        "Section 1 Incomplete",
        "Signed Sec 1",
        "Signed Sec 2",
        "Completed",
    ] {
        let i9 = app.insert_i9(maria, from).await;
        let rec = status(
            step(
                &app,
                &token,
                i9,
                "park",
                Some(json!({"i9Notes": "waiting for documents"})),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(
            (rec["i9Status"].as_str(), rec["i9Notes"].as_str()),
            (Some("Parked"), Some("waiting for documents"))
        );
    }
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let rec = status(step(&app, &token, i9, "park", None).await, 200).await;
    assert_eq!(rec["i9Status"], "Parked", "the body is optional");
    let p = status(
        step(&app, &token, i9, "park", Some(json!({"i9Notes": "again"}))).await,
        409,
    )
    .await;
    assert_eq!(p["status"], 409);
    let p = status(
        step(&app, &token, i9, "park", Some(json!({"reason": "x"}))).await,
        422,
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "reason");
}

#[tokio::test]
async fn the_document_rules_are_enforced_and_every_problem_named() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let fields = |p: &Value| -> Vec<(String, String)> {
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
    let mut a_and_b = section2_bc();
    a_and_b["listA1DocTitle"] = json!("U.S. Passport");
    a_and_b["listA1DocIssuer"] = json!("U.S. Department of State");
    a_and_b["listA1DocNumber"] = json!("X1");
    let p = status(step(&app, &token, i9, "section2", Some(a_and_b)).await, 422).await;
    assert_eq!(
        fields(&p),
        [
            ("listA1DocTitle".into(), "combination".into()),
            ("listBDocTitle".into(), "combination".into())
        ]
    );

    let mut b_only = section2_bc();
    for k in ["listCDocTitle", "listCDocIssuer", "listCDocNumber"] {
        b_only.as_object_mut().unwrap().remove(k);
    }
    b_only["listBDocExpiration"] = json!("2020-01-01");
    b_only["employerSignature"] = json!("W. Turner");
    b_only["employerTitle"] = json!(null);
    b_only["shoeSize"] = json!(44);
    let p = status(step(&app, &token, i9, "section2", Some(b_only)).await, 422).await;
    let got = fields(&p);
    for (f, c) in [
        ("listBDocExpiration", "expired"),
        ("listCDocTitle", "required"),
        ("employerTitle", "required"),
        ("employerSignature", "signature_mismatch"),
        ("shoeSize", "unknown_field"),
    ] {
        assert!(
            got.contains(&(f.to_owned(), c.to_owned())),
            "{f}/{c} in {got:?}"
        );
    }
    let mut wrong_title = section2_bc();
    wrong_title["listCDocTitle"] = json!("U.S. Passport");
    let p = status(
        step(&app, &token, i9, "section2", Some(wrong_title)).await,
        422,
    )
    .await;
    assert_eq!(
        fields(&p),
        [("listCDocTitle".into(), "invalid_value".into())]
    );
    let still: String = sqlx::query_scalar("SELECT status FROM i9s WHERE id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(still, "Signed Sec 1", "a refused Section 2 writes nothing");
}

/// The HR engineer's trial: `driver's license` was refused for its letter
/// case. A title is accepted in any letter case, with white space around
/// it, and stored as the list writes it; another spelling is still refused.
#[tokio::test]
async fn document_titles_are_accepted_in_any_letter_case_and_stored_as_listed() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let mut misspelt = section2_bc();
    misspelt["listBDocTitle"] = json!("Drivers License");
    let p = status(
        step(&app, &token, i9, "section2", Some(misspelt)).await,
        422,
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "listBDocTitle");
    assert_eq!(p["errors"][0]["code"], "invalid_value");

    let mut body = section2_bc();
    body["listBDocTitle"] = json!("  DRIVER'S license ");
    body["listCDocTitle"] = json!("social security CARD");
    let rec = status(step(&app, &token, i9, "section2", Some(body)).await, 200).await;
    assert_eq!(rec["listBDocTitle"], "Driver's License");
    assert_eq!(rec["listCDocTitle"], "Social Security Card");
    let stored: (String, String) =
        sqlx::query_as("SELECT list_b_doc_title, list_c_doc_title FROM i9s WHERE id = $1")
            .bind(i9)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(
        stored,
        ("Driver's License".into(), "Social Security Card".into())
    );

    // A List A title too, on another I-9.
    let aisha = app.employee_id("EMP-1003").await;
    let other = app.insert_i9(aisha, "Signed Sec 1").await;
    let list_a = json!({
        "listA1DocTitle": "u.s. passport", "listA1DocIssuer": "U.S. Department of State",
        "listA1DocNumber": "X1", "listA1DocExpiration": "2031-01-01", "employerFirstName": "Wes",
        "employerLastName": "Turner", "employerTitle": "HR Manager",
        "employerBusiness": "Acme Staffing US LLC", "employerSignature": "Wes Turner"
    });
    let rec = status(
        step(&app, &token, other, "section2", Some(list_a)).await,
        200,
    )
    .await;
    assert_eq!(rec["listA1DocTitle"], "U.S. Passport");
}

#[tokio::test]
async fn i9_expiration_is_the_earlier_of_the_work_authorization_and_the_document() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    sqlx::query("UPDATE i9s SET attestation = 'alien authorized to work', work_authorization_expiration = DATE '2028-01-15' WHERE id = $1")
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    let body = json!({
        "listA1DocTitle": "Employment Authorization Document (Form I-766)", "listA1DocIssuer": "USCIS",
        "listA1DocNumber": "SRC0000000000", "listA1DocExpiration": "2027-09-30",
        "employerFirstName": "Ada", "employerLastName": "Admin", "employerTitle": "Administrator",
        "employerBusiness": "Acme", "employerSignature": "Ada Admin"
    });
    let rec = status(step(&app, &token, i9, "section2", Some(body)).await, 200).await;
    assert_eq!(rec["i9Expiration"], "2027-09-30");
    let employee = app
        .get_json(&format!("/v1/employees/{maria}"), &token)
        .await;
    assert_eq!(employee["i9Expiration"], "2027-09-30");
}

#[tokio::test]
async fn the_retention_date_follows_termination() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await; // hired 2026-10-05
    let i9 = app.insert_i9(maria, "Approved").await;
    let rec = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_eq!(rec["retentionDate"], Value::Null, "no date while employed");
    let portland = app.group_id("Portland Warehouse").await;
    let patch = |end: &str| json!({"firstName": "Maria", "lastName": "Lopez", "locationId": portland, "terminatedDate": end});
    assert_eq!(
        app.patch_json(
            &format!("/v1/employees/{maria}"),
            &token,
            &patch("2026-11-30")
        )
        .await
        .status(),
        200
    );
    let rec = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_eq!(
        rec["retentionDate"], "2029-10-05",
        "hire + 3 years is later"
    );
    // A long employment: termination + 1 year is later.
    let james = app.employee_id("EMP-1002").await; // 2025-01-13 to 2026-06-30
    let i9 = app.insert_i9(james, "Approved").await;
    sqlx::query(
        "UPDATE employment_periods SET start_date = DATE '2020-01-06' WHERE employee_id = $1",
    )
    .bind(james)
    .execute(app.pool())
    .await
    .unwrap();
    sqlx::query("UPDATE i9s SET start_date = DATE '2020-01-06' WHERE id = $1")
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    let rec = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_eq!(rec["retentionDate"], "2027-06-30");
}

#[tokio::test]
async fn steps_need_their_permission_and_visibility() {
    let app = spawn_app().await;
    let aisha = app.employee_id("EMP-1003").await; // Boston
    let i9 = app.insert_i9(aisha, "Completed").await;
    let viewer = app.token(BOSTON_VIEWER).await; // no permission 4 or 5
    for s in ["complete", "approve", "park"] {
        assert_eq!(step(&app, &viewer, i9, s, None).await.status(), 403, "{s}");
    }
    let west = app.token(WEST_HR).await; // permissions 4 and 5, but not Boston
    assert_eq!(step(&app, &west, i9, "approve", None).await.status(), 404);
    let reader = app.sign_in_with(i9_tests::REPORTING, ADMIN, None).await;
    let r = step(
        &app,
        reader["access_token"].as_str().unwrap(),
        i9,
        "approve",
        None,
    )
    .await;
    assert_eq!(r.status(), 403, "the write scope is needed");
}

#[tokio::test]
async fn concurrent_steps_on_one_i9_take_turns_and_an_illegal_one_writes_nothing() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Completed").await;
    // Approve twice and park, all at once: each is judged on the status the
    // one before left (docs/api.md, "The I-9's states").
    let (a, b, c) = tokio::join!(
        step(&app, &token, i9, "approve", None),
        step(&app, &token, i9, "approve", None),
        step(&app, &token, i9, "park", None),
    );
    let mut codes = [
        a.status().as_u16(),
        b.status().as_u16(),
        c.status().as_u16(),
    ];
    codes.sort_unstable();
    // Exactly one step won: the first approval (then the rest are refused) or
    // the park (then both approvals are).
    assert_eq!(codes, [200, 409, 409]);
    let actions: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log
         WHERE resource_type = 'i9' AND resource_id = $1 AND action LIKE 'i9.%'",
    )
    .bind(i9.to_string())
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(
        actions.len(),
        1,
        "one audit entry, of the step that won: {actions:?}"
    );
    let final_status: String = sqlx::query_scalar("SELECT status FROM i9s WHERE id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap();
    let expected = if actions[0] == "i9.approve" {
        "Approved"
    } else {
        "Parked"
    };
    assert_eq!(final_status, expected);
}

#[tokio::test]
async fn a_step_body_over_the_limit_is_a_413_problem() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let big = json!({"i9Notes": "x".repeat(300 * 1024)});
    for s in ["section2", "park"] {
        let r = step(&app, &token, i9, s, Some(big.clone())).await;
        assert_eq!(r.status(), 413, "{s}");
        assert_eq!(
            r.headers()["content-type"],
            "application/problem+json",
            "{s}"
        );
        let p: Value = r.json().await.unwrap();
        assert_eq!(p["status"], 413, "{s}: {p}");
    }
    let still: String = sqlx::query_scalar("SELECT status FROM i9s WHERE id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(still, "Signed Sec 1", "nothing written");
}
