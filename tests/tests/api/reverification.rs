//! Supplement B (docs/reverification.md): reverification and its refusals,
//! receipts and their due date, a rehire recorded on the existing I-9, each
//! entry kept as history and audited.

use chrono::NaiveDate;
use i9_tests::{spawn_app, spawn_app_with, TestApp, ADMIN};
use serde_json::{json, Value};

const EAD: &str = "Employment Authorization Document (Form I-766)";

async fn answer(r: reqwest::Response, expected: u16) -> Value {
    let code = r.status().as_u16();
    let body: Value = r.json().await.unwrap();
    assert_eq!(code, expected, "{body}");
    body
}

fn codes(body: &Value) -> Vec<(String, String)> {
    body["errors"]
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
}

fn reverification(title: &str, expiration: Option<&str>) -> Value {
    let mut b = json!({"documentTitle": title, "documentNumber": "SRC123",
                       "employerName": "Ada Admin", "employerSignature": "ada admin"});
    if let Some(e) = expiration {
        b["documentExpiration"] = json!(e);
    }
    b
}

/// A Completed I-9 of `employee`: `attestation`, the List A document
/// `title` and the reverification date `expires`, executed on `executed`.
async fn completed(
    app: &TestApp,
    employee: i64,
    attestation: Option<&str>,
    title: &str,
    expires: Option<&str>,
    executed: &str,
) -> i64 {
    let id = app.insert_i9(employee, "Completed").await;
    sqlx::query(
        "UPDATE i9s SET attestation = $2, list_a1_doc_title = $3, list_a1_doc_issuer = 'USCIS',
                list_a1_doc_number = 'X1', i9_expiration = $4::DATE, signed_date_employer = $5::DATE,
                date_completed = $5::DATE,
                employment_period_id = (SELECT max(id) FROM employment_periods WHERE employee_id = $6)
         WHERE id = $1",
    )
    .bind(id)
    .bind(attestation)
    .bind(title)
    .bind(expires)
    .bind(executed)
    .bind(employee)
    .execute(app.pool())
    .await
    .unwrap();
    id
}

async fn reverify(app: &TestApp, token: &str, i9: i64, body: &Value) -> reqwest::Response {
    app.post_json(&format!("/v1/i9s/{i9}/reverify"), token, body)
        .await
}

async fn audited(app: &TestApp, action: &str, i9: i64) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = $1 AND resource_type = 'i9' AND resource_id = $2",
    )
    .bind(action)
    .bind(i9.to_string())
    .fetch_one(app.pool())
    .await
    .unwrap()
}

async fn entries(app: &TestApp, i9: i64) -> i64 {
    app.count("SELECT count(*) FROM i9_supplement_b WHERE i9_id = $1", i9)
        .await
}

#[tokio::test]
async fn a_reverification_is_kept_as_history_and_recomputes_i9_expiration() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = completed(
        &app,
        maria,
        Some("alien authorized to work"),
        EAD,
        Some("2026-12-31"),
        "2026-10-05",
    )
    .await;

    let rec = answer(
        reverify(&app, &token, i9, &reverification(EAD, Some("2028-11-30"))).await,
        200,
    )
    .await;
    assert_eq!(rec["i9Expiration"], "2028-11-30");
    assert_eq!(rec["supplementB"].as_array().unwrap().len(), 1);
    let entry = &rec["supplementB"][0];
    assert_eq!(entry["kind"], "reverification");
    assert_eq!(entry["documentList"], "A");
    assert_eq!(entry["documentTitle"], EAD);
    assert_eq!(entry["employerName"], "Ada Admin");
    assert_eq!(entry["employerSignature"], "ada admin", "stored as typed");
    assert!(entry["recordedByUserId"].is_i64());

    // A List C document the second time; the deadline follows it.
    let rec = answer(
        reverify(
            &app,
            &token,
            i9,
            &reverification(
                "Employment Authorization Document issued by DHS",
                Some("2030-01-31"),
            ),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(rec["i9Expiration"], "2030-01-31");
    let list = app
        .get_json(&format!("/v1/i9s/{i9}/supplement-b"), &token)
        .await;
    let kinds: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["documentList"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["A", "C"]);
    assert_eq!(list[0]["i9Expiration"], "2028-11-30", "history keeps each");
    assert_eq!(audited(&app, "i9.reverify", i9).await, 2);
    let history = app.get_json(&format!("/v1/i9s/{i9}/history"), &token).await;
    let reverifications = history["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "i9.reverify")
        .count();
    assert_eq!(reverifications, 2);

    // Not on an I-9 before Completed.
    let open = app.insert_i9(maria, "Signed Sec 2").await;
    answer(
        reverify(&app, &token, open, &reverification(EAD, Some("2028-11-30"))).await,
        409,
    )
    .await;
    assert_eq!(entries(&app, open).await, 0);
}

#[tokio::test]
async fn each_refusal_is_a_422_saying_why_and_writes_nothing() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let cases = [
        (
            Some("citizen"),
            "U.S. Passport",
            "attestation",
            "citizen_not_reverified",
        ),
        (
            Some("noncitizen national"),
            "U.S. Passport",
            "attestation",
            "national_not_reverified",
        ),
        (
            Some("permanent resident"),
            "Permanent Resident Card (Form I-551)",
            "attestation",
            "permanent_resident_not_reverified",
        ),
        (
            None,
            "Permanent Resident Card (Form I-551)",
            "i9",
            "document_not_reverified",
        ),
    ];
    for (attestation, title, field, code) in cases {
        let i9 = completed(
            &app,
            maria,
            attestation,
            title,
            Some("2026-12-31"),
            "2026-10-05",
        )
        .await;
        let p = answer(
            reverify(&app, &token, i9, &reverification(EAD, Some("2028-11-30"))).await,
            422,
        )
        .await;
        assert_eq!(codes(&p), [(field.into(), code.into())], "{attestation:?}");
        assert!(p["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("never"));
        assert_eq!(entries(&app, i9).await, 0);
        assert_eq!(audited(&app, "i9.reverify", i9).await, 0);
        // A receipt update, with no receipt pending, does not send the caller
        // to the reverification it refused: it says why there is none.
        let p = answer(
            app.post_json(
                &format!("/v1/i9s/{i9}/receipt-update"),
                &token,
                &reverification(EAD, Some("2028-11-30")),
            )
            .await,
            409,
        )
        .await;
        let detail = p["detail"].as_str().unwrap();
        assert!(
            detail.contains("It is not reverified either. ") && !detail.contains("/reverify"),
            "{detail}"
        );
        // The I-9 stays as it was.
        sqlx::query("UPDATE i9s SET status = 'Parked' WHERE id = $1")
            .bind(i9)
            .execute(app.pool())
            .await
            .unwrap();
    }

    let i9 = completed(
        &app,
        maria,
        Some("alien authorized to work"),
        EAD,
        Some("2026-12-31"),
        "2026-10-05",
    )
    .await;
    // A List B document is never used to reverify.
    let p = answer(
        reverify(&app, &token, i9, &reverification("Driver's License", None)).await,
        422,
    )
    .await;
    assert_eq!(codes(&p), [("documentTitle".into(), "list_b".into())]);
    // The alternative procedure needs an E-Verify employer in good standing.
    sqlx::query("UPDATE employees SET legal_entity_id = NULL WHERE id = $1")
        .bind(maria)
        .execute(app.pool())
        .await
        .unwrap();
    let mut body = reverification(EAD, Some("2028-11-30"));
    body["alternativeProcedure"] = json!(true);
    let p = answer(reverify(&app, &token, i9, &body).await, 422).await;
    assert_eq!(
        codes(&p),
        [("alternativeProcedure".into(), "everify_not_enrolled".into())]
    );
    assert_eq!(entries(&app, i9).await, 0);

    // The exception: a temporary I-551 stamp is reverified when it expires.
    sqlx::query("UPDATE i9s SET status = 'Parked' WHERE id = $1")
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    let stamp = completed(
        &app,
        maria,
        Some("permanent resident"),
        "Foreign Passport with I-551 Stamp",
        Some("2026-12-31"),
        "2026-10-05",
    )
    .await;
    let rec = answer(
        reverify(
            &app,
            &token,
            stamp,
            &reverification("Permanent Resident Card (Form I-551)", None),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(rec["i9Expiration"], Value::Null, "a green card ends it");
    // And the card is never reverified after that.
    let p = answer(
        reverify(
            &app,
            &token,
            stamp,
            &reverification(EAD, Some("2028-11-30")),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(
        codes(&p),
        [(
            "attestation".into(),
            "permanent_resident_not_reverified".into()
        )]
    );
}

#[tokio::test]
async fn a_receipt_sets_the_due_date_and_the_real_document_clears_it() {
    // Today is 15 December 2026, the authorization expires on 31 December:
    // the receipt is due across the year end.
    let target = NaiveDate::from_ymd_opt(2026, 12, 15).unwrap();
    let offset = (target - chrono::Utc::now().date_naive()).num_days();
    let app = spawn_app_with(|c| c.clock_offset_days = offset).await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = completed(
        &app,
        maria,
        Some("alien authorized to work"),
        EAD,
        Some("2026-12-31"),
        "2026-10-05",
    )
    .await;
    let due = |app: &TestApp| {
        let pool = app.pool().clone();
        async move {
            sqlx::query_scalar::<_, Option<NaiveDate>>(
                "SELECT receipt_due_date FROM i9s WHERE id = $1",
            )
            .bind(i9)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };

    // No receipt pending: nothing to update; reverification comes when the
    // document expires.
    let p = answer(
        app.post_json(
            &format!("/v1/i9s/{i9}/receipt-update"),
            &token,
            &reverification(EAD, Some("2028-11-30")),
        )
        .await,
        409,
    )
    .await;
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("POST /v1/i9s/{i9}/reverify")),
        "{p}"
    );

    let mut body = reverification(EAD, None);
    body["documentReceipt"] = json!(true);
    let rec = answer(reverify(&app, &token, i9, &body).await, 200).await;
    // 90 days from the day the authorization expires (31 December 2026),
    // not from today's recording (15 December): I-9 Central, "Receipts".
    assert_eq!(rec["receiptDueDate"], "2027-03-31");
    assert_eq!(rec["i9Expiration"], Value::Null);
    assert_eq!(rec["supplementB"][0]["documentReceipt"], true);
    assert_eq!(due(&app).await, NaiveDate::from_ymd_opt(2027, 3, 31));

    // While it is pending, the real document is what comes next.
    answer(
        reverify(&app, &token, i9, &reverification(EAD, Some("2028-11-30"))).await,
        409,
    )
    .await;
    let rec = answer(
        app.post_json(
            &format!("/v1/i9s/{i9}/receipt-update"),
            &token,
            &reverification(EAD, Some("2028-11-30")),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(rec["receiptDueDate"], Value::Null);
    assert_eq!(rec["i9Expiration"], "2028-11-30");
    assert_eq!(due(&app).await, None);
    let kinds: Vec<String> =
        sqlx::query_scalar("SELECT kind FROM i9_supplement_b WHERE i9_id = $1 ORDER BY id")
            .bind(i9)
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(kinds, ["reverification", "receipt_update"]);
    assert_eq!(audited(&app, "i9.receipt_update", i9).await, 1);
}

#[tokio::test]
async fn a_section_2_receipt_is_due_90_days_after_the_hire() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    sqlx::query("UPDATE i9s SET start_date = DATE '2026-10-05' WHERE id = $1")
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    let body = json!({
        "listBDocTitle": "Driver's License", "listBDocIssuer": "Oregon DMV", "listBDocNumber": "D1",
        "listCDocTitle": "Social Security Card", "listCDocIssuer": "SSA", "listCDocNumber": "receipt",
        "listCDocReceipt": true, "employerFirstName": "Wes", "employerLastName": "Turner",
        "employerTitle": "HR Manager", "employerBusiness": "Acme", "employerSignature": "Wes Turner"
    });
    let rec = answer(
        app.post_json(&format!("/v1/i9s/{i9}/section2"), &token, &body)
            .await,
        200,
    )
    .await;
    // 5 October 2026 + 90 days, across the year end.
    assert_eq!(rec["receiptDueDate"], "2027-01-03");
    answer(
        app.post_json(&format!("/v1/i9s/{i9}/complete"), &token, &json!({}))
            .await,
        200,
    )
    .await;
    let rec = answer(
        app.post_json(
            &format!("/v1/i9s/{i9}/receipt-update"),
            &token,
            &reverification("Social Security Card", None),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(rec["receiptDueDate"], Value::Null);
    assert_eq!(audited(&app, "i9.receipt_update", i9).await, 1);
}

#[tokio::test]
async fn section_2_follows_a_permanent_residents_temporary_i551_stamp() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    sqlx::query("UPDATE i9s SET attestation = 'permanent resident' WHERE id = $1")
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    let body = json!({
        "listA1DocTitle": "Foreign Passport with I-551 Stamp", "listA1DocIssuer": "Mexico",
        "listA1DocNumber": "G1", "listA1DocExpiration": "2099-06-30",
        "employerFirstName": "Wes", "employerLastName": "Turner", "employerTitle": "HR Manager",
        "employerBusiness": "Acme", "employerSignature": "Wes Turner"
    });
    let rec = answer(
        app.post_json(&format!("/v1/i9s/{i9}/section2"), &token, &body)
            .await,
        200,
    )
    .await;
    assert_eq!(rec["i9Expiration"], "2099-06-30");
}

/// PATCH a re-hire of James (terminated 2026-06-30) starting 2026-12-01.
async fn rehire(app: &TestApp, token: &str, james: i64, extra: Value) -> reqwest::Response {
    let seattle = app.group_id("Seattle Office").await;
    let mut body = json!({"firstName": "James", "lastName": "Chen", "locationId": seattle,
                          "rehire": "yes", "startDate": "2026-12-01"});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    app.patch_json(&format!("/v1/employees/{james}"), token, &body)
        .await
}

#[tokio::test]
async fn a_rehire_within_three_years_is_recorded_on_the_same_i9() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await;
    let i9 = completed(
        &app,
        james,
        Some("citizen"),
        "U.S. Passport",
        None,
        "2023-12-01",
    )
    .await;
    let before: i64 = sqlx::query_scalar("SELECT employment_period_id FROM i9s WHERE id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap();
    let i9s = app.i9_count(james).await;
    let requests = || {
        app.count(
            "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
            james,
        )
    };
    let requests_before = requests().await;

    answer(
        rehire(&app, &token, james, json!({"rehireI9": "supplementB"})).await,
        200,
    )
    .await;
    assert_eq!(app.i9_count(james).await, i9s, "no new I-9");
    assert_eq!(requests().await, requests_before, "no I-9 request");
    let period: i64 =
        sqlx::query_scalar("SELECT max(id) FROM employment_periods WHERE employee_id = $1")
            .bind(james)
            .fetch_one(app.pool())
            .await
            .unwrap();
    let rec = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    let entry = &rec["supplementB"][0];
    assert_eq!(entry["kind"], "rehire");
    assert_eq!(entry["rehireDate"], "2026-12-01");
    assert_eq!(entry["previousEmploymentPeriodId"], before);
    assert_eq!(entry["employmentPeriodId"], period);
    let now: i64 = sqlx::query_scalar("SELECT employment_period_id FROM i9s WHERE id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(now, period, "the I-9 covers the new period");
    assert_eq!(audited(&app, "i9.rehire", i9).await, 1);
}

#[tokio::test]
async fn a_rehire_after_three_years_or_with_expired_authorization_needs_a_new_i9() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let james = app.employee_id("EMP-1002").await;
    let periods = || {
        app.count(
            "SELECT count(*) FROM employment_periods WHERE employee_id = $1",
            james,
        )
    };
    let start = periods().await;

    // Executed 30 November 2023: three years end the day before the rehire.
    let old = completed(
        &app,
        james,
        Some("citizen"),
        "U.S. Passport",
        None,
        "2023-11-30",
    )
    .await;
    let p = answer(
        rehire(&app, &token, james, json!({"rehireI9": "supplementB"})).await,
        422,
    )
    .await;
    assert_eq!(codes(&p), [("rehireI9".into(), "new_i9_required".into())]);
    assert!(p["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("new I-9"));
    assert_eq!(periods().await, start, "nothing written");
    assert_eq!(entries(&app, old).await, 0);

    // Within three years, but the work authorization expired before the rehire.
    sqlx::query("UPDATE i9s SET status = 'Parked' WHERE id = $1")
        .bind(old)
        .execute(app.pool())
        .await
        .unwrap();
    let expired = completed(
        &app,
        james,
        Some("alien authorized to work"),
        EAD,
        Some("2026-11-30"),
        "2025-01-10",
    )
    .await;
    let p = answer(
        rehire(&app, &token, james, json!({"rehireI9": "supplementB"})).await,
        422,
    )
    .await;
    assert_eq!(
        codes(&p),
        [("rehireI9".into(), "reverification_required".into())]
    );
    assert_eq!(entries(&app, expired).await, 0);

    // Not with a new I-9 as well; the default re-hire is as before.
    let p = answer(
        rehire(
            &app,
            &token,
            james,
            json!({"rehireI9": "supplementB", "createI9": "yes"}),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(
        codes(&p),
        [("rehireI9".into(), "mutually_exclusive".into())]
    );
    answer(
        rehire(&app, &token, james, json!({"createI9": "yes"})).await,
        200,
    )
    .await;
    assert_eq!(periods().await, start + 1);
    assert_eq!(entries(&app, expired).await, 0);
}

/// The partner operation's re-hire on Supplement B (docs/reverification.md,
/// "Rehire"): a terminated candidate whose I-9 was completed within three
/// years is re-hired on that I-9 (no new I-9, no request, no link in the
/// answer, also when replayed); a candidate that is not an employee yet
/// cannot be "re-hired" so, and nothing is written.
#[tokio::test]
async fn the_partner_operation_rehires_on_supplement_b() {
    use crate::partners::{candidate, partner_token};
    let app = spawn_app().await;
    let partner = partner_token(&app).await;
    let admin = app.token(ADMIN).await;
    let push = |body: Value, key: &'static str| {
        app.http
            .post(app.url("/v1/partners/i9s/section1"))
            .bearer_auth(&partner)
            .header("idempotency-key", key)
            .json(&body)
            .send()
    };

    // Not an employee yet: a 422 on rehireI9, and no employee written.
    let employees = || app.count("SELECT count(*) FROM employees WHERE 0 = $1", 0);
    let before = employees().await;
    let mut body = candidate("cand-sb");
    body["rehireI9"] = json!("supplementB");
    let p = answer(push(body.clone(), "k-1").await.unwrap(), 422).await;
    assert_eq!(codes(&p), [("rehireI9".into(), "not_a_rehire".into())]);
    assert_eq!(employees().await, before);

    // Hired on 2026-01-05, I-9 completed that week, terminated 2026-06-30.
    let mut first = candidate("cand-sb");
    first["startDate"] = json!("2026-01-05");
    let id = answer(push(first, "k-2").await.unwrap(), 201).await["id"]
        .as_i64()
        .unwrap();
    let i9 = completed(
        &app,
        id,
        Some("citizen"),
        "U.S. Passport",
        None,
        "2026-01-07",
    )
    .await;
    sqlx::query("DELETE FROM i9_requests WHERE employee_id = $1")
        .bind(id)
        .execute(app.pool())
        .await
        .unwrap();
    let r = app
        .patch_json(
            &format!("/v1/employees/{id}"),
            &admin,
            &json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3, "terminatedDate": "2026-06-30"}),
        )
        .await;
    assert_eq!(r.status(), 200);

    // Re-hired on 2026-12-01 on Supplement B: the same I-9, no link; she
    // married meanwhile (a new last name in the push).
    let transaction = || {
        sqlx::query_scalar::<_, Option<String>>(
            "SELECT integration_transaction_id FROM employees WHERE id = $1",
        )
        .bind(id)
        .fetch_one(app.pool())
    };
    let first_transaction = transaction().await.unwrap();
    assert!(first_transaction.is_some());
    body["lastName"] = json!("Diaz-Ruiz");
    let i9s = app.i9_count(id).await;
    let again = answer(push(body.clone(), "k-3").await.unwrap(), 201).await;
    // No I-9 started: no new transaction id; the employee keeps the one of
    // the I-9 it re-hires on.
    assert_eq!(transaction().await.unwrap(), first_transaction);
    assert_eq!(again["id"], id);
    assert_eq!(again["i9Section1Link"], Value::Null);
    assert_eq!(app.i9_count(id).await, i9s, "no new I-9");
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9_requests WHERE employee_id = $1",
            id
        )
        .await,
        0,
        "no I-9 request"
    );
    assert_eq!(entries(&app, i9).await, 1);
    assert_eq!(audited(&app, "i9.rehire", i9).await, 1);
    let rec = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(rec["supplementB"][0]["kind"], "rehire");
    assert_eq!(rec["supplementB"][0]["rehireDate"], "2026-12-01");
    // Supplement B's "New Name": the part that changed, alone.
    assert_eq!(rec["supplementB"][0]["newLastName"], "Diaz-Ruiz");
    assert_eq!(rec["supplementB"][0]["newFirstName"], Value::Null);
    assert_eq!(rec["supplementB"][0]["newMiddleInitial"], Value::Null);

    // The same request again is replayed: the same answer, nothing more.
    let replayed = push(body, "k-3").await.unwrap();
    assert_eq!(replayed.headers()["idempotent-replayed"], "true");
    assert_eq!(answer(replayed, 201).await, again);
    assert_eq!(entries(&app, i9).await, 1);
}

/// A Section 2 List B receipt (a lost driver's license) on a citizen's I-9:
/// the replacement is a List B document, recorded by `receipt-update`; it
/// leaves the I-9 without a reverification date, as a U.S. passport would.
#[tokio::test]
async fn the_replacement_of_a_list_b_receipt_closes_it_and_a_citizen_gets_no_reverification_date() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let section2 = |body: Value| {
        let app = &app;
        let token = &token;
        async move {
            let i9 = app.insert_i9(maria, "Signed Sec 1").await;
            sqlx::query(
                "UPDATE i9s SET start_date = DATE '2026-10-05', attestation = 'citizen' WHERE id = $1",
            )
            .bind(i9)
            .execute(app.pool())
            .await
            .unwrap();
            answer(
                app.post_json(&format!("/v1/i9s/{i9}/section2"), token, &body)
                    .await,
                200,
            )
            .await;
            answer(
                app.post_json(&format!("/v1/i9s/{i9}/complete"), token, &json!({}))
                    .await,
                200,
            )
            .await;
            i9
        }
    };
    let signer = json!({"employerFirstName": "Wes", "employerLastName": "Turner",
                        "employerTitle": "HR Manager", "employerBusiness": "Acme",
                        "employerSignature": "Wes Turner"});
    let with = |docs: Value| {
        let mut b = signer.clone();
        b.as_object_mut()
            .unwrap()
            .extend(docs.as_object().unwrap().clone());
        b
    };

    // The lost license: a List B receipt.
    let i9 = section2(with(json!({
        "listBDocTitle": "Driver's License", "listBDocIssuer": "Oregon DMV", "listBDocNumber": "receipt",
        "listBDocReceipt": true,
        "listCDocTitle": "Social Security Card", "listCDocIssuer": "SSA", "listCDocNumber": "123"
    })))
    .await;
    // Its replacement, a List B document: accepted here (only here).
    let mut license = reverification("Driver's License", Some("2031-05-01"));
    let rec = answer(
        app.post_json(&format!("/v1/i9s/{i9}/receipt-update"), &token, &license)
            .await,
        200,
    )
    .await;
    assert_eq!(rec["receiptDueDate"], Value::Null);
    assert_eq!(
        rec["i9Expiration"],
        Value::Null,
        "a license is not reverified"
    );
    assert_eq!(rec["supplementB"][0]["documentList"], "B");
    // The record still says which Section 2 document was the receipt.
    assert_eq!(
        (
            &rec["listA1DocReceipt"],
            &rec["listBDocReceipt"],
            &rec["listCDocReceipt"]
        ),
        (&json!(false), &json!(true), &json!(false))
    );
    assert_eq!(entries(&app, i9).await, 1);
    // It never reverifies.
    let p = answer(reverify(&app, &token, i9, &license).await, 422).await;
    assert_eq!(codes(&p), [("documentTitle".into(), "list_b".into())]);

    // A lost passport: the replacement U.S. passport brings no
    // reverification date for a citizen (Section 2's rule).
    let i9 = section2(with(json!({
        "listA1DocTitle": "U.S. Passport", "listA1DocIssuer": "U.S. Department of State",
        "listA1DocNumber": "receipt", "listA1DocReceipt": true
    })))
    .await;
    let passport = reverification("U.S. Passport", Some("2035-01-01"));
    let rec = answer(
        app.post_json(&format!("/v1/i9s/{i9}/receipt-update"), &token, &passport)
            .await,
        200,
    )
    .await;
    assert_eq!(rec["receiptDueDate"], Value::Null);
    assert_eq!(rec["i9Expiration"], Value::Null);
    let queued = app
        .get_json("/v1/i9s?queue=reverification&withinDays=3650", &token)
        .await;
    assert!(!i9_tests::ids(&queued).contains(&i9), "{queued}");

    // A receipt recorded in Supplement B (for an EAD) is replaced by a List
    // A or C document, not a List B one.
    let ead = completed(
        &app,
        maria,
        Some("alien authorized to work"),
        EAD,
        Some("2026-12-31"),
        "2026-10-05",
    )
    .await;
    let mut receipt = reverification(EAD, None);
    receipt["documentReceipt"] = json!(true);
    answer(reverify(&app, &token, ead, &receipt).await, 200).await;
    license["documentExpiration"] = json!("2031-05-01");
    let p = answer(
        app.post_json(&format!("/v1/i9s/{ead}/receipt-update"), &token, &license)
            .await,
        422,
    )
    .await;
    assert_eq!(codes(&p), [("documentTitle".into(), "list_b".into())]);
    assert_eq!(entries(&app, ead).await, 1);
}

/// An EAD always has an expiration date: without one (and not a receipt)
/// the I-9 would never be reverified, so Section 2 and Supplement B ask for
/// it.
#[tokio::test]
async fn an_ead_without_its_expiration_is_refused_in_section_2_and_supplement_b() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let open = app.insert_i9(maria, "Signed Sec 1").await;
    let body = json!({
        "listA1DocTitle": EAD, "listA1DocIssuer": "USCIS", "listA1DocNumber": "E1",
        "employerFirstName": "Wes", "employerLastName": "Turner", "employerTitle": "HR Manager",
        "employerBusiness": "Acme", "employerSignature": "Wes Turner"
    });
    let p = answer(
        app.post_json(&format!("/v1/i9s/{open}/section2"), &token, &body)
            .await,
        422,
    )
    .await;
    assert_eq!(
        codes(&p),
        [("listA1DocExpiration".into(), "required".into())]
    );
    let status: String = sqlx::query_scalar("SELECT status FROM i9s WHERE id = $1")
        .bind(open)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(status, "Signed Sec 1", "nothing written");

    let i9 = completed(
        &app,
        maria,
        Some("alien authorized to work"),
        EAD,
        Some("2026-12-31"),
        "2026-10-05",
    )
    .await;
    let p = answer(
        reverify(&app, &token, i9, &reverification(EAD, None)).await,
        422,
    )
    .await;
    assert_eq!(
        codes(&p),
        [("documentExpiration".into(), "required".into())]
    );
    assert_eq!(entries(&app, i9).await, 0);
}

/// With a moved clock (development), Section 2 is signed on the moved day,
/// as Supplement B is: one trial, one calendar (docs/reminders.md).
#[tokio::test]
async fn section_2_is_signed_on_the_moved_day_of_a_trial() {
    let app = spawn_app_with(|c| c.clock_offset_days = 400).await;
    let token = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let moved = || (chrono::Utc::now().date_naive() + chrono::Days::new(400)).to_string();
    let before = moved();
    let body = json!({
        "listA1DocTitle": "U.S. Passport", "listA1DocIssuer": "U.S. Department of State",
        "listA1DocNumber": "P1", "employerFirstName": "Wes", "employerLastName": "Turner",
        "employerTitle": "HR Manager", "employerBusiness": "Acme", "employerSignature": "Wes Turner"
    });
    let rec = answer(
        app.post_json(&format!("/v1/i9s/{i9}/section2"), &token, &body)
            .await,
        200,
    )
    .await;
    // (Read around the call: a run across midnight UTC sees either day.)
    let signed = rec["signedDateEmployer"].as_str().unwrap();
    assert!(signed == before || signed == moved(), "{signed}");
}
