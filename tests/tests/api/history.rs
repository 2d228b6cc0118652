//! The history of records: an employee's periods of employment
//! (`GET /v1/employees/{id}/periods`), the audit history of an employee or
//! an I-9 (`GET /v1/employees/{id}/history`, `GET /v1/i9s/{id}/history`),
//! a re-issued Section 1 link (`POST /v1/i9s/{id}/section1-link`), and
//! searches of a group with the groups below it (`locationIdWithin`).

use i9_tests::{ids, link, spawn_app, TestApp, ADMIN, ATS_BOT, BOSTON_VIEWER, WEST_HR};
use serde_json::{json, Value};

use super::queues::{get_as, parse_csv};

const ATS: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");

async fn partner_token(app: &TestApp) -> String {
    app.sign_in_with(ATS, ATS_BOT, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A partner's own employee (created by its push), readable by it.
async fn partner_employee(app: &TestApp, partner: &str) -> i64 {
    let body = json!({"integrationCandidateId": "hist-1", "onboardingType": "remote", "firstName": "Pat",
                      "lastName": "Ner", "emailAddress": "pat.ner@mail.example", "startDate": "2026-12-01",
                      "locationId": 3, "employeeReturnUrl": "https://ats.example/candidates/1"});
    let r = app
        .post_json("/v1/partners/i9s/section1", partner, &body)
        .await;
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 201, "{body}");
    body["id"].as_i64().unwrap()
}

async fn status_of(app: &TestApp, path: &str, token: &str) -> u16 {
    app.get(path, token).await.status().as_u16()
}

#[tokio::test]
async fn periods_list_each_period_oldest_first_with_its_i9s() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await; // Seattle, terminated 2026-06-30
    let seattle = app.group_id("Seattle Office").await;
    let first_period: i64 = app
        .count(
            "SELECT max(id) FROM employment_periods WHERE employee_id = $1",
            james,
        )
        .await;
    let old_i9 = app.insert_i9(james, "Completed").await;
    sqlx::query("UPDATE i9s SET employment_period_id = $2 WHERE id = $1")
        .bind(old_i9)
        .bind(first_period)
        .execute(app.pool())
        .await
        .unwrap();
    let r = app
        .patch_json(
            &format!("/v1/employees/{james}"),
            &admin,
            &json!({"firstName": "James", "lastName": "Chen", "locationId": seattle,
                    "rehire": "yes", "startDate": "2026-12-01"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let second_period: i64 = app
        .count(
            "SELECT max(id) FROM employment_periods WHERE employee_id = $1",
            james,
        )
        .await;
    assert_ne!(first_period, second_period);
    let count = app
        .count(
            "SELECT count(*) FROM employment_periods WHERE employee_id = $1",
            james,
        )
        .await;
    assert_eq!(count, 2);

    let path = format!("/v1/employees/{james}/periods");
    let body = app.get_json(&path, &admin).await;
    assert_eq!(
        body["searchResult"],
        json!([
            {"id": first_period, "startDate": body["searchResult"][0]["startDate"],
             "terminatedDate": "2026-06-30", "i9Ids": [old_i9]},
            {"id": second_period, "startDate": "2026-12-01", "terminatedDate": null, "i9Ids": []},
        ])
    );
    assert!(body["searchResult"][0]["startDate"].is_string());
    assert_eq!(link(&body, "self").unwrap(), format!("{path}?page=1"));
    // Paged as every list.
    let page = app
        .get_json(&format!("{path}?page_size=1&page=2"), &admin)
        .await;
    assert_eq!(ids(&page), [second_period]);
    assert_eq!(
        app.get(&format!("{path}?status=x"), &admin).await.status(),
        400
    );

    // The employee record links to it.
    let record = app
        .get_json(&format!("/v1/employees/{james}"), &admin)
        .await;
    assert_eq!(link(&record, "periods").unwrap(), path);

    // Visibility: outside the caller's groups, or no such employee: 404.
    let west = app.token(WEST_HR).await;
    assert_eq!(
        status_of(&app, &path, &west).await,
        200,
        "Seattle is in West Region"
    );
    let boston = app.token(BOSTON_VIEWER).await;
    assert_eq!(status_of(&app, &path, &boston).await, 404);
    assert_eq!(
        status_of(&app, "/v1/employees/999999/periods", &admin).await,
        404
    );
    assert_eq!(
        status_of(&app, "/v1/employees/abc/periods", &admin).await,
        404
    );
}

#[tokio::test]
async fn a_partner_token_does_not_reach_periods_even_of_its_own_employee() {
    let app = spawn_app().await;
    let partner = partner_token(&app).await;
    let own = partner_employee(&app, &partner).await;
    let record = app
        .get_json(&format!("/v1/employees/{own}"), &partner)
        .await;
    assert_eq!(link(&record, "periods"), None, "no link it cannot follow");
    assert_eq!(
        status_of(&app, &format!("/v1/employees/{own}/periods"), &partner).await,
        404
    );
    let admin = app.token(ADMIN).await;
    let body = app
        .get_json(&format!("/v1/employees/{own}/periods"), &admin)
        .await;
    assert_eq!(body["searchResult"].as_array().unwrap().len(), 1);
}

/// The audit entries of a record, as the database holds them.
async fn audit_rows(app: &TestApp, resource_type: &str, id: i64) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE resource_type = $1 AND resource_id = $2::TEXT",
    )
    .bind(resource_type)
    .bind(id)
    .fetch_one(app.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn an_employees_history_says_who_wrote_which_fields_and_who_read_the_number() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let west = app.token(WEST_HR).await;
    let portland = app.group_id("Portland Warehouse").await;
    let r = app
        .post_json(
            "/v1/employees",
            &admin,
            &json!({"firstName": "Hana", "lastName": "Sato", "locationId": portland,
                    "socialSecurityNumber": "321-54-9876", "startDate": "2026-12-01"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    let patch = app
        .http
        .patch(app.url(&format!("/v1/employees/{id}")))
        .bearer_auth(&west)
        .header("x-request-id", "hist-patch-1")
        .json(
            &json!({"firstName": "Hana", "lastName": "Sato", "locationId": portland,
                      "jobTitle": "Picker", "dateOfBirth": "1990-04-01"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(patch.status(), 200);
    // A read of the full number is audited, and so shown.
    app.get_json(&format!("/v1/employees/{id}"), &admin).await;
    let entries = audit_rows(&app, "employee", id).await;
    assert_eq!(entries, 4, "create, its ssn.read, the update, the read");

    let path = format!("/v1/employees/{id}/history");
    let r = app.get(&path, &admin).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(!text.contains("9876"), "never a number: {text}");
    assert!(
        !text.contains("Picker") && !text.contains("1990"),
        "never a value: {text}"
    );
    let body: Value = serde_json::from_str(&text).unwrap();
    let items = body["searchResult"].as_array().unwrap();
    assert_eq!(items.len() as i64, entries);
    let actions: Vec<&str> = items
        .iter()
        .map(|i| i["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions[..2],
        ["ssn.read", "employee.update"],
        "newest first"
    );
    let mut older = actions[2..].to_vec();
    older.sort_unstable();
    assert_eq!(older, ["employee.create", "ssn.read"]);
    let update = &items[1];
    assert_eq!(update["requestId"], "hist-patch-1");
    assert_eq!(update["actor"]["kind"], "user");
    assert_eq!(update["actor"]["login"], "west.hr");
    assert_eq!(update["actor"]["clientId"], "acme-hr-portal");
    let fields: Vec<&str> = update["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for f in [
        "firstName",
        "lastName",
        "locationId",
        "jobTitle",
        "dateOfBirth",
    ] {
        assert!(fields.contains(&f), "{f} in {fields:?}");
    }
    assert!(!fields.contains(&"socialSecurityNumber"));
    let create = items
        .iter()
        .find(|i| i["action"] == "employee.create")
        .unwrap();
    assert!(create["fields"]
        .as_array()
        .unwrap()
        .contains(&json!("socialSecurityNumber")));
    assert!(items[0]["at"].as_str().unwrap().starts_with("20"));
    assert!(items[0]["actor"]["userId"].is_i64());
    // Paged as every list.
    let page = app
        .get_json(&format!("{path}?page_size=3&page=2"), &admin)
        .await;
    assert_eq!(page["searchResult"].as_array().unwrap().len(), 1);
    assert_eq!(
        audit_rows(&app, "employee", id).await,
        entries,
        "reading the history writes nothing"
    );

    // Permission 12 besides 1: an HR manager without it gets 403.
    assert_eq!(status_of(&app, &path, &west).await, 403);
    let boston = app.token(BOSTON_VIEWER).await;
    assert_eq!(status_of(&app, &path, &boston).await, 403);
    // With it, visibility still holds: outside the caller's groups, 404.
    sqlx::query(
        "INSERT INTO role_permissions (role_id, permission_id)
         SELECT id, 12 FROM roles WHERE name = 'HR Manager'",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let west = app.token(WEST_HR).await;
    assert_eq!(status_of(&app, &path, &west).await, 200);
    let boston_employee = app
        .insert_employee("Bo", "Ston", "Boston Office", None)
        .await;
    assert_eq!(
        status_of(
            &app,
            &format!("/v1/employees/{boston_employee}/history"),
            &west
        )
        .await,
        404
    );
    assert_eq!(
        status_of(&app, "/v1/employees/99999/history", &admin).await,
        404
    );
    assert_eq!(status_of(&app, &format!("{path}?x=1"), &admin).await, 400);
}

#[tokio::test]
async fn an_i9s_history_names_the_employee_on_the_section_1_page_and_the_system() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await; // has a number
    let i9 = app.insert_i9(maria, "Signed Sec 2").await;
    // The Section 1 page writes without an account, with the request's id;
    // i9-admin without either.
    sqlx::query(
        "INSERT INTO audit_log (action, resource_type, resource_id, request_id, detail, occurred_at)
         VALUES ('i9.section1', 'i9', $1::TEXT, 'page-req-1', '{\"attestation\": \"citizen\"}', now() - interval '2 minutes'),
                ('i9.note', 'i9', $1::TEXT, NULL, '{}', now() - interval '1 minute')",
    )
    .bind(i9)
    .execute(app.pool())
    .await
    .unwrap();
    let r = app
        .post_json(&format!("/v1/i9s/{i9}/complete"), &admin, &json!({}))
        .await;
    assert_eq!(r.status(), 200);
    app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(
        audit_rows(&app, "i9", i9).await,
        5,
        "two above, complete and two full reads"
    );

    let text = app
        .get(&format!("/v1/i9s/{i9}/history"), &admin)
        .await
        .text()
        .await
        .unwrap();
    assert!(!text.contains("citizen"), "never a detail's value: {text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    let got: Vec<(&str, &str)> = body["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["action"].as_str().unwrap(),
                i["actor"]["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("ssn.read", "user"),
            ("ssn.read", "user"),
            ("i9.complete", "user"),
            ("i9.note", "system"),
            ("i9.section1", "section1Link"),
        ]
    );
    let section1 = &body["searchResult"][4];
    assert_eq!(section1["requestId"], "page-req-1");
    assert_eq!(section1["actor"]["userId"], Value::Null);
    assert_eq!(section1["fields"], json!([]));

    // Permission 3 and 12; a partner never.
    let boston = app.token(BOSTON_VIEWER).await;
    assert_eq!(
        status_of(&app, &format!("/v1/i9s/{i9}/history"), &boston).await,
        403
    );
    let partner = partner_token(&app).await;
    let own = partner_employee(&app, &partner).await;
    let own_i9 = app.insert_i9(own, "Section 1 Incomplete").await;
    assert_eq!(
        status_of(&app, &format!("/v1/i9s/{own_i9}"), &partner).await,
        200
    );
    for path in [
        format!("/v1/i9s/{own_i9}/history"),
        format!("/v1/employees/{own}/history"),
    ] {
        assert_eq!(status_of(&app, &path, &partner).await, 404, "{path}");
    }
}

/// Issue 11, "CSV export of any list": an employee's periods and a record's
/// history answer CSV to `Accept: text/csv` as every list does (docs/api.md,
/// "CSV"): the JSON member names as the header, a row per record (the whole
/// result up to 10000, where JSON pages by 50), objects and arrays as JSON
/// text, formulas neutralised, and 406 to an `Accept` allowing neither.
#[tokio::test]
async fn periods_and_histories_answer_csv_as_every_list() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let csv = "text/csv";
    let james = app.employee_id("EMP-1002").await; // Seattle, terminated 2026-06-30
    let seattle = app.group_id("Seattle Office").await;
    let old_i9 = app.insert_i9(james, "Completed").await;
    sqlx::query(
        "UPDATE i9s SET employment_period_id =
             (SELECT max(id) FROM employment_periods WHERE employee_id = $2) WHERE id = $1",
    )
    .bind(old_i9)
    .bind(james)
    .execute(app.pool())
    .await
    .unwrap();
    // A request id may start with `-` (docs/api.md, "Request ids").
    let r = app
        .http
        .patch(app.url(&format!("/v1/employees/{james}")))
        .bearer_auth(&admin)
        .header("x-request-id", "-2.3")
        .json(
            &json!({"firstName": "James", "lastName": "Chen", "locationId": seattle,
                    "rehire": "yes", "startDate": "2026-12-01"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // Periods: two rows, oldest first; `null` an empty cell, `i9Ids` JSON text.
    let path = format!("/v1/employees/{james}/periods");
    let json = app.get_json(&path, &admin).await;
    let (status, headers, text) = get_as(&app, &path, &admin, csv).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        headers["content-type"],
        "text/csv; charset=utf-8; header=present"
    );
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"periods.csv\""
    );
    assert!(
        headers["link"]
            .to_str()
            .unwrap()
            .contains(&format!("<{path}?page=1>; rel=\"self\"")),
        "{:?}",
        headers["link"]
    );
    let rows = parse_csv(&text);
    assert_eq!(rows[0], ["id", "startDate", "terminatedDate", "i9Ids"]);
    assert_eq!(rows.len(), 3, "a header and 2 rows");
    assert_eq!(json["total"], 2);
    let first = &json["searchResult"][0];
    assert_eq!(
        rows[1],
        [
            first["id"].to_string(),
            first["startDate"].as_str().unwrap().to_owned(),
            "2026-06-30".to_owned(),
            format!("[{old_i9}]"),
        ]
    );
    assert_eq!(
        rows[2][1..],
        ["2026-12-01".to_owned(), String::new(), "[]".to_owned()]
    );

    // History: more entries than a JSON page, every one in the CSV; a text
    // value starting with = + - @ neutralised.
    for request_id in ["=1+2", "+1", "@SUM(A1)"] {
        sqlx::query(
            "INSERT INTO audit_log (action, resource_type, resource_id, request_id, detail)
             VALUES ('employee.update', 'employee', $1::TEXT, $2, '{\"fields\": [\"job_title\"]}')",
        )
        .bind(james)
        .bind(request_id)
        .execute(app.pool())
        .await
        .unwrap();
    }
    sqlx::query(
        "INSERT INTO audit_log (action, resource_type, resource_id, detail)
         SELECT 'employee.update', 'employee', $1::TEXT, '{}' FROM generate_series(1, 60)",
    )
    .bind(james)
    .execute(app.pool())
    .await
    .unwrap();
    let entries = audit_rows(&app, "employee", james).await;
    assert!(entries > 60, "{entries}");
    let path = format!("/v1/employees/{james}/history");
    let json = app.get_json(&path, &admin).await;
    assert_eq!(json["total"], entries);
    assert_eq!(json["searchResult"].as_array().unwrap().len(), 50);
    let (status, headers, text) = get_as(&app, &path, &admin, csv).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"history.csv\""
    );
    let rows = parse_csv(&text);
    assert_eq!(
        rows[0],
        [
            "at",
            "action",
            "actor",
            "requestId",
            "fields",
            "legalHold",
            "everifyCaseId"
        ],
        "the JSON member names, in their order"
    );
    assert_eq!(
        rows.len() as i64,
        entries + 1,
        "a header and a row per entry"
    );
    let request_ids: Vec<&str> = rows[1..].iter().map(|r| r[3].as_str()).collect();
    for neutralised in ["'=1+2", "'+1", "'@SUM(A1)", "'-2.3"] {
        assert!(
            request_ids.contains(&neutralised),
            "{neutralised} in {request_ids:?}"
        );
    }
    assert!(!request_ids
        .iter()
        .any(|r| r.starts_with(['=', '+', '-', '@'])));
    // The re-hire's update (its response showed the number: an ssn.read too).
    let rehire = rows[1..]
        .iter()
        .find(|r| r[3] == "'-2.3" && r[1] == "employee.rehire")
        .unwrap();
    let actor: Value = serde_json::from_str(&rehire[2]).unwrap();
    assert_eq!(actor["login"], "admin", "an object as its JSON text");
    let fields: Vec<String> = serde_json::from_str(&rehire[4]).unwrap();
    assert!(fields.contains(&"startDate".to_owned()), "{fields:?}");
    // page_size still asks for fewer.
    let (_, _, text) = get_as(&app, &format!("{path}?page_size=10&page=2"), &admin, csv).await;
    assert_eq!(parse_csv(&text).len(), 11);

    // An I-9's history the same way.
    let path = format!("/v1/i9s/{old_i9}/history");
    app.get_json(&format!("/v1/i9s/{old_i9}"), &admin).await; // an ssn.read
    let json = app.get_json(&path, &admin).await;
    let (status, headers, text) = get_as(&app, &path, &admin, csv).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"history.csv\""
    );
    let rows = parse_csv(&text);
    assert_eq!(
        rows[0],
        [
            "at",
            "action",
            "actor",
            "requestId",
            "fields",
            "legalHold",
            "everifyCaseId"
        ]
    );
    assert_eq!(json["total"], audit_rows(&app, "i9", old_i9).await);
    assert_eq!(rows.len() as i64 - 1, json["total"].as_i64().unwrap());
    assert_eq!(
        rows[1][1],
        json["searchResult"][0]["action"].as_str().unwrap()
    );

    // 406 for an Accept allowing neither; a bad query stays a 400 problem.
    for path in [
        format!("/v1/employees/{james}/periods"),
        format!("/v1/employees/{james}/history"),
        format!("/v1/i9s/{old_i9}/history"),
    ] {
        for accept in ["application/xml", "text/csv;q=0, application/json;q=0"] {
            let (status, headers, text) = get_as(&app, &path, &admin, accept).await;
            assert_eq!(status, 406, "{path} {accept}");
            assert_eq!(headers["content-type"], "application/problem+json");
            assert!(text.contains("/problems/not-acceptable"), "{text}");
        }
        let (status, headers, _) = get_as(&app, &format!("{path}?x=1"), &admin, csv).await;
        assert_eq!(status, 400, "{path}");
        assert_eq!(headers["content-type"], "application/problem+json");
    }
}

async fn i9_of(app: &TestApp, employee: i64) -> Option<i64> {
    sqlx::query_scalar("SELECT id FROM i9s WHERE employee_id = $1 ORDER BY id DESC LIMIT 1")
        .bind(employee)
        .fetch_optional(app.pool())
        .await
        .unwrap()
}

async fn remote_hire(app: &TestApp, token: &str, first: &str, email: &str) -> (i64, String) {
    let r = app
        .post_json(
            "/v1/employees",
            token,
            &json!({"firstName": first, "lastName": "Hire", "locationId": 3, "emailAddress": email,
                    "startDate": "2026-12-01", "createRemotehireI9": "yes"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let body: Value = r.json().await.unwrap();
    (
        body["id"].as_i64().unwrap(),
        body["i9FormSection1Link"].as_str().unwrap().to_owned(),
    )
}

async fn page_status(app: &TestApp, link: &str) -> u16 {
    app.http.get(link).send().await.unwrap().status().as_u16()
}

async fn count_where(app: &TestApp, sql: &str, id: i64) -> i64 {
    app.count(sql, id).await
}

#[tokio::test]
async fn a_lost_section_1_link_is_replaced_and_emailed_once() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(ADMIN).await;
    let (employee, old_link) = remote_hire(&app, &admin, "Lina", "lina@mail.example").await;
    i9_tests::eventually("the worker creates the I-9", || async {
        i9_of(&app, employee).await.is_some()
    })
    .await;
    i9_tests::eventually("the remote-hire email arrives", || async {
        !app.smtp().to("lina@mail.example").is_empty()
    })
    .await;
    let i9 = i9_of(&app, employee).await.unwrap();
    assert_eq!(page_status(&app, &old_link).await, 200);

    let r = app
        .post_json(&format!("/v1/i9s/{i9}/section1-link"), &admin, &json!({}))
        .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    let new_link = body["i9Section1Link"].as_str().unwrap().to_owned();
    assert_eq!(body["id"], i9);
    assert_eq!(body["emailed"], true);
    assert!(new_link.starts_with(&format!("{}/i9/section1/s1_", app.address)));
    assert_ne!(new_link, old_link);
    // The old link stops working at once; the new one opens the form.
    assert_eq!(page_status(&app, &old_link).await, 404);
    assert_eq!(page_status(&app, &new_link).await, 200);

    // Exactly one email more, with the new link: a later remote hire's email
    // comes after it (one job of a kind at a time).
    i9_tests::eventually("the new link's email arrives", || async {
        app.smtp().to("lina@mail.example").len() >= 2
    })
    .await;
    remote_hire(&app, &admin, "Mark", "marker@mail.example").await;
    i9_tests::eventually("the marker email arrives", || async {
        !app.smtp().to("marker@mail.example").is_empty()
    })
    .await;
    let mails = app.smtp().to("lina@mail.example");
    assert_eq!(
        mails.len(),
        2,
        "the first email and exactly one for the new link"
    );
    assert!(mails[1].text.contains(&new_link), "{}", mails[1].text);
    assert_eq!(app.smtp().messages().len(), 3);

    // Audited once, never the token.
    let reissued = count_where(
        &app,
        "SELECT count(*) FROM audit_log WHERE action = 'i9.section1_link_reissued' AND resource_id = $1::TEXT",
        i9,
    )
    .await;
    assert_eq!(reissued, 1);
    let token = new_link.rsplit('/').next().unwrap().to_owned();
    let leaked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log a WHERE row_to_json(a)::TEXT LIKE '%' || $1 || '%'",
    )
    .bind(&token)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(leaked, 0);
    let history = app.get_json(&format!("/v1/i9s/{i9}/history"), &admin).await;
    assert_eq!(
        history["searchResult"][0]["action"],
        "i9.section1_link_reissued"
    );
    assert_eq!(history["searchResult"][0]["actor"]["login"], "admin");
    // Still one request for the I-9: its link was replaced.
    assert_eq!(
        count_where(
            &app,
            "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
            employee
        )
        .await,
        1
    );
}

#[tokio::test]
async fn only_an_i9_awaiting_section_1_gets_a_new_link() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    // Without an email address, and without a request of its own: the link
    // is made, and nothing is emailed.
    let quiet = app
        .insert_employee("Quinn", "Quiet", "Portland Warehouse", None)
        .await;
    let i9 = app.insert_i9(quiet, "Section 1 Incomplete").await;
    let jobs = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM job_outbox")
            .fetch_one(app.pool())
            .await
            .unwrap()
    };
    let jobs_before = jobs().await;
    let r = app
        .post_json(&format!("/v1/i9s/{i9}/section1-link"), &admin, &json!({}))
        .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["emailed"], false);
    let link = body["i9Section1Link"].as_str().unwrap().to_owned();
    assert_eq!(page_status(&app, &link).await, 200);
    assert_eq!(jobs().await, jobs_before, "no email without an address");
    // A second call replaces the link again.
    let again: Value = app
        .post_json(&format!("/v1/i9s/{i9}/section1-link"), &admin, &json!({}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(page_status(&app, &link).await, 404);
    assert_eq!(
        page_status(&app, again["i9Section1Link"].as_str().unwrap()).await,
        200
    );

    // Any other status: 409, nothing written.
    let maria = app.employee_id("EMP-1001").await;
    let signed = app.insert_i9(maria, "Signed Sec 1").await;
    let audit_before: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(app.pool())
        .await
        .unwrap();
    let r = app
        .post_json(
            &format!("/v1/i9s/{signed}/section1-link"),
            &admin,
            &json!({}),
        )
        .await;
    assert_eq!(r.status(), 409);
    let p: Value = r.json().await.unwrap();
    assert!(
        p["detail"].as_str().unwrap().contains("Signed Sec 1"),
        "{p}"
    );
    let audit_after: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(audit_after, audit_before);
    assert_eq!(
        count_where(
            &app,
            "SELECT count(*) FROM i9_requests WHERE i9_id = $1",
            signed
        )
        .await,
        0
    );

    // Permission 4; visibility; a partner's token: 403.
    let boston = app.token(BOSTON_VIEWER).await;
    let path = format!("/v1/i9s/{i9}/section1-link");
    assert_eq!(
        app.post_json(&path, &boston, &json!({})).await.status(),
        403
    );
    let west = app.token(WEST_HR).await;
    let bo = app
        .insert_employee("Bo", "Ston", "Boston Office", None)
        .await;
    let bo_i9 = app.insert_i9(bo, "Section 1 Incomplete").await;
    let r = app
        .post_json(&format!("/v1/i9s/{bo_i9}/section1-link"), &west, &json!({}))
        .await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        app.post_json("/v1/i9s/99999/section1-link", &admin, &json!({}))
            .await
            .status(),
        404
    );
    let partner = partner_token(&app).await;
    assert_eq!(
        app.post_json(&path, &partner, &json!({})).await.status(),
        403
    );
    assert_eq!(
        count_where(
            &app,
            "SELECT count(*) FROM i9_requests WHERE i9_id = $1",
            bo_i9
        )
        .await,
        0
    );
}

/// The ids of the employees of `groups`, ascending.
async fn employees_in(app: &TestApp, groups: &[i64]) -> Vec<i64> {
    sqlx::query_scalar("SELECT id FROM employees WHERE location_id = ANY($1) ORDER BY id")
        .bind(groups)
        .fetch_all(app.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn location_id_within_finds_a_group_and_every_group_below_it() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let acme = app.group_id("Acme").await;
    let west = app.group_id("West Region").await;
    let portland = app.group_id("Portland Warehouse").await;
    let seattle = app.group_id("Seattle Office").await;
    // One employee right in the region's own group, and one outside it.
    app.insert_employee("Reg", "Ion", "West Region", None).await;
    app.insert_employee("Out", "Side", "Boston Office", None)
        .await;
    let region = employees_in(&app, &[west, portland, seattle]).await;
    assert!(region.len() >= 3, "{region:?}");
    let body = app
        .get_json(&format!("/v1/employees?locationIdWithin={west}"), &admin)
        .await;
    assert_eq!(ids(&body), region);
    assert_eq!(
        link(&body, "self").unwrap(),
        format!("/v1/employees?locationIdWithin={west}&page=1")
    );
    // A group without groups below it: itself, as locationId.
    let body = app
        .get_json(
            &format!("/v1/employees?locationIdWithin={portland}"),
            &admin,
        )
        .await;
    assert_eq!(ids(&body), employees_in(&app, &[portland]).await);
    // Combined with other filters, and within the caller's visibility.
    let body = app
        .get_json(
            &format!("/v1/employees?locationIdWithin={acme}&lastName=Ion"),
            &admin,
        )
        .await;
    assert_eq!(ids(&body).len(), 1);
    let west_hr = app.token(WEST_HR).await;
    let body = app
        .get_json(&format!("/v1/employees?locationIdWithin={acme}"), &west_hr)
        .await;
    assert_eq!(ids(&body), region, "Boston is outside west.hr's groups");
    let body = app
        .get_json(&format!("/v1/employees?locationIdWithin={acme}"), &admin)
        .await;
    let mut all: Vec<i64> = sqlx::query_scalar("SELECT id FROM employees ORDER BY id")
        .fetch_all(app.pool())
        .await
        .unwrap();
    all.truncate(50);
    assert_eq!(ids(&body), all, "every group is below Acme");
    // An unknown group finds no one; a bad value or a repeat is a 400.
    let body = app
        .get_json("/v1/employees?locationIdWithin=99999", &admin)
        .await;
    assert_eq!(ids(&body), Vec::<i64>::new());
    for (query, code) in [
        ("locationIdWithin=West", "invalid_integer"),
        ("locationIdWithin=", "empty"),
        ("locationIdWithin=2&locationIdWithin=3", "repeated"),
    ] {
        let r = app.get(&format!("/v1/employees?{query}"), &admin).await;
        assert_eq!(r.status(), 400, "{query}");
        let p: Value = r.json().await.unwrap();
        assert_eq!(p["errors"][0]["field"], "locationIdWithin", "{query}");
        assert_eq!(p["errors"][0]["code"], code, "{query}");
    }
}

#[tokio::test]
async fn a_regions_i9_queue_is_one_query() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let west = app.group_id("West Region").await;
    let portland = app.group_id("Portland Warehouse").await;
    let seattle = app.group_id("Seattle Office").await;
    let inside = app
        .insert_employee("Reg", "Ion", "Portland Warehouse", None)
        .await;
    let outside = app
        .insert_employee("Out", "Side", "Boston Office", None)
        .await;
    let (i9_in, i9_out) = (
        app.insert_i9(inside, "Section 1 Incomplete").await,
        app.insert_i9(outside, "Section 1 Incomplete").await,
    );
    let expected: Vec<i64> = sqlx::query_scalar(
        "SELECT i.id FROM i9s i JOIN employees e ON e.id = i.employee_id
         WHERE e.location_id = ANY($1) AND i.status = 'Section 1 Incomplete' ORDER BY i.id",
    )
    .bind([west, portland, seattle])
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert!(expected.contains(&i9_in) && !expected.contains(&i9_out));
    let body = app
        .get_json(
            &format!("/v1/i9s?locationIdWithin={west}&i9Status=Section%201%20Incomplete"),
            &admin,
        )
        .await;
    let mut got = ids(&body);
    got.sort_unstable();
    assert_eq!(got, expected);
    assert_eq!(body["total"], expected.len());
    // The exact group only with locationId.
    let body = app
        .get_json(&format!("/v1/i9s?locationId={portland}"), &admin)
        .await;
    assert!(ids(&body).contains(&i9_in));
    let body = app
        .get_json(&format!("/v1/i9s?locationId={west}"), &admin)
        .await;
    assert!(!ids(&body).contains(&i9_in));
    let r = app.get("/v1/i9s?locationIdWithin=West", &admin).await;
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn a_termination_and_a_re_hire_are_named_in_the_history() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let group: i64 = app
        .count("SELECT location_id FROM employees WHERE id = $1", maria)
        .await;
    let path = format!("/v1/employees/{maria}");
    let names = json!({"firstName": "Maria", "lastName": "Lopez", "locationId": group});
    let mut body = names.clone();
    body["terminatedDate"] = json!("2026-12-31");
    assert_eq!(app.patch_json(&path, &admin, &body).await.status(), 200);
    // Changing the date of a termination is an update.
    body["terminatedDate"] = json!("2027-01-15");
    assert_eq!(app.patch_json(&path, &admin, &body).await.status(), 200);
    let mut body = names.clone();
    body["rehire"] = json!("yes");
    body["startDate"] = json!("2027-03-01");
    assert_eq!(app.patch_json(&path, &admin, &body).await.status(), 200);
    let history = app
        .get_json(&format!("/v1/employees/{maria}/history"), &admin)
        .await;
    let actions: Vec<&str> = history["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .filter(|a| a.starts_with("employee."))
        .collect();
    // Newest first.
    assert_eq!(
        actions,
        ["employee.rehire", "employee.update", "employee.terminate"],
        "{history}"
    );
}
