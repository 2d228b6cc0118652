//! E-Verify's Status Change Report (docs/everify.md, "The Status Change
//! Report (2025)"): a file with one row of each outcome gives exactly those
//! counts; importing it again applies nothing, and sends no second email or
//! partner event; headers the import does not know are a 422 naming them;
//! the reverification clears the request and the revoked number is refused.
//! Cases are inserted directly (values bound), as the case workflow is
//! built elsewhere.

use chrono::NaiveDate;
use i9_common::domain::calendar::Calendar;
use i9_tests::{eventually, spawn_app, spawn_partner_stack, TestApp, ADMIN, WEST_HR};
use serde_json::{json, Value};

const EAD: &str = "Employment Authorization Document (Form I-766)";
const PATH: &str = "/v1/eins/{id}/everify/status-change-reports";

/// The legal entity enrolled in E-Verify in the example organization.
async fn entity(app: &TestApp) -> i64 {
    app.id_of(
        "SELECT id FROM legal_entities WHERE entity_name = $1",
        "Acme Staffing US LLC",
    )
    .await
}

/// Make I-9 `i9` Completed with an EAD (`ead`) in Section 2, expiring in a
/// year, and open a Closed, Employment Authorized case `case_number` on it.
async fn verified_with_ead(app: &TestApp, i9: i64, ead: &str, case_number: &str) {
    let entity = entity(app).await;
    let expires = app.config.today() + chrono::Days::new(365);
    sqlx::query(
        "UPDATE i9s SET status = 'Completed', attestation = 'alien authorized to work',
                list_a1_doc_title = $2, list_a1_doc_issuer = 'USCIS', list_a1_doc_number = $3,
                list_a1_doc_expiration = $4, i9_expiration = $4, date_completed = now(),
                signed_date_employer = $5
         WHERE id = $1",
    )
    .bind(i9)
    .bind(EAD)
    .bind(ead)
    .bind(expires)
    .bind(app.config.today())
    .execute(app.pool())
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO everify_cases (i9_id, employee_id, legal_entity_id, program, case_number,
                status, result, created_on, created_by_user_id, creator_name, closed_on,
                closure_reason)
         SELECT i.id, i.employee_id, $2, 'simulator', $3, 'Closed', 'Employment Authorized',
                $4, 1, 'Ada Admin', $4, 'EMPLOYEE_CONTINUES_TO_WORK_AFTER_EA'
         FROM i9s i WHERE i.id = $1",
    )
    .bind(i9)
    .bind(entity)
    .bind(case_number)
    .bind(app.config.today())
    .execute(app.pool())
    .await
    .unwrap();
}

/// An employee of the Seattle office, notified at `notify`, with a verified I-9.
async fn employee_with_case(
    app: &TestApp,
    name: &str,
    notify: Option<&str>,
    ead: &str,
    case_number: &str,
) -> (i64, i64) {
    let e = app
        .insert_employee(name, "Report", "Seattle Office", None)
        .await;
    sqlx::query("UPDATE employees SET notification_email1 = $2 WHERE id = $1")
        .bind(e)
        .bind(notify)
        .execute(app.pool())
        .await
        .unwrap();
    let i9 = app.insert_i9(e, "Completed").await;
    verified_with_ead(app, i9, ead, case_number).await;
    (e, i9)
}

async fn import(app: &TestApp, token: &str, entity: i64, csv: &str) -> reqwest::Response {
    app.http
        .post(app.url(&PATH.replace("{id}", &entity.to_string())))
        .bearer_auth(token)
        .header("Content-Type", "text/csv; charset=utf-8")
        .body(csv.to_owned())
        .send()
        .await
        .unwrap()
}

async fn answer(r: reqwest::Response, expected: u16) -> Value {
    let code = r.status().as_u16();
    let body: Value = r.json().await.unwrap();
    assert_eq!(code, expected, "{body}");
    body
}

fn counts(b: &Value) -> [i64; 5] {
    [
        "applied",
        "alreadyApplied",
        "notCurrent",
        "documentMismatch",
        "notFound",
    ]
    .map(|k| b[k].as_i64().unwrap())
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(app.pool()).await.unwrap()
}

/// The due date: the import day + EVERIFY_REVOCATION_DUE_BUSINESS_DAYS
/// business days, on the organization's calendar.
async fn due(app: &TestApp) -> NaiveDate {
    let today = app.config.today();
    Calendar::load(app.pool(), today)
        .await
        .unwrap()
        .business_days_after(today, app.config.everify_revocation_due_business_days)
}

/// One row of each outcome: applied (a partner's employee, notified by
/// email), the same row again (already applied), a terminated employee (not
/// current), an I-9 whose EAD is another (document mismatch), a case number
/// no case has (not found).
fn report() -> String {
    "Case Number,Last Name,First Name,A-Number,Revoked Document Number,Revocation Date,\n\
     SIM000000000042,Diaz,Ana,A-REDACTED,EADX-4242-A,07/08/2025,\n\
     sim000000000042,Diaz,Ana,A-REDACTED,eadx 4242 a,07/08/2025,\n\
     SIM000000000043,Gone,Gil,A-REDACTED,EADX-4343-A,07/08/2025,\n\
     SIM000000000044,Other,Oda,A-REDACTED,EADX-4444-A,2025-07-24,\n\
     SIM000000000099,Nobody,Ned,A-REDACTED,EADX-9999-A,2025-07-24,\n"
        .to_owned()
}

#[tokio::test]
async fn each_outcome_is_counted_and_a_second_import_applies_and_sends_nothing() {
    let (app, receiver) = spawn_partner_stack().await;
    let admin = app.token(ADMIN).await;
    let entity = entity(&app).await;
    // The partner's employee: its I-9 made by the worker (one creation event).
    let ana = crate::callbacks::hire(&app, "cand-revoked-1").await;
    eventually("the I-9 exists", || async { app.i9_count(ana).await == 1 }).await;
    eventually("the creation callback", || async {
        receiver.received().len() == 1
    })
    .await;
    let ana_i9: i64 = sqlx::query_scalar("SELECT id FROM i9s WHERE employee_id = $1")
        .bind(ana)
        .fetch_one(app.pool())
        .await
        .unwrap();
    sqlx::query("UPDATE employees SET notification_email1 = $2 WHERE id = $1")
        .bind(ana)
        .bind("hr@acme.example")
        .execute(app.pool())
        .await
        .unwrap();
    verified_with_ead(&app, ana_i9, "EADX4242A", "SIM000000000042").await;
    // Terminated yesterday: not current.
    let (gil, _) = employee_with_case(
        &app,
        "Gil",
        Some("hr@acme.example"),
        "EADX4343A",
        "SIM000000000043",
    )
    .await;
    sqlx::query("UPDATE employment_periods SET terminated_date = $2 WHERE employee_id = $1")
        .bind(gil)
        .bind(app.config.today() - chrono::Days::new(1))
        .execute(app.pool())
        .await
        .unwrap();
    // Another EAD than the revoked one.
    employee_with_case(
        &app,
        "Oda",
        Some("hr@acme.example"),
        "EADX5555B",
        "SIM000000000044",
    )
    .await;

    let first = answer(import(&app, &admin, entity, &report()).await, 200).await;
    assert_eq!(counts(&first), [1, 1, 1, 1, 1], "{first}");
    assert_eq!(first["rows"], 5);
    assert_eq!(
        (first["emails"].clone(), first["events"].clone()),
        (1.into(), 1.into())
    );
    let outcomes: Vec<(i64, String)> = first["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["row"].as_i64().unwrap(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            (2, "applied"),
            (3, "already_applied"),
            (4, "not_current"),
            (5, "document_mismatch"),
            (6, "not_found")
        ]
        .map(|(n, o)| (n, o.to_owned()))
    );
    // The answer carries no value of the file.
    let text = first.to_string();
    for value in ["SIM000000000042", "EADX", "Diaz", "REDACTED"] {
        assert!(!text.contains(value), "{value} in {text}");
    }
    let due = due(&app).await;
    assert_eq!(first["dueDate"], json!(due));

    // The I-9 shows the request, and the reverification queue lists it by its due date.
    let record = app.get_json(&format!("/v1/i9s/{ana_i9}"), &admin).await;
    assert_eq!(record["reverificationRequired"]["reason"], "ead_revoked");
    assert_eq!(record["reverificationRequired"]["dueDate"], json!(due));
    assert_eq!(record["reverificationRequired"]["revokedOn"], "2025-07-08");
    assert_eq!(
        record["reverificationRequired"]["caseNumber"],
        "SIM000000000042"
    );
    let queue = app
        .get_json("/v1/i9s?queue=reverification&withinDays=30", &admin)
        .await;
    let listed: Vec<&Value> = queue["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["id"] == ana_i9)
        .collect();
    assert_eq!(listed.len(), 1, "{queue}");
    assert_eq!(listed[0]["documentDueDate"], json!(due));
    assert_eq!(listed[0]["documentDueKind"], "revocation");

    // The second import: nothing applied, the same rows reported.
    let second = answer(import(&app, &admin, entity, &report()).await, 200).await;
    assert_eq!(counts(&second), [0, 2, 1, 1, 1], "{second}");
    assert_eq!(
        (second["emails"].clone(), second["events"].clone()),
        (0.into(), 0.into())
    );

    // Exactly one email and one event, at the SMTP sink and the partner's endpoint.
    eventually("the revocation email", || async {
        app.smtp().to("hr@acme.example").len() == 1
    })
    .await;
    eventually("the document_due callback", || async {
        receiver.received().len() == 2
    })
    .await;
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM job_outbox WHERE kind = 'send_revocation_email'"
        )
        .await,
        1
    );
    let events = crate::callbacks::recorded_events(&app, ana).await;
    assert_eq!(events.get("i9.document_due"), Some(&1), "{events:?}");
    let bodies = crate::callbacks::verified(&receiver);
    let validators = crate::callbacks::webhook_validators(&app).await;
    crate::callbacks::assert_match_the_contract(&validators, &bodies);
    let event = &bodies[1];
    assert_eq!(event["type"], "i9.document_due");
    assert_eq!(event["dueKind"], "revocation");
    assert_eq!(event["dueDate"], json!(due));
    assert_eq!(event["threshold"], Value::Null);
    assert_eq!(event["i9Id"], ana_i9);
    let mail = &app.smtp().to("hr@acme.example")[0];
    assert!(mail.subject.contains("EAD revoked"), "{}", mail.subject);
    assert_eq!(app.smtp().messages().len(), 1);
    assert_eq!(
        count(&app, "SELECT count(*) FROM i9_reverification_requests").await,
        1
    );
    // Two imports recorded and audited with their counts; never the file.
    assert_eq!(
        count(&app, "SELECT count(*) FROM everify_status_change_imports").await,
        2
    );
    let audited: Vec<Value> = sqlx::query_scalar(
        "SELECT detail FROM audit_log WHERE action = 'everify.status_change_report_imported'
         ORDER BY id",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(audited.len(), 2);
    assert_eq!(audited[0]["applied"], 1);
    assert_eq!(audited[1]["alreadyApplied"], 2);
}

#[tokio::test]
async fn unknown_headers_are_a_422_naming_them_and_nothing_is_written() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let entity = entity(&app).await;
    let body = answer(
        import(
            &app,
            &admin,
            entity,
            "Case Number,Shoe Size,Revoked Document Number\nSIM000000000042,9,EADX4242A\n",
        )
        .await,
        422,
    )
    .await;
    let errors = body["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{body}");
    assert_eq!(errors[0]["code"], "unknown_header");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains("\"Shoe Size\""), "{message}");
    assert!(
        message.contains("Headers found: \"Case Number\", \"Shoe Size\""),
        "{message}"
    );
    assert!(
        message.contains("Expected: \"Case Number\", \"Revoked Document Number\""),
        "{message}"
    );
    // Without a case-number column.
    let body = answer(
        import(
            &app,
            &admin,
            entity,
            "Last Name,Revoked Document Number\nDoe,X1\n",
        )
        .await,
        422,
    )
    .await;
    assert_eq!(body["errors"][0]["code"], "missing_header");
    assert_eq!(
        count(&app, "SELECT count(*) FROM everify_status_change_imports").await,
        0
    );
    // The route's own body limit: 5 MB, not the API's 256 KiB.
    let mut big = String::from("Case Number,Revoked Document Number,Last Name\n");
    for n in 0..300 {
        big.push_str(&format!("SIMX{n},EADX{n},{}\n", "x".repeat(1000)));
    }
    let body = answer(import(&app, &admin, entity, &big).await, 200).await;
    assert_eq!(counts(&body), [0, 0, 0, 0, 300]);
    let huge = "x".repeat(5 * 1024 * 1024 + 1);
    assert_eq!(import(&app, &admin, entity, &huge).await.status(), 413);
    // Another media type; a caller limited to some groups; no such legal entity.
    let r = app
        .post_json(
            &PATH.replace("{id}", &entity.to_string()),
            &admin,
            &json!({}),
        )
        .await;
    assert_eq!(r.status(), 415);
    // It names the type this route takes (the HR trial was told "application/json").
    let problem: Value = r.json().await.unwrap();
    assert!(
        problem["detail"].as_str().unwrap().contains("text/csv"),
        "{problem}"
    );
    let west = app.token(WEST_HR).await;
    assert_eq!(import(&app, &west, entity, &report()).await.status(), 403);
    assert_eq!(import(&app, &admin, 999_999, &report()).await.status(), 404);
}

#[tokio::test]
async fn the_reverification_clears_the_request_and_the_revoked_number_is_refused() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let entity = entity(&app).await;
    let (_, i9) = employee_with_case(
        &app,
        "Rita",
        Some("hr@acme.example"),
        "EADX-4242-A",
        "SIM000000000042",
    )
    .await;
    let file = "Case Number,Revoked Document Number\nSIM000000000042,EADX4242A\n";
    let first = answer(import(&app, &admin, entity, file).await, 200).await;
    assert_eq!(counts(&first), [1, 0, 0, 0, 0], "{first}");

    let later = (app.config.today() + chrono::Days::new(400)).to_string();
    let body = |title: &str, number: &str| {
        json!({"documentTitle": title, "documentNumber": number, "documentExpiration": later,
               "employerName": "Ada Admin", "employerSignature": "Ada Admin"})
    };
    let reverify = |b: Value| {
        let app = &app;
        let admin = admin.clone();
        async move {
            app.post_json(&format!("/v1/i9s/{i9}/reverify"), &admin, &b)
                .await
        }
    };
    // The revoked EAD itself, however written: refused, nothing recorded.
    let refused = answer(reverify(body(EAD, "eadx 4242-a")).await, 422).await;
    assert_eq!(refused["errors"][0]["field"], "documentNumber");
    assert_eq!(refused["errors"][0]["code"], "revoked");
    // A List B document, as ever.
    let refused = answer(reverify(body("Driver's License", "D123")).await, 422).await;
    assert_eq!(refused["errors"][0]["code"], "list_b");
    assert_eq!(
        app.count("SELECT count(*) FROM i9_supplement_b WHERE i9_id = $1", i9)
            .await,
        0
    );
    // A new EAD: recorded, the request cleared by it.
    let record = answer(reverify(body(EAD, "EADX7777C")).await, 200).await;
    assert_eq!(record["reverificationRequired"], Value::Null);
    let (cleared, by): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE r.cleared_at IS NOT NULL),
                count(*) FILTER (WHERE r.cleared_by_supplement_b_id = s.id)
         FROM i9_reverification_requests r JOIN i9_supplement_b s ON s.i9_id = r.i9_id
         WHERE r.i9_id = $1",
    )
    .bind(i9)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!((cleared, by), (1, 1));
    let queue = app
        .get_json("/v1/i9s?queue=reverification&withinDays=30", &admin)
        .await;
    assert!(
        queue["searchResult"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["id"] != i9),
        "{queue}"
    );
    // Importing the report again: already applied, not opened again.
    let again = answer(import(&app, &admin, entity, file).await, 200).await;
    assert_eq!(counts(&again), [0, 1, 0, 0, 0], "{again}");
    // The revoked number stays refused after the request is cleared.
    let refused = answer(reverify(body(EAD, "EADX4242A")).await, 422).await;
    assert_eq!(refused["errors"][0]["code"], "revoked");
}

/// The HR trial's files: rows are named by the line they start on (blank
/// lines counted, as a spreadsheet shows them); an empty file, a header
/// without rows and a revocation date after today are each one clear 422,
/// and nothing is recorded.
#[tokio::test]
async fn rows_are_named_by_their_line_and_an_empty_or_future_file_is_one_422() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let entity = entity(&app).await;
    let errors = |b: &Value| -> Vec<(String, String)> {
        b["errors"]
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
    let pair = |f: &str, c: &str| (f.to_owned(), c.to_owned());

    // A bad row after two blank lines: line 4 of the file.
    let body = answer(
        import(
            &app,
            &admin,
            entity,
            "Case Number,Revoked Document Number\n\n\n,EADX4242A\n",
        )
        .await,
        422,
    )
    .await;
    assert_eq!(errors(&body), [pair("row 4", "case_number")], "{body}");

    // An empty body: one error saying so (not two missing headers).
    for empty in ["", "\r\n"] {
        let body = answer(import(&app, &admin, entity, empty).await, 422).await;
        assert_eq!(errors(&body), [pair("file", "empty")], "{body}");
        let message = body["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("The file is empty"), "{message}");
    }
    // A header row alone: no rows, nothing to import.
    let body = answer(
        import(
            &app,
            &admin,
            entity,
            "Case Number,Revoked Document Number,Revocation Date\n\n",
        )
        .await,
        422,
    )
    .await;
    assert_eq!(errors(&body), [pair("file", "no_rows")], "{body}");
    // A revocation after today: the report lists revocations that happened.
    let tomorrow = (app.config.today() + chrono::Days::new(1)).to_string();
    let file = format!(
        "Case Number,Revoked Document Number,Revocation Date\n\
         SIM000000000042,EADX4242A,{}\n\
         SIM000000000043,EADX4343A,2030-01-01\n\
         SIM000000000044,EADX4444A,{tomorrow}\n",
        app.config.today()
    );
    let body = answer(import(&app, &admin, entity, &file).await, 422).await;
    assert_eq!(
        errors(&body),
        [
            pair("row 3", "revocation_date"),
            pair("row 4", "revocation_date")
        ],
        "{body}"
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM everify_status_change_imports").await,
        0,
        "nothing recorded"
    );

    // An import that reads: each row's number is its line, blank lines counted.
    let file = "Case Number,Revoked Document Number\n\n\
                SIM000000000098,EADX9898A\n\n\n\
                SIM000000000099,\"EADX\n9999A\"\n\
                SIM000000000097,EADX9797A\n";
    let body = answer(import(&app, &admin, entity, file).await, 200).await;
    let rows: Vec<i64> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["row"].as_i64().unwrap())
        .collect();
    assert_eq!(rows, [3, 6, 8], "{body}");
    assert_eq!(body["rows"], 3);
}

/// A legal entity not enrolled in E-Verify has no cases and no report: a
/// 409 naming why, nothing recorded (the seed's Acme Labs Inc, without an
/// E-Verify account, and then with one whose status is Not Ready).
#[tokio::test]
async fn a_legal_entity_not_enrolled_in_everify_is_a_409_and_nothing_is_recorded() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let labs = app
        .id_of(
            "SELECT id FROM legal_entities WHERE entity_name = $1",
            "Acme Labs Inc",
        )
        .await;
    let file = "Case Number,Revoked Document Number\nSIM000000000042,EADX4242A\n";
    let body = answer(import(&app, &admin, labs, file).await, 409).await;
    assert_eq!(body["type"], "/problems/conflict");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("\"Acme Labs Inc\" is not enrolled in E-Verify"),
        "{detail}"
    );
    sqlx::query("UPDATE legal_entities SET everify_id = '7654321' WHERE id = $1")
        .bind(labs)
        .execute(app.pool())
        .await
        .unwrap();
    let body = answer(import(&app, &admin, labs, file).await, 409).await;
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("everifyStatus is \"Not Ready\", not \"Active\""),
        "{detail}"
    );
    // Refused before the file is read: an empty file is the same 409.
    assert_eq!(import(&app, &admin, labs, "").await.status(), 409);
    assert_eq!(
        count(&app, "SELECT count(*) FROM everify_status_change_imports").await,
        0
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM audit_log WHERE action = 'everify.status_change_report_imported'"
        )
        .await,
        0
    );
}
