//! POST and PATCH /v1/employees: every rule of the specification's table and
//! docs/api.md, "Writing employees", each error with its status and the fields it names.

use i9_tests::{spawn_app, TestApp, ADMIN, ATS_BOT, WEST_HR};
use serde_json::{json, Value};

async fn problem(r: reqwest::Response, status: u16) -> Value {
    assert_eq!(r.status(), status, "status");
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    r.json().await.unwrap()
}

fn fields(body: &Value) -> Vec<(String, String)> {
    body["errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["field"].as_str().unwrap().to_owned(),
                        e["code"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn counts(app: &TestApp) -> (i64, i64, i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM employees), (SELECT count(*) FROM employment_periods),
                (SELECT count(*) FROM job_outbox), (SELECT count(*) FROM i9_requests)",
    )
    .fetch_one(app.pool())
    .await
    .unwrap()
}

fn ana() -> Value {
    json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3, "startDate": "11/05/2026",
           "socialSecurityNumber": "456-78-9012", "emailAddress": "ana.diaz@mail.example",
           "profileId": "EMP-2001", "jobTitle": "Picker", "languagePreference": 2, "custom3": "night shift"})
}

#[tokio::test]
async fn create_answers_201_with_location_and_the_full_record() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let mut body = ana();
    body["locationId"] = json!(app.group_id("Portland Warehouse").await);
    body["id"] = json!(999); // ignored on POST
    let r = app.post_json("/v1/employees", &token, &body).await;
    assert_eq!(r.status(), 201);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let created: Value = r.json().await.unwrap();
    let id = created["id"].as_i64().unwrap();
    assert_ne!(id, 999);
    assert_eq!(location, format!("/v1/employees/{id}"));
    assert_eq!(created["fullName"], "Diaz, Ana");
    assert_eq!(
        created["startDate"], "2026-11-05",
        "MM/DD/YYYY accepted, YYYY-MM-DD returned"
    );
    assert_eq!(created["socialSecurityNumber"], "456-78-9012");
    assert_eq!(created["languagePreference"], 2);
    assert_eq!(created["custom3"], "night shift");
    assert_eq!(created["i9Status"], "Not Started");
    assert_eq!(created["i9FormSection1Link"], Value::Null);
    let fetched = app.get_json(&location, &token).await;
    assert_eq!(fetched["profileId"], "EMP-2001");
    // An employee without an I-9 links to its (empty) list of I-9s all the same.
    let i9s = format!("/v1/i9s?employeeId={id}");
    for record in [&created, &fetched] {
        assert_eq!(
            record["links"],
            json!([{"rel": "self", "href": location}, {"rel": "i9s", "href": i9s},
                   {"rel": "periods", "href": format!("/v1/employees/{id}/periods")}])
        );
    }
    let list = app.get_json(&i9s, &token).await;
    assert_eq!(list["searchResult"], json!([]), "{list}");
    let audit: (String, Option<String>) =
        sqlx::query_as("SELECT action, request_id FROM audit_log WHERE action = 'employee.create' AND resource_id = $1")
            .bind(id.to_string())
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert!(audit.1.is_some(), "the request id is recorded");
    let detail: Value =
        sqlx::query_scalar("SELECT detail FROM audit_log WHERE action = 'employee.create'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert!(
        !detail.to_string().contains("456-78"),
        "names of fields, never values"
    );
}

#[tokio::test]
async fn every_invalid_field_is_named_at_once_and_nothing_is_written() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let before = counts(&app).await;
    let body = json!({
        "firstName": "x".repeat(41), "lastName": "", "locationId": "3", "middleName": "m".repeat(26),
        "socialSecurityNumber": "123-45-678", "dateOfBirth": "1990-13-01", "startDate": 20261105,
        "profileId": "p".repeat(31), "otherName": "o".repeat(41), "jobTitle": "j".repeat(81),
        "emailAddress": "nobody", "languagePreference": 3, "custom8": "c".repeat(256),
        "notificationEmail2": "also not an email", "addressState": "s".repeat(21), "addressZip": "12345-67890",
        "workExtension": "12345678901", "createLogin": "yes", "sendLoginEmail": 1, "createI9": "Yes",
        "favouriteColour": "blue"
    });
    let r = app.post_json("/v1/employees", &token, &body).await;
    let p = problem(r, 422).await;
    assert_eq!(p["type"], "/problems/validation-error");
    let got = fields(&p);
    for (field, code) in [
        ("firstName", "too_long"),
        ("lastName", "required"),
        ("locationId", "invalid_type"),
        ("middleName", "too_long"),
        ("socialSecurityNumber", "invalid_format"),
        ("dateOfBirth", "invalid_date"),
        ("startDate", "invalid_type"),
        ("profileId", "too_long"),
        ("otherName", "too_long"),
        ("jobTitle", "too_long"),
        ("emailAddress", "invalid_format"),
        ("languagePreference", "invalid_value"),
        ("custom8", "too_long"),
        ("notificationEmail2", "invalid_format"),
        ("addressState", "too_long"),
        ("addressZip", "too_long"),
        ("workExtension", "too_long"),
        ("createLogin", "invalid_type"),
        ("sendLoginEmail", "invalid_type"),
        ("createI9", "invalid_value"),
        ("favouriteColour", "unknown_field"),
    ] {
        assert!(
            got.contains(&(field.to_owned(), code.to_owned())),
            "{field}/{code} missing from {got:?}"
        );
    }
    assert_eq!(got.len(), 21, "{got:?}");
    assert!(
        !p.to_string().contains("123-45-678"),
        "no SSN in an error body"
    );
    assert_eq!(counts(&app).await, before, "nothing written");
}

/// HR trial: a create with `"startDate": "2026-02-30"` and a
/// `terminatedDate` named startDate twice, `invalid_date` and `required`,
/// although a start date was sent. `required` is for one absent or null
/// (docs/api.md, "Periods of employment"); a re-hire the same.
#[tokio::test]
async fn an_invalid_start_date_is_named_once_not_also_required() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let before = counts(&app).await;
    let hire = |start: Value| {
        let mut b = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3,
                           "terminatedDate": "2026-06-30"});
        if start != json!("absent") {
            b["startDate"] = start;
        }
        b
    };
    for (start, code) in [
        (json!("2026-02-30"), "invalid_date"),
        (json!(null), "required"),
        (json!("absent"), "required"),
    ] {
        let r = app
            .post_json("/v1/employees", &token, &hire(start.clone()))
            .await;
        let p = problem(r, 422).await;
        assert_eq!(fields(&p), [("startDate".into(), code.into())], "{start}");
    }
    let james = app.employee_id("EMP-1002").await; // terminated 2026-06-30
    let seattle = app.group_id("Seattle Office").await;
    let r = app
        .patch_json(
            &format!("/v1/employees/{james}"),
            &token,
            &json!({"firstName": "James", "lastName": "Chen", "locationId": seattle,
                    "rehire": "yes", "startDate": "2026-02-30"}),
        )
        .await;
    let p = problem(r, 422).await;
    assert_eq!(fields(&p), [("startDate".into(), "invalid_date".into())]);
    assert_eq!(counts(&app).await, before, "nothing written");
}

#[tokio::test]
async fn the_i9_choices_are_exact_and_mutually_exclusive() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    for bad in ["Yes", "YES", "If allowed", "true"] {
        let mut body = ana();
        body["createI9"] = json!(bad);
        let p = problem(app.post_json("/v1/employees", &token, &body).await, 422).await;
        assert_eq!(
            fields(&p),
            [("createI9".into(), "invalid_value".into())],
            "{bad}"
        );
        let mut body = ana();
        body["createRemotehireI9"] = json!(bad);
        let p = problem(app.post_json("/v1/employees", &token, &body).await, 422).await;
        assert_eq!(
            fields(&p),
            [("createRemotehireI9".into(), "invalid_value".into())],
            "{bad}"
        );
    }
    let mut body = ana();
    body["createI9"] = json!("yes");
    body["createRemoteHireI9"] = json!("if allowed");
    let p = problem(app.post_json("/v1/employees", &token, &body).await, 422).await;
    assert_eq!(
        fields(&p),
        [
            ("createI9".into(), "mutually_exclusive".into()),
            ("createRemoteHireI9".into(), "mutually_exclusive".into())
        ]
    );
    assert_eq!(counts(&app).await.0, 3);
}

#[tokio::test]
async fn remote_hire_and_sign_ins_need_an_email_address() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let mut body = ana();
    body.as_object_mut().unwrap().remove("emailAddress");
    for (flag, value) in [
        ("createRemotehireI9", json!("yes")),
        ("createLogin", json!(true)),
    ] {
        let mut b = body.clone();
        b[flag] = value;
        let p = problem(app.post_json("/v1/employees", &token, &b).await, 422).await;
        assert_eq!(
            fields(&p),
            [("emailAddress".into(), "required".into())],
            "{flag}"
        );
    }
    // Sending a login email needs a sign-in.
    let mut b = ana();
    b["sendLoginEmail"] = json!(true);
    let p = problem(app.post_json("/v1/employees", &token, &b).await, 422).await;
    assert_eq!(fields(&p), [("sendLoginEmail".into(), "no_login".into())]);
    assert_eq!(counts(&app).await.0, 3);
}

#[tokio::test]
async fn references_must_exist_and_groups_must_be_the_callers() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let mut body = ana();
    body["locationId"] = json!(999_999);
    body["legalEntity"] = json!(888_888);
    let p = problem(app.post_json("/v1/employees", &admin, &body).await, 422).await;
    assert_eq!(
        fields(&p),
        [
            ("locationId".into(), "not_found".into()),
            ("legalEntity".into(), "not_found".into())
        ]
    );
    // West's HR manager cannot create an employee in Boston, nor move one there.
    let west = app.token(WEST_HR).await;
    let mut body = ana();
    body["locationId"] = json!(app.group_id("Boston Office").await);
    problem(app.post_json("/v1/employees", &west, &body).await, 403).await;
    let maria = app.employee_id("EMP-1001").await;
    let patch = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": app.group_id("Boston Office").await});
    problem(
        app.patch_json(&format!("/v1/employees/{maria}"), &west, &patch)
            .await,
        403,
    )
    .await;
    // ...nor touch an employee it cannot see (404, as if absent).
    let aisha = app.employee_id("EMP-1003").await;
    let patch = json!({"firstName": "A", "lastName": "O", "locationId": app.group_id("Seattle Office").await});
    problem(
        app.patch_json(&format!("/v1/employees/{aisha}"), &west, &patch)
            .await,
        404,
    )
    .await;
    assert_eq!(counts(&app).await.0, 3);
    let loc: i64 = sqlx::query_scalar("SELECT location_id FROM employees WHERE id = $1")
        .bind(maria)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(loc, app.group_id("Portland Warehouse").await);
}

#[tokio::test]
async fn duplicates_are_409_naming_the_existing_employee() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    for (field, value) in [
        ("profileId", "emp-1001"),
        ("socialSecurityNumber", "123-45-6789"),
    ] {
        let mut body = ana();
        body[field] = json!(value);
        let p = problem(app.post_json("/v1/employees", &token, &body).await, 409).await;
        let detail = p["detail"].as_str().unwrap();
        assert!(
            detail.contains(&format!("employee {maria}")) && detail.contains(field),
            "{detail}"
        );
        assert!(!detail.contains("123-45"));
    }
    // PATCH may not take another employee's number either.
    let james = app.employee_id("EMP-1002").await;
    let patch = json!({"firstName": "James", "lastName": "Chen", "locationId": app.group_id("Seattle Office").await,
                       "socialSecurityNumber": "123-45-6789"});
    problem(
        app.patch_json(&format!("/v1/employees/{james}"), &token, &patch)
            .await,
        409,
    )
    .await;
    assert_eq!(counts(&app).await.0, 3);
}

#[tokio::test]
async fn fields_the_operation_does_not_accept_are_named() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let mut body = ana();
    body["rehire"] = json!("yes");
    body["integrationCandidateId"] = json!("c-17");
    body["onboardingType"] = json!("remote");
    let p = problem(app.post_json("/v1/employees", &token, &body).await, 422).await;
    let got = fields(&p);
    for f in ["rehire", "integrationCandidateId", "onboardingType"] {
        assert!(
            got.contains(&(f.to_owned(), "not_accepted".to_owned())),
            "{f}: {got:?}"
        );
    }
}

#[tokio::test]
async fn bodies_must_be_json_objects_of_bounded_size() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let send = |ct: &'static str, body: Vec<u8>| {
        app.http
            .post(app.url("/v1/employees"))
            .bearer_auth(&token)
            .header("content-type", ct)
            .body(body)
            .send()
    };
    problem(send("text/plain", b"{}".to_vec()).await.unwrap(), 415).await;
    problem(
        send("application/json", b"{\"firstName\": ".to_vec())
            .await
            .unwrap(),
        400,
    )
    .await;
    problem(
        send("application/json", b"[1, 2]".to_vec()).await.unwrap(),
        400,
    )
    .await;
    problem(
        send("application/json", b"\xff\xfe".to_vec())
            .await
            .unwrap(),
        400,
    )
    .await;
    let big = format!("{{\"custom1\": \"{}\"}}", "x".repeat(300 * 1024));
    problem(
        send("application/json", big.into_bytes()).await.unwrap(),
        413,
    )
    .await;
    // The write scope is needed, and the permission.
    let read_only = app.sign_in_with(i9_tests::REPORTING, ADMIN, None).await;
    let r = app
        .post_json(
            "/v1/employees",
            read_only["access_token"].as_str().unwrap(),
            &ana(),
        )
        .await;
    assert_eq!(
        problem(r, 403).await["type"],
        "/problems/insufficient-scope"
    );
    let viewer = app.token(i9_tests::BOSTON_VIEWER).await;
    assert_eq!(
        problem(app.post_json("/v1/employees", &viewer, &ana()).await, 403).await["type"],
        "/problems/forbidden"
    );
    assert_eq!(counts(&app).await.0, 3);
}

#[tokio::test]
async fn patch_requires_the_table_fields_and_updates_what_it_is_given() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let path = format!("/v1/employees/{maria}");
    let p = problem(
        app.patch_json(&path, &token, &json!({"jobTitle": "Lead"}))
            .await,
        422,
    )
    .await;
    assert_eq!(
        fields(&p),
        [
            ("firstName".into(), "required".into()),
            ("lastName".into(), "required".into()),
            ("locationId".into(), "required".into())
        ]
    );
    let portland = app.group_id("Portland Warehouse").await;
    let p = problem(
        app.patch_json(&path, &token, &json!({"id": maria + 1, "firstName": "Maria", "lastName": "Lopez", "locationId": portland})).await,
        422,
    )
    .await;
    assert_eq!(fields(&p), [("id".into(), "mismatch".into())]);
    let r = app
        .patch_json(
            &path,
            &token,
            &json!({"id": maria, "firstName": "María", "lastName": "López", "locationId": portland,
                                           "jobTitle": "Shift Lead", "middleName": null}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let rec: Value = r.json().await.unwrap();
    assert_eq!(
        (rec["fullName"].as_str(), rec["jobTitle"].as_str()),
        (Some("López, María"), Some("Shift Lead"))
    );
    assert_eq!(
        rec["middleName"],
        Value::Null,
        "null clears an optional field"
    );
    assert_eq!(
        rec["socialSecurityNumber"], "123-45-6789",
        "absent fields are kept"
    );
    assert_eq!(rec["addressCity"], "Portland");
    problem(
        app.patch_json(
            "/v1/employees/999999",
            &token,
            &json!({"firstName": "A", "lastName": "B", "locationId": portland}),
        )
        .await,
        404,
    )
    .await;
}

#[tokio::test]
async fn termination_changes_the_current_period_and_rehire_adds_one() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await; // active, started 2026-10-05
    let james = app.employee_id("EMP-1002").await; // terminated 2026-06-30
    let portland = app.group_id("Portland Warehouse").await;
    let seattle = app.group_id("Seattle Office").await;
    let m = |extra: Value| {
        let mut b = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": portland});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let j = |extra: Value| {
        let mut b = json!({"firstName": "James", "lastName": "Chen", "locationId": seattle});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let periods = |id: i64| {
        app.count(
            "SELECT count(*) FROM employment_periods WHERE employee_id = $1",
            id,
        )
    };

    // terminatedDate before the period's start: 422.
    let p = problem(
        app.patch_json(
            &format!("/v1/employees/{maria}"),
            &token,
            &m(json!({"terminatedDate": "2026-10-01"})),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(
        fields(&p),
        [("terminatedDate".into(), "before_start".into())]
    );
    // Re-hiring an active employee: 409. Without startDate: 422.
    problem(
        app.patch_json(
            &format!("/v1/employees/{maria}"),
            &token,
            &m(json!({"rehire": "yes", "startDate": "2026-12-01"})),
        )
        .await,
        409,
    )
    .await;
    let p = problem(
        app.patch_json(
            &format!("/v1/employees/{james}"),
            &token,
            &j(json!({"rehire": "yes"})),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(fields(&p), [("startDate".into(), "required".into())]);
    let p = problem(
        app.patch_json(
            &format!("/v1/employees/{james}"),
            &token,
            &j(json!({"rehire": "Yes", "startDate": "2026-12-01"})),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(fields(&p), [("rehire".into(), "invalid_value".into())]);
    assert_eq!(periods(maria).await + periods(james).await, 2);

    // Terminate Maria: the current period changes, no new one.
    let r = app
        .patch_json(
            &format!("/v1/employees/{maria}"),
            &token,
            &m(json!({"terminatedDate": "2026-11-30"})),
        )
        .await;
    assert_eq!(r.status(), 200);
    let rec: Value = r.json().await.unwrap();
    assert_eq!(
        (rec["startDate"].as_str(), rec["terminatedDate"].as_str()),
        (Some("2026-10-05"), Some("2026-11-30"))
    );
    assert_eq!(periods(maria).await, 1);
    // A terminated period keeps its start: clearing it is a 422, nothing written.
    let p = problem(
        app.patch_json(
            &format!("/v1/employees/{maria}"),
            &token,
            &m(json!({"startDate": null, "jobTitle": "Driver"})),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(fields(&p), [("startDate".into(), "required".into())]);
    let rec: Value = app
        .get_json(&format!("/v1/employees/{maria}"), &token)
        .await;
    assert_eq!(rec["startDate"], "2026-10-05");
    assert_ne!(rec["jobTitle"], "Driver", "nothing half-written");
    // Nor does a create begin with a terminated period without a start.
    let before = app
        .count("SELECT count(*) FROM employees WHERE id > $1", 0)
        .await;
    let p = problem(
        app.post_json(
            "/v1/employees",
            &token,
            &json!({"firstName": "Ana", "lastName": "Diaz", "locationId": portland,
                    "terminatedDate": "2026-11-01"}),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(fields(&p), [("startDate".into(), "required".into())]);
    assert_eq!(
        app.count("SELECT count(*) FROM employees WHERE id > $1", 0)
            .await,
        before
    );

    // Re-hire James: a new period.
    let r = app
        .patch_json(
            &format!("/v1/employees/{james}"),
            &token,
            &j(json!({"rehire": "yes", "startDate": "12/01/2026"})),
        )
        .await;
    assert_eq!(r.status(), 200);
    let rec: Value = r.json().await.unwrap();
    assert_eq!(
        (rec["startDate"].as_str(), rec["terminatedDate"].as_str()),
        (Some("2026-12-01"), None)
    );
    assert_eq!(periods(james).await, 2);
    let old: (chrono::NaiveDate, Option<chrono::NaiveDate>) =
        sqlx::query_as("SELECT start_date, terminated_date FROM employment_periods WHERE employee_id = $1 ORDER BY id LIMIT 1")
            .bind(james)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(
        old.1.map(|d| d.to_string()),
        Some("2026-06-30".to_owned()),
        "the old period is kept"
    );
    // Now active: another re-hire is a conflict.
    problem(
        app.patch_json(
            &format!("/v1/employees/{james}"),
            &token,
            &j(json!({"rehire": "yes", "startDate": "2027-01-04"})),
        )
        .await,
        409,
    )
    .await;
}

/// An employee's periods of employment, oldest first, as stored.
async fn periods_of(app: &TestApp, id: i64) -> Vec<(Option<String>, Option<String>)> {
    sqlx::query_as::<_, (Option<chrono::NaiveDate>, Option<chrono::NaiveDate>)>(
        "SELECT start_date, terminated_date FROM employment_periods WHERE employee_id = $1 ORDER BY id",
    )
    .bind(id)
    .fetch_all(app.pool())
    .await
    .unwrap()
    .into_iter()
    .map(|(s, t)| (s.map(|d| d.to_string()), t.map(|d| d.to_string())))
    .collect()
}

/// Review: `"startDate": null` on a re-hired employee's current period (not
/// terminated) was a 200 that left the period without a start. A re-hire's
/// period keeps its start whatever its termination state: 422 (`startDate`,
/// `required`), nothing written. A first period that is not terminated may
/// still be cleared, as a create may leave it unset (docs/api.md, "Periods
/// of employment").
#[tokio::test]
async fn a_rehire_period_keeps_its_start_date_and_a_running_first_period_may_clear_it() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await; // active, started 2026-10-05, one period
    let james = app.employee_id("EMP-1002").await; // terminated 2026-06-30
    let portland = app.group_id("Portland Warehouse").await;
    let seattle = app.group_id("Seattle Office").await;
    let j = |extra: Value| {
        let mut b = json!({"firstName": "James", "lastName": "Chen", "locationId": seattle});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let path = format!("/v1/employees/{james}");
    let r = app
        .patch_json(
            &path,
            &token,
            &j(json!({"rehire": "yes", "startDate": "2026-12-01"})),
        )
        .await;
    assert_eq!(r.status(), 200);
    let date = |d: &str| Some(d.to_owned());
    let rehired = vec![
        (date("2025-01-13"), date("2026-06-30")),
        (date("2026-12-01"), None),
    ];
    assert_eq!(periods_of(&app, james).await, rehired);
    let audit = |id: i64| {
        app.count(
            "SELECT count(*) FROM audit_log WHERE resource_type = 'employee' AND resource_id = $1::TEXT
               AND action = 'employee.update'",
            id,
        )
    };
    let audited = audit(james).await;

    // The re-hire's period running: clearing its start is a 422, nothing written.
    for body in [
        json!({"startDate": null, "jobTitle": "Driver"}),
        json!({"startDate": "", "jobTitle": "Driver"}),
        json!({"startDate": null, "terminatedDate": null, "jobTitle": "Driver"}),
    ] {
        let p = problem(app.patch_json(&path, &token, &j(body.clone())).await, 422).await;
        assert_eq!(
            fields(&p),
            [("startDate".into(), "required".into())],
            "{body}"
        );
        assert!(
            p["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("re-hire"),
            "{p}"
        );
    }
    assert_eq!(periods_of(&app, james).await, rehired);
    let rec = app.get_json(&path, &token).await;
    assert_eq!(rec["startDate"], "2026-12-01");
    assert_ne!(rec["jobTitle"], "Driver", "nothing half-written");
    assert_eq!(audit(james).await, audited, "no update recorded");

    // Terminated again: still a 422 (the terminated period's own rule).
    let r = app
        .patch_json(&path, &token, &j(json!({"terminatedDate": "2027-01-31"})))
        .await;
    assert_eq!(r.status(), 200);
    let p = problem(
        app.patch_json(&path, &token, &j(json!({"startDate": null})))
            .await,
        422,
    )
    .await;
    assert_eq!(fields(&p), [("startDate".into(), "required".into())]);
    assert_eq!(
        periods_of(&app, james).await[1],
        (date("2026-12-01"), date("2027-01-31"))
    );

    // A first period that runs may be cleared (a create may leave it unset),
    // and given again.
    let m = |extra: Value| {
        let mut b = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": portland});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let maria_path = format!("/v1/employees/{maria}");
    let r = app
        .patch_json(&maria_path, &token, &m(json!({"startDate": null})))
        .await;
    assert_eq!(r.status(), 200);
    let rec: Value = r.json().await.unwrap();
    assert_eq!(rec["startDate"], Value::Null);
    assert_eq!(periods_of(&app, maria).await, [(None, None)]);
    let r = app
        .patch_json(&maria_path, &token, &m(json!({"startDate": "2026-10-05"})))
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(periods_of(&app, maria).await, [(date("2026-10-05"), None)]);
}

/// The HR engineer's trial: a re-hire dated on or before the last
/// termination (or before the first hire) was a 200 with overlapping
/// periods. Periods never overlap: a 422 on `startDate` naming the date it
/// must follow, with the body's other errors, and nothing written; the same
/// for moving the current period's start back into the previous one.
#[tokio::test]
async fn periods_of_employment_never_overlap() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await; // 2025-01-13 to 2026-06-30
    let seattle = app.group_id("Seattle Office").await;
    let path = format!("/v1/employees/{james}");
    let j = |extra: Value| {
        let mut b = json!({"firstName": "James", "lastName": "Chen", "locationId": seattle});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let job_title = || async {
        sqlx::query_scalar::<_, Option<String>>("SELECT job_title FROM employees WHERE id = $1")
            .bind(james)
            .fetch_one(app.pool())
            .await
            .unwrap()
    };
    let before = counts(&app).await;
    let title = job_title().await;
    for start in ["2026-06-30", "2026-05-01", "2024-12-01", "06/30/2026"] {
        let p = problem(
            app.patch_json(
                &path,
                &token,
                &j(json!({"rehire": "yes", "startDate": start, "jobTitle": "Changed"})),
            )
            .await,
            422,
        )
        .await;
        assert_eq!(
            fields(&p),
            [("startDate".into(), "before_termination".into())],
            "{start}"
        );
        let message = p["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("after 2026-06-30"), "{message}");
    }
    // Named with what else the stored records make wrong.
    let mut body = j(json!({"rehire": "yes", "startDate": "2026-01-01"}));
    body["locationId"] = json!(999999);
    let p = problem(app.patch_json(&path, &token, &body).await, 422).await;
    let mut named = fields(&p);
    named.sort();
    assert_eq!(
        named,
        [
            ("locationId".into(), "not_found".into()),
            ("startDate".into(), "before_termination".into())
        ]
    );
    assert_eq!(counts(&app).await, before, "nothing written");
    assert_eq!(job_title().await, title, "nothing half-written");

    // The day after the termination is a re-hire.
    let r = app
        .patch_json(
            &path,
            &token,
            &j(json!({"rehire": "yes", "startDate": "2026-07-01"})),
        )
        .await;
    assert_eq!(r.status(), 200);
    let after_rehire = counts(&app).await;
    assert_eq!(after_rehire.1, before.1 + 1, "one new period");

    // The current period's start moved on or before the previous end: 422.
    for start in ["2026-06-30", "2025-02-01"] {
        let p = problem(
            app.patch_json(
                &path,
                &token,
                &j(json!({"startDate": start, "jobTitle": "Changed"})),
            )
            .await,
            422,
        )
        .await;
        assert_eq!(
            fields(&p),
            [("startDate".into(), "before_termination".into())],
            "{start}"
        );
    }
    assert_eq!(counts(&app).await, after_rehire, "nothing written");
    let rec = app.get_json(&path, &token).await;
    assert_eq!(rec["startDate"], "2026-07-01");
    assert_ne!(rec["jobTitle"], "Changed");
    // Moved within its own time, and the termination date alone: 200.
    let r = app
        .patch_json(&path, &token, &j(json!({"startDate": "2026-07-02"})))
        .await;
    assert_eq!(r.status(), 200);
    let r = app
        .patch_json(&path, &token, &j(json!({"terminatedDate": "2026-08-31"})))
        .await;
    assert_eq!(r.status(), 200);
    let periods: Vec<(chrono::NaiveDate, Option<chrono::NaiveDate>)> = sqlx::query_as(
        "SELECT start_date, terminated_date FROM employment_periods WHERE employee_id = $1 ORDER BY id",
    )
    .bind(james)
    .fetch_all(app.pool())
    .await
    .unwrap();
    let d = |s: &str| s.parse::<chrono::NaiveDate>().unwrap();
    assert_eq!(
        periods,
        [
            (d("2025-01-13"), Some(d("2026-06-30"))),
            (d("2026-07-02"), Some(d("2026-08-31")))
        ]
    );
}

#[tokio::test]
async fn create_i9_yes_conflicts_with_an_open_i9_and_if_allowed_does_not() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let open = app.insert_i9(maria, "Signed Sec 1").await;
    let portland = app.group_id("Portland Warehouse").await;
    let path = format!("/v1/employees/{maria}");
    let before = counts(&app).await;
    for choice in ["createI9", "createRemotehireI9"] {
        let body = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": portland, "jobTitle": "Changed", choice: "yes"});
        let p = problem(app.patch_json(&path, &token, &body).await, 409).await;
        assert!(p["detail"].as_str().unwrap().contains("open I-9"));
    }
    let title: Option<String> = sqlx::query_scalar("SELECT job_title FROM employees WHERE id = $1")
        .bind(maria)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(
        title.as_deref(),
        Some("Forklift Operator"),
        "nothing of a refused request is written"
    );
    assert_eq!(counts(&app).await, before);

    let body = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": portland, "jobTitle": "Changed", "createI9": "if allowed"});
    let r = app.patch_json(&path, &token, &body).await;
    assert_eq!(r.status(), 200);
    let rec: Value = r.json().await.unwrap();
    assert_eq!(
        (rec["jobTitle"].as_str(), &rec["i9FormSection1Link"]),
        (Some("Changed"), &Value::Null)
    );
    assert_eq!(counts(&app).await.3, 0, "no I-9 requested");

    // Once the I-9 is no longer open, `yes` requests one and the response carries its link.
    sqlx::query("UPDATE i9s SET status = 'Completed' WHERE id = $1")
        .bind(open)
        .execute(app.pool())
        .await
        .unwrap();
    let body = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": portland, "createI9": "yes"});
    let r = app.patch_json(&path, &token, &body).await;
    assert_eq!(r.status(), 200);
    let rec: Value = r.json().await.unwrap();
    let link = rec["i9FormSection1Link"].as_str().unwrap();
    assert!(
        link.starts_with(&format!("{}/i9/section1/", app.address)),
        "{link}"
    );
    // A second `yes` while that I-9 is being created: 409; `if allowed`: fine, nothing added.
    problem(app.patch_json(&path, &token, &body).await, 409).await;
    let body = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": portland, "createI9": "if allowed"});
    assert_eq!(app.patch_json(&path, &token, &body).await.status(), 200);
    assert_eq!(counts(&app).await.3, 1);
}

/// An unresolved verification record (an E-Verify case not closed) blocks a
/// new I-9 as an open I-9 does (service-spec, the rules for `createI9`):
/// `yes` is a 409 naming the case and writes nothing, `if allowed` writes
/// and adds no I-9; once the case is closed, `yes` requests one.
#[tokio::test]
async fn an_unresolved_everify_case_blocks_create_i9_yes_and_skips_if_allowed() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let done = app.insert_i9(maria, "Completed").await;
    let entity: i64 = sqlx::query_scalar(
        "SELECT COALESCE(e.legal_entity_id, (SELECT min(id) FROM legal_entities)) FROM employees e WHERE e.id = $1",
    )
    .bind(maria)
    .fetch_one(app.pool())
    .await
    .unwrap();
    let case: i64 = sqlx::query_scalar(
        "INSERT INTO everify_cases (i9_id, employee_id, legal_entity_id, program, case_number, status,
                                    result, agency, created_on, created_by_user_id, creator_name)
         VALUES ($1, $2, $3, 'simulator', $4, 'Tentative Nonconfirmation', 'Tentative Nonconfirmation',
                 'DHS', DATE '2026-11-05', 1, 'Admin') RETURNING id",
    )
    .bind(done)
    .bind(maria)
    .bind(entity)
    .bind("SIM000000000001")
    .fetch_one(app.pool())
    .await
    .unwrap();
    let portland = app.group_id("Portland Warehouse").await;
    let path = format!("/v1/employees/{maria}");
    let before = counts(&app).await;
    for choice in ["createI9", "createRemotehireI9"] {
        let body = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": portland, "jobTitle": "Changed", choice: "yes"});
        let p = problem(app.patch_json(&path, &token, &body).await, 409).await;
        // Its own problem type and the case as a member (not the 409 of an open I-9).
        assert_eq!(p["type"], "/problems/unresolved-verification", "{p}");
        assert_eq!(p["caseId"], case, "{p}");
        let detail = p["detail"].as_str().unwrap();
        assert!(
            detail.contains("unresolved verification record")
                && detail.contains(&format!("/v1/everify-cases/{case}")),
            "{detail}"
        );
    }
    assert_eq!(
        counts(&app).await,
        before,
        "nothing of a refused request is written"
    );

    let body = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": portland, "jobTitle": "Changed", "createI9": "if allowed"});
    let r = app.patch_json(&path, &token, &body).await;
    assert_eq!(r.status(), 200);
    let rec: Value = r.json().await.unwrap();
    assert_eq!(
        (rec["jobTitle"].as_str(), &rec["i9FormSection1Link"]),
        (Some("Changed"), &Value::Null)
    );
    assert_eq!(counts(&app).await.3, 0, "no I-9 requested");

    // Closed, the case no longer blocks: exactly one I-9 is requested.
    sqlx::query(
        "UPDATE everify_cases SET status = 'Closed', closed_on = DATE '2026-11-20',
                closure_reason = 'EMPLOYEE_CONTINUES_TO_WORK_AFTER_FNC' WHERE id = $1",
    )
    .bind(case)
    .execute(app.pool())
    .await
    .unwrap();
    let body = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": portland, "createI9": "yes"});
    assert_eq!(app.patch_json(&path, &token, &body).await.status(), 200);
    assert_eq!(counts(&app).await.3, 1);
}

#[tokio::test]
async fn an_idempotency_key_replays_the_first_response() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let send = |body: Value, key: &'static str| {
        app.http
            .post(app.url("/v1/employees"))
            .bearer_auth(&token)
            .header("idempotency-key", key)
            .json(&body)
            .send()
    };
    let mut body = ana();
    body["createI9"] = json!("yes");
    let first = send(body.clone(), "key-1").await.unwrap();
    assert_eq!(first.status(), 201);
    let location = first.headers()["location"].clone();
    let first: Value = first.json().await.unwrap();
    let again = send(body.clone(), "key-1").await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["location"], location);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again, first, "the same body, the same Section 1 link");
    assert_eq!(counts(&app).await.0, 4, "one employee");
    assert_eq!(counts(&app).await.3, 1, "one I-9 request");
    // The same JSON from other client code: members reordered, other spacing.
    let members = body.as_object().unwrap();
    let mut names: Vec<&String> = members.keys().collect();
    names.reverse();
    let respelled = format!(
        "{{ {} }}",
        names
            .iter()
            .map(|n| format!("{} :  {}", json!(n), members[*n]))
            .collect::<Vec<_>>()
            .join(" ,\n ")
    );
    let retried = app
        .http
        .post(app.url("/v1/employees"))
        .bearer_auth(&token)
        .header("idempotency-key", "key-1")
        .header("content-type", "application/json")
        .body(respelled)
        .send()
        .await
        .unwrap();
    assert_eq!(retried.status(), 201);
    assert_eq!(retried.headers()["idempotent-replayed"], "true");
    assert_eq!(retried.json::<Value>().await.unwrap(), first);
    assert_eq!(counts(&app).await.0, 4, "still one employee");

    let mut other = ana();
    other["jobTitle"] = json!("Driver");
    let p = problem(send(other, "key-1").await.unwrap(), 422).await;
    assert_eq!(fields(&p), [("Idempotency-Key".into(), "reused".into())]);
    // Keys are per user: another user's same key is a new request.
    let west = app.token(WEST_HR).await;
    let mut b = ana();
    b["profileId"] = json!("EMP-2002");
    b["socialSecurityNumber"] = json!("567-89-0123");
    let r = app
        .http
        .post(app.url("/v1/employees"))
        .bearer_auth(&west)
        .header("idempotency-key", "key-1")
        .json(&b)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(counts(&app).await.0, 5);

    // Two keys on one request: neither is taken, nothing is written.
    let mut c = ana();
    c["profileId"] = json!("EMP-2003");
    c["socialSecurityNumber"] = json!("567-89-0124");
    let r = app
        .http
        .post(app.url("/v1/employees"))
        .bearer_auth(&token)
        .header("idempotency-key", "key-2")
        .header("idempotency-key", "key-3")
        .json(&c)
        .send()
        .await
        .unwrap();
    let p = problem(r, 400).await;
    assert_eq!(fields(&p), [("Idempotency-Key".into(), "repeated".into())]);
    assert_eq!(counts(&app).await.0, 5, "nothing written");
    assert_eq!(idempotency_rows(&app).await.len(), 2, "no key taken");
}

#[tokio::test]
async fn a_conflict_names_only_a_holder_the_caller_may_see() {
    let app = spawn_app().await;
    let west = app.token(WEST_HR).await; // West Region, no permission 12
    let maria = app.employee_id("EMP-1001").await; // Portland Warehouse (West)
    let james = app.employee_id("EMP-1002").await; // Seattle Office (West)
    let unnamed_profile = "profileId already belongs to another employee.";
    let unnamed_ssn = "socialSecurityNumber already belongs to another employee.";
    let cases = [
        // Aisha is in Boston: neither confirmed nor named, the same words as for anyone.
        ("profileId", "EMP-1003", unnamed_profile.to_owned()),
        ("socialSecurityNumber", "345-67-8901", unnamed_ssn.to_owned()),
        // Maria is West's: her profileId is named; her number is not (without
        // permission 12 that would reveal it by trial).
        (
            "profileId",
            "emp-1001",
            format!("profileId already belongs to employee {maria}; re-hire with PATCH /v1/employees/{maria}."),
        ),
        ("socialSecurityNumber", "123-45-6789", unnamed_ssn.to_owned()),
    ];
    for (field, value, expected) in &cases {
        let mut body = ana();
        body[*field] = json!(value);
        let p = problem(app.post_json("/v1/employees", &west, &body).await, 409).await;
        assert_eq!(p["detail"], expected.as_str(), "POST {field} {value}");
        // PATCH of a West employee with a Boston value: the same.
        let mut patch = json!({"firstName": "James", "lastName": "Chen", "locationId": app.group_id("Seattle Office").await});
        patch[*field] = json!(value);
        let p = problem(
            app.patch_json(&format!("/v1/employees/{james}"), &west, &patch)
                .await,
            409,
        )
        .await;
        assert_eq!(p["detail"], expected.as_str(), "PATCH {field} {value}");
    }
    // With permission 12 and every group, the number's holder is named too.
    let admin = app.token(ADMIN).await;
    let mut body = ana();
    body["socialSecurityNumber"] = json!("345-67-8901");
    let p = problem(app.post_json("/v1/employees", &admin, &body).await, 409).await;
    let aisha = app.employee_id("EMP-1003").await;
    assert!(p["detail"]
        .as_str()
        .unwrap()
        .contains(&format!("employee {aisha}")));
    assert_eq!(counts(&app).await.0, 3, "nothing written");
}

/// Every row of `idempotency_keys`, as text (bytea as hex).
async fn idempotency_rows(app: &TestApp) -> Vec<String> {
    sqlx::query_scalar("SELECT row_to_json(k)::TEXT FROM idempotency_keys k")
        .fetch_all(app.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn an_idempotency_record_keeps_no_personal_data_and_a_replay_follows_current_rights() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let mut body = ana();
    body["createI9"] = json!("yes");
    let send_with = |token: String, body: Value| {
        app.http
            .post(app.url("/v1/employees"))
            .bearer_auth(token)
            .header("idempotency-key", "hire-ana")
            .json(&body)
            .send()
    };
    let send = |body: Value| send_with(admin.clone(), body);
    let first = send(body.clone()).await.unwrap();
    assert_eq!(first.status(), 201);
    let first: Value = first.json().await.unwrap();
    assert_eq!(first["socialSecurityNumber"], "456-78-9012");
    let link = first["i9FormSection1Link"].as_str().unwrap().to_owned();
    let token = link.rsplit('/').next().unwrap().to_owned();
    assert!(token.starts_with("s1_"), "{link}");

    let rows = idempotency_rows(&app).await;
    assert_eq!(rows.len(), 1);
    for secret in [
        "456-78-9012",
        "456789012",
        &token,
        token.trim_start_matches("s1_"),
    ] {
        assert!(
            !rows[0].contains(secret),
            "the record holds {secret}: {}",
            rows[0]
        );
    }
    let id = first["id"].as_i64().unwrap();
    let kept: (Option<i64>, i16) =
        sqlx::query_as("SELECT resource_id, response_status FROM idempotency_keys")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(kept, (Some(id), 201));

    let ssn_reads = || {
        app.count(
            "SELECT count(*) FROM audit_log WHERE action = 'ssn.read' AND resource_id = $1::TEXT",
            id,
        )
    };
    assert_eq!(ssn_reads().await, 1, "the create showed the number");
    let again = send(body.clone()).await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(
        again.headers()["location"],
        format!("/v1/employees/{id}").as_str()
    );
    let again: Value = again.json().await.unwrap();
    assert_eq!(again, first, "the same record, the same Section 1 link");
    assert_eq!(ssn_reads().await, 2, "the replay showed it again");

    // The administrators lose permission 12: a replay shows the masked number.
    sqlx::query(
        "DELETE FROM role_permissions WHERE permission_id = 12
         AND role_id = (SELECT id FROM roles WHERE name = 'Administrator')",
    )
    .execute(app.pool())
    .await
    .unwrap();
    // (A new sign-in: the old token's rights may be cached for a moment.)
    let admin_now = app.token(ADMIN).await;
    let masked: Value = send_with(admin_now, body.clone())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(masked["socialSecurityNumber"], "***-**-9012");
    assert_eq!(masked["i9FormSection1Link"], link.as_str());
    assert_eq!(masked["id"], id);
    assert_eq!(ssn_reads().await, 2);

    let mut other = body.clone();
    other["jobTitle"] = json!("Driver");
    let p = problem(send(other).await.unwrap(), 422).await;
    assert_eq!(fields(&p), [("Idempotency-Key".into(), "reused".into())]);
    assert_eq!(counts(&app).await.0, 4, "one employee");
    assert_eq!(counts(&app).await.3, 1, "one I-9 request");
    assert_eq!(idempotency_rows(&app).await.len(), 1);
}

#[tokio::test]
async fn a_record_older_than_24_hours_is_not_replayed() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let send = |body: Value| {
        app.http
            .post(app.url("/v1/employees"))
            .bearer_auth(&admin)
            .header("idempotency-key", "old-key")
            .json(&body)
            .send()
    };
    let first: Value = send(ana()).await.unwrap().json().await.unwrap();
    sqlx::query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'")
        .execute(app.pool())
        .await
        .unwrap();
    // The same key and body a day later is a new request: here a duplicate.
    let r = send(ana()).await.unwrap();
    assert!(r.headers().get("idempotent-replayed").is_none());
    let p = problem(r, 409).await;
    assert!(p["detail"]
        .as_str()
        .unwrap()
        .contains(&format!("employee {}", first["id"])));
    assert_eq!(counts(&app).await.0, 4);
}

/// An expired record is taken over by the next request with its key, even
/// one with another body: that request is done (not a `reused` 422), and the
/// record then keeps its outcome, not the old one.
#[tokio::test]
async fn an_expired_key_is_claimed_afresh_by_a_new_request() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let send = |body: Value| {
        app.http
            .post(app.url("/v1/employees"))
            .bearer_auth(&admin)
            .header("idempotency-key", "reused-key")
            .json(&body)
            .send()
    };
    let first: Value = send(ana()).await.unwrap().json().await.unwrap();
    sqlx::query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'")
        .execute(app.pool())
        .await
        .unwrap();
    let other = json!({"firstName": "Bo", "lastName": "Ek", "locationId": 3,
                       "startDate": "11/05/2026", "profileId": "EMP-2002"});
    let r = send(other.clone()).await.unwrap();
    assert_eq!(r.status(), 201);
    assert!(r.headers().get("idempotent-replayed").is_none());
    let second: Value = r.json().await.unwrap();
    assert_ne!(second["id"], first["id"]);
    // The same body again replays the second request, not the first.
    let r = send(other).await.unwrap();
    assert_eq!(r.status(), 201);
    assert!(r.headers().get("idempotent-replayed").is_some());
    let replayed: Value = r.json().await.unwrap();
    assert_eq!(replayed["id"], second["id"]);
    let rows: Vec<(Option<i64>, bool)> = sqlx::query_as(
        "SELECT resource_id, created_at > now() - interval '1 hour' FROM idempotency_keys",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(
        rows,
        [(second["id"].as_i64(), true)],
        "one record, the new one's"
    );
    assert_eq!(
        counts(&app).await.0,
        5,
        "the two employees and the fixture's three"
    );
}

/// Six bad fields written into `body`, and the errors they must get.
fn six_bad_fields(body: &mut Value) -> Vec<(String, String)> {
    for (field, value) in [
        ("middleName", json!("m".repeat(26))),
        ("socialSecurityNumber", json!("123456789")),
        ("dateOfBirth", json!("2026-02-30")),
        ("languagePreference", json!(3)),
        ("emailAddress", json!("ana.diaz")),
        ("profileId", json!("p".repeat(31))),
    ] {
        body[field] = value;
    }
    [
        ("middleName", "too_long"),
        ("socialSecurityNumber", "invalid_format"),
        ("dateOfBirth", "invalid_date"),
        ("languagePreference", "invalid_value"),
        ("emailAddress", "invalid_format"),
        ("profileId", "too_long"),
    ]
    .map(|(f, c)| (f.to_owned(), c.to_owned()))
    .to_vec()
}

fn sorted(mut v: Vec<(String, String)>) -> Vec<(String, String)> {
    v.sort();
    v
}

fn not_found(field: &str) -> (String, String) {
    (field.to_owned(), "not_found".to_owned())
}

/// Everything a write could leave behind, and one employee's whole row.
async fn written(app: &TestApp, employee: i64) -> (i64, i64, i64, i64, i64, String) {
    let (e, p, o, r) = counts(app).await;
    let audit = app
        .count("SELECT count(*) FROM audit_log WHERE id > $1", 0)
        .await;
    let row: String =
        sqlx::query_scalar("SELECT row_to_json(e)::text FROM employees e WHERE id = $1")
            .bind(employee)
            .fetch_one(app.pool())
            .await
            .unwrap();
    (e, p, o, r, audit, row)
}

/// One 422 names every bad field and, with them, a well-formed `locationId`
/// or `legalEntity` that names nothing; the same `locationId` in a body
/// otherwise valid is the only error. For each of the three writes.
async fn every_field_error_at_once(
    app: &TestApp,
    send: impl AsyncFn(&Value) -> reqwest::Response,
    valid: Value,
) {
    let maria = app.employee_id("EMP-1001").await;
    let before = written(app, maria).await;
    let mut body = valid.clone();
    let mut expected = six_bad_fields(&mut body);
    body["locationId"] = json!(999);
    body["legalEntity"] = json!(999);
    expected.extend([not_found("locationId"), not_found("legalEntity")]);
    let p = problem(send(&body).await, 422).await;
    let got = fields(&p);
    assert_eq!(got.len(), 8, "{got:?}");
    assert_eq!(sorted(got), sorted(expected));

    let mut body = valid.clone();
    body["locationId"] = json!(999);
    let p = problem(send(&body).await, 422).await;
    assert_eq!(fields(&p), [not_found("locationId")]);

    let mut body = valid;
    body["legalEntity"] = json!(999);
    let p = problem(send(&body).await, 422).await;
    assert_eq!(fields(&p), [not_found("legalEntity")]);
    assert_eq!(written(app, maria).await, before, "nothing written");
}

#[tokio::test]
async fn a_create_names_every_bad_field_and_missing_reference_at_once() {
    let app = spawn_app().await;
    for user in [ADMIN, WEST_HR] {
        // With permission 11 (admin) every group id is the caller's; without
        // it (west.hr), 999 is outside its groups and still a 422, not a 403.
        let token = app.token(user).await;
        let send = async |body: &Value| app.post_json("/v1/employees", &token, body).await;
        every_field_error_at_once(&app, send, ana()).await;
    }
    // A group that exists outside the caller's: 403 for a valid body, and
    // with bad fields only their 422.
    let west = app.token(WEST_HR).await;
    let mut body = ana();
    body["locationId"] = json!(app.group_id("Boston Office").await);
    problem(app.post_json("/v1/employees", &west, &body).await, 403).await;
    let expected = six_bad_fields(&mut body);
    let p = problem(app.post_json("/v1/employees", &west, &body).await, 422).await;
    assert_eq!(sorted(fields(&p)), sorted(expected));
    assert_eq!(counts(&app).await.0, 3);
}

#[tokio::test]
async fn an_update_names_every_bad_field_and_missing_reference_at_once() {
    let app = spawn_app().await;
    let maria = app.employee_id("EMP-1001").await;
    let path = format!("/v1/employees/{maria}");
    let valid =
        json!({"firstName": "Maria", "lastName": "Lopez", "locationId": 3, "jobTitle": "Lead"});
    for user in [ADMIN, WEST_HR] {
        let token = app.token(user).await;
        let send = async |body: &Value| app.patch_json(&path, &token, body).await;
        every_field_error_at_once(&app, send, valid.clone()).await;
    }
    // The body's id against the path's is named with the rest.
    let admin = app.token(ADMIN).await;
    let mut body = valid.clone();
    let mut expected = six_bad_fields(&mut body);
    body["id"] = json!(maria + 1);
    body["locationId"] = json!(999);
    expected.extend([
        ("id".to_owned(), "mismatch".to_owned()),
        not_found("locationId"),
    ]);
    let p = problem(app.patch_json(&path, &admin, &body).await, 422).await;
    assert_eq!(sorted(fields(&p)), sorted(expected));
    // A group that exists outside the caller's: 403 for a valid body.
    let west = app.token(WEST_HR).await;
    let mut body = valid;
    body["locationId"] = json!(app.group_id("Boston Office").await);
    problem(app.patch_json(&path, &west, &body).await, 403).await;
    let job: Option<String> = sqlx::query_scalar("SELECT job_title FROM employees WHERE id = $1")
        .bind(maria)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(job.as_deref(), Some("Forklift Operator"), "unchanged");
}

#[tokio::test]
async fn the_partner_operation_names_every_bad_field_and_missing_reference_at_once() {
    let app = spawn_app().await;
    let token = app
        .sign_in_with(("greenhouse-ats", "ats-secret-change-me"), ATS_BOT, None)
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let valid = json!({"integrationCandidateId": "cand-refs", "onboardingType": "remote",
                       "firstName": "Ana", "lastName": "Diaz", "emailAddress": "ana.diaz@mail.example",
                       "startDate": "2026-12-01", "locationId": 3,
                       "employeeReturnUrl": "https://ats.example/candidates/1"});
    let send = async |body: &Value| {
        app.post_json("/v1/partners/i9s/section1", &token, body)
            .await
    };
    every_field_error_at_once(&app, send, valid.clone()).await;
    // A group that exists outside the partner user's: 403 for a valid body,
    // and with bad fields only their 422.
    let mut body = valid;
    body["locationId"] = json!(app.group_id("Boston Office").await);
    problem(send(&body).await, 403).await;
    let expected = six_bad_fields(&mut body);
    let p = problem(send(&body).await, 422).await;
    assert_eq!(sorted(fields(&p)), sorted(expected));
    assert_eq!(counts(&app).await.0, 3);
}

/// The errors a write's other parts decide (the email a remote I-9 needs,
/// a period the stored record makes wrong) come in the same 422 as a
/// missing reference, not one round later.
#[tokio::test]
async fn errors_that_need_the_stored_record_come_with_a_missing_reference() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let before = counts(&app).await;
    // A create that wants a remote-hire I-9 but has no email.
    let mut body = ana();
    body.as_object_mut().unwrap().remove("emailAddress");
    body["createRemotehireI9"] = json!("yes");
    body["locationId"] = json!(999);
    let p = problem(app.post_json("/v1/employees", &admin, &body).await, 422).await;
    assert_eq!(
        sorted(fields(&p)),
        sorted(vec![
            ("emailAddress".to_owned(), "required".to_owned()),
            not_found("locationId"),
        ])
    );
    // An update whose terminatedDate falls before the stored startDate.
    let maria = app.employee_id("EMP-1001").await;
    let body = json!({"firstName": "Maria", "lastName": "Lopez", "terminatedDate": "1999-01-01",
                      "locationId": 999});
    let p = problem(
        app.patch_json(&format!("/v1/employees/{maria}"), &admin, &body)
            .await,
        422,
    )
    .await;
    assert_eq!(
        sorted(fields(&p)),
        sorted(vec![
            ("terminatedDate".to_owned(), "before_start".to_owned()),
            not_found("locationId"),
        ])
    );
    assert_eq!(counts(&app).await, before, "nothing written");
}

/// The HR engineer's trial: `666-45-6789` was told "Must be written
/// ###-##-####." though written right, and `startDate=2026-12` "Must be a
/// date: must be a date written …". A never-issued number has its own code
/// and message (never the number), and a bad date says so once, in a body
/// and in a filter alike.
#[tokio::test]
async fn messages_say_what_is_wrong_once_and_never_the_value() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let portland = app.group_id("Portland Warehouse").await;
    let error_of = |p: &Value, field: &str| -> (String, String) {
        let e = p["errors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["field"] == field)
            .unwrap_or_else(|| panic!("{field} named: {p}"));
        (
            e["code"].as_str().unwrap().to_owned(),
            e["message"].as_str().unwrap().to_owned(),
        )
    };
    let before = counts(&app).await;
    for ssn in [
        "666-45-6789",
        "000-45-6789",
        "900-45-6789",
        "999-45-6789",
        "123-00-6789",
        "123-45-0000",
    ] {
        let body = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": portland,
                          "socialSecurityNumber": ssn});
        let p = problem(app.post_json("/v1/employees", &token, &body).await, 422).await;
        let filter = problem(
            app.get(&format!("/v1/employees?socialSecurityNumber={ssn}"), &token)
                .await,
            400,
        )
        .await;
        for p in [&p, &filter] {
            let (code, message) = error_of(p, "socialSecurityNumber");
            assert_eq!(code, "invalid_value", "{ssn}");
            assert!(
                message.starts_with("Not a valid social security number: the first three digits cannot be 000, 666 or 900-999"),
                "{ssn}: {message}"
            );
            assert!(!message.contains("###"), "not a format problem: {message}");
            assert!(!p.to_string().contains(ssn), "the value is never echoed");
        }
    }
    // A number not written right is a format problem.
    let body = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": portland,
                      "socialSecurityNumber": "123-45-678"});
    let p = problem(app.post_json("/v1/employees", &token, &body).await, 422).await;
    assert_eq!(
        error_of(&p, "socialSecurityNumber"),
        (
            "invalid_format".into(),
            "Must be written ###-##-####.".into()
        )
    );

    // A date that is not one: the rule once, in a body and in a filter.
    let rule = "Must be a date written YYYY-MM-DD or MM/DD/YYYY, in the years 1900 to 2099.";
    let body = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": portland,
                      "startDate": "2026-12", "dateOfBirth": "1990-02-30"});
    let p = problem(app.post_json("/v1/employees", &token, &body).await, 422).await;
    for field in ["startDate", "dateOfBirth"] {
        assert_eq!(
            error_of(&p, field),
            ("invalid_date".into(), rule.into()),
            "{field}"
        );
    }
    for (path, field) in [
        ("/v1/i9s?startDate=2026-12", "startDate"),
        ("/v1/i9s?i9Expiration=13/01/2026", "i9Expiration"),
        ("/v1/employees?dateOfBirth=2026-12", "dateOfBirth"),
    ] {
        let p = problem(app.get(path, &token).await, 400).await;
        assert_eq!(
            error_of(&p, field),
            ("invalid_date".into(), rule.into()),
            "{path}"
        );
    }
    // A boolean where "yes" belongs is the wrong type, not a wrong word.
    let body = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": portland,
                      "createI9": true, "createRemotehireI9": "Yes"});
    let p = problem(app.post_json("/v1/employees", &token, &body).await, 422).await;
    assert_eq!(error_of(&p, "createI9").0, "invalid_type");
    assert_eq!(error_of(&p, "createRemotehireI9").0, "invalid_value");
    assert_eq!(counts(&app).await, before, "nothing written");
}

/// The HR trial: `"dateOfBirth": "2030-01-01"` was a 201. A date of birth
/// after today (UTC) is `invalid_value` on POST, PATCH and the partner
/// operation, and nothing is written; today is a date of birth.
#[tokio::test]
async fn a_date_of_birth_in_the_future_is_refused_everywhere() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let partner = app
        .sign_in_with(("greenhouse-ats", "ats-secret-change-me"), ATS_BOT, None)
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let today = chrono::Utc::now().date_naive();
    let tomorrow = (today + chrono::Days::new(1))
        .format("%m/%d/%Y")
        .to_string();
    let before = counts(&app).await;
    let refused = async |r: reqwest::Response| {
        let p = problem(r, 422).await;
        assert_eq!(
            fields(&p),
            [("dateOfBirth".to_owned(), "invalid_value".to_owned())]
        );
        assert_eq!(
            p["errors"][0]["message"],
            "A date of birth cannot be in the future."
        );
    };
    for dob in ["2030-01-01", tomorrow.as_str()] {
        let mut body = ana();
        body["dateOfBirth"] = json!(dob);
        refused(app.post_json("/v1/employees", &admin, &body).await).await;
        let partner_body = json!({"integrationCandidateId": "cand-dob", "onboardingType": "remote",
                                  "firstName": "Ana", "lastName": "Diaz", "emailAddress": "ana.diaz@mail.example",
                                  "startDate": "2026-12-01", "locationId": 3, "dateOfBirth": dob,
                                  "employeeReturnUrl": "https://ats.example/candidates/1"});
        refused(
            app.post_json("/v1/partners/i9s/section1", &partner, &partner_body)
                .await,
        )
        .await;
    }
    assert_eq!(counts(&app).await, before, "nothing written");
    // Before 1900 stays an `invalid_date`, as any date outside 1900 to 2099.
    let mut body = ana();
    body["dateOfBirth"] = json!("1899-12-31");
    let p = problem(app.post_json("/v1/employees", &admin, &body).await, 422).await;
    assert_eq!(
        fields(&p),
        [("dateOfBirth".to_owned(), "invalid_date".to_owned())]
    );

    // Today is accepted; a PATCH to the future is refused and changes nothing.
    let mut body = ana();
    body["dateOfBirth"] = json!(today.to_string());
    let r = app.post_json("/v1/employees", &admin, &body).await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["dateOfBirth"], today.to_string());
    let patch = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3,
                       "dateOfBirth": "2030-01-01"});
    refused(
        app.patch_json(&format!("/v1/employees/{id}"), &admin, &patch)
            .await,
    )
    .await;
    let after = app.get_json(&format!("/v1/employees/{id}"), &admin).await;
    assert_eq!(after["dateOfBirth"], today.to_string());
}
