//! The organization's calendar (docs/calendar.md): closed days set and
//! removed by the compliance role, and counted by every new Section 2
//! deadline; and Section 2's alternative procedure
//! (docs/remote-examination.md), for an E-Verify employer in good standing
//! only.

use i9_common::{
    crypto::DataCipher,
    seed::{self, ClosedDay, Outcome, SeedError},
    Config,
};
use i9_tests::{
    eventually, fixture, spawn_app, spawn_stack, TestApp, TestDb, ADMIN, BOSTON_VIEWER,
};
use serde_json::{json, Value};

async fn put_closed_day(app: &TestApp, token: &str, date: &str, body: &Value) -> reqwest::Response {
    app.http
        .put(app.url(&format!("/v1/calendar/closed-days/{date}")))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn delete_closed_day(app: &TestApp, token: &str, date: &str) -> reqwest::Response {
    app.http
        .delete(app.url(&format!("/v1/calendar/closed-days/{date}")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

async fn errors(r: reqwest::Response, status: u16) -> Vec<(String, String)> {
    assert_eq!(r.status(), status);
    let body: Value = r.json().await.unwrap();
    body["errors"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// An employee hired through the API with an I-9 (made by the worker)
/// starting on `start`: the I-9's `dateDue`.
async fn hire(app: &TestApp, token: &str, last_name: &str, start: &str) -> String {
    let body = json!({"firstName": "Cal", "lastName": last_name, "locationId": 3,
                      "startDate": start, "createI9": "yes"});
    let r = app.post_json("/v1/employees", token, &body).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    eventually("the I-9 is created", || async {
        app.i9_count(id).await == 1
    })
    .await;
    let i9 = app
        .count("SELECT id FROM i9s WHERE employee_id = $1", id)
        .await;
    app.get_json(&format!("/v1/i9s/{i9}"), token).await["dateDue"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn section2_due(app: &TestApp, token: &str, start: &str) -> Value {
    app.get_json(
        &format!("/v1/calendar/section2-due?startDate={start}"),
        token,
    )
    .await["section2Due"]
        .clone()
}

/// M-274: Section 2 within three business days. Thursday 2030-01-03 is due
/// Tuesday 2030-01-08; with Monday 2030-01-07 closed by the organization,
/// a new I-9 is due Wednesday 2030-01-09, and the I-9 created before the
/// day was closed keeps its deadline.
#[tokio::test]
async fn a_closed_day_moves_the_date_due_of_a_new_i9_only() {
    let app = spawn_stack().await;
    let admin = app.token(ADMIN).await;
    assert_eq!(
        hire(&app, &admin, "Before", "2030-01-03").await,
        "2030-01-08"
    );
    assert_eq!(section2_due(&app, &admin, "2030-01-03").await, "2030-01-08");

    let r = put_closed_day(
        &app,
        &admin,
        "2030-01-07",
        &json!({"name": "Inventory day"}),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!(section2_due(&app, &admin, "2030-01-03").await, "2030-01-09");
    assert_eq!(
        hire(&app, &admin, "After", "2030-01-03").await,
        "2030-01-09"
    );
    let kept: Vec<String> = sqlx::query_scalar(
        "SELECT i.date_due::TEXT FROM i9s i JOIN employees e ON e.id = i.employee_id
         WHERE e.last_name = 'Before'",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(kept, ["2030-01-08"], "a deadline already computed stays");

    // Open again: new deadlines are counted without it.
    assert_eq!(
        delete_closed_day(&app, &admin, "2030-01-07").await.status(),
        204
    );
    assert_eq!(section2_due(&app, &admin, "2030-01-03").await, "2030-01-08");
}

#[tokio::test]
async fn closed_days_are_read_by_hr_and_written_by_the_compliance_role_audited() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let viewer = app.token(BOSTON_VIEWER).await;
    let audited = |action: &'static str| {
        let pool = app.pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM audit_log WHERE action = $1
                   AND resource_type = 'closed_day' AND resource_id = '2030-12-24'",
            )
            .bind(format!("calendar.closed_day_{action}"))
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };

    // The viewer (no permission 5) may read, not write.
    let r = put_closed_day(
        &app,
        &viewer,
        "2030-12-24",
        &json!({"name": "Christmas Eve"}),
    )
    .await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        delete_closed_day(&app, &viewer, "2030-12-24")
            .await
            .status(),
        403
    );

    let r = put_closed_day(
        &app,
        &admin,
        "2030-12-24",
        &json!({"name": " Christmas Eve "}),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!(
        r.headers()["location"].to_str().unwrap(),
        "/v1/calendar/closed-days/2030-12-24"
    );
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"date": "2030-12-24", "name": "Christmas Eve"})
    );
    // Its Location answers it, to any HR user; a day not closed is a 404.
    assert_eq!(
        app.get_json("/v1/calendar/closed-days/2030-12-24", &viewer)
            .await,
        json!({"date": "2030-12-24", "name": "Christmas Eve"})
    );
    assert_eq!(
        app.get("/v1/calendar/closed-days/2030-12-23", &viewer)
            .await
            .status(),
        404
    );
    // The same again changes nothing and is not audited; a new name is.
    let r = put_closed_day(
        &app,
        &admin,
        "2030-12-24",
        &json!({"name": "Christmas Eve"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(audited("set").await, 1);
    let r = put_closed_day(&app, &admin, "2030-12-24", &json!({"name": "Holiday"})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(audited("set").await, 2);

    let listed = app
        .get_json("/v1/calendar/closed-days?year=2030", &viewer)
        .await;
    assert_eq!(
        listed,
        json!({"closedDays": [{"date": "2030-12-24", "name": "Holiday"}]})
    );
    let other_year = app
        .get_json("/v1/calendar/closed-days?year=2031", &viewer)
        .await;
    assert_eq!(other_year, json!({"closedDays": []}));

    // Bad input: named, nothing written.
    let mut named = errors(
        put_closed_day(&app, &admin, "2030-12-31", &json!({"nom": "x"})).await,
        422,
    )
    .await;
    named.sort();
    assert_eq!(
        named,
        [
            ("name".to_owned(), "required".to_owned()),
            ("nom".to_owned(), "unknown_field".to_owned()),
        ]
    );
    let long = "x".repeat(101);
    assert_eq!(
        errors(
            put_closed_day(&app, &admin, "2030-12-31", &json!({"name": long})).await,
            422
        )
        .await,
        [("name".to_owned(), "too_long".to_owned())]
    );
    // A path that is not a day: a 400 naming `date`, as a bad date of a
    // query is, for each method (for PUT once its body is read: a bad body
    // is named first).
    let bad_date = [("date".to_owned(), "invalid_date".to_owned())];
    for date in ["2030-02-30", "12-31-2030", "2030-1-1", "2100-01-01", "x"] {
        let r = put_closed_day(&app, &admin, date, &json!({"name": "x"})).await;
        assert_eq!(errors(r, 400).await, bad_date, "PUT {date}");
        let r = put_closed_day(&app, &admin, date, &json!({"nom": "x"})).await;
        assert_eq!(errors(r, 422).await.len(), 2, "PUT {date}, bad body");
        let r = delete_closed_day(&app, &admin, date).await;
        assert_eq!(errors(r, 400).await, bad_date, "DELETE {date}");
        let r = app
            .get(&format!("/v1/calendar/closed-days/{date}"), &viewer)
            .await;
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        assert_eq!(errors(r, 400).await, bad_date, "GET {date}");
    }
    assert_eq!(
        errors(
            app.get("/v1/calendar/closed-days?year=20x0", &viewer).await,
            400
        )
        .await,
        [("year".to_owned(), "invalid_integer".to_owned())]
    );
    assert_eq!(
        errors(
            app.get("/v1/calendar/closed-days?yaer=2030", &viewer).await,
            400
        )
        .await,
        [("yaer".to_owned(), "unknown_parameter".to_owned())]
    );
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM closed_days")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(rows, 1, "only 2030-12-24 is closed");

    assert_eq!(
        delete_closed_day(&app, &admin, "2030-12-24").await.status(),
        204
    );
    assert_eq!(audited("removed").await, 1);
    assert_eq!(
        app.get("/v1/calendar/closed-days/2030-12-24", &viewer)
            .await
            .status(),
        404,
        "open again"
    );
    assert_eq!(
        delete_closed_day(&app, &admin, "2030-12-24").await.status(),
        404
    );
    assert_eq!(audited("removed").await, 1);
}

/// Business days and federal working days, apart: Christmas Eve 2026 closed
/// by the organization is a federal working day; Christmas Day (a Friday)
/// is a business day, not a federal working day.
#[tokio::test]
async fn the_calendar_keeps_business_days_and_federal_working_days_apart() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let viewer = app.token(BOSTON_VIEWER).await;
    let r = put_closed_day(
        &app,
        &admin,
        "2026-12-24",
        &json!({"name": "Christmas Eve"}),
    )
    .await;
    assert_eq!(r.status(), 201);
    let cal = app
        .get_json("/v1/calendar?from=2026-12-24&to=2026-12-28", &viewer)
        .await;
    let days: Vec<(String, bool, bool, Value, Value)> = cal["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["date"].as_str().unwrap().to_owned(),
                d["businessDay"].as_bool().unwrap(),
                d["federalWorkingDay"].as_bool().unwrap(),
                d["federalHoliday"].clone(),
                d["closedDay"].clone(),
            )
        })
        .collect();
    let t = |d: &str, b, f, h: Value, c: Value| (d.to_owned(), b, f, h, c);
    assert_eq!(
        days,
        [
            t(
                "2026-12-24",
                false,
                true,
                Value::Null,
                json!("Christmas Eve")
            ),
            t(
                "2026-12-25",
                true,
                false,
                json!("Christmas Day"),
                Value::Null
            ),
            t("2026-12-26", false, false, Value::Null, Value::Null),
            t("2026-12-27", false, false, Value::Null, Value::Null),
            t("2026-12-28", true, true, Value::Null, Value::Null),
        ]
    );
    assert_eq!(cal["days"][0]["weekday"], "Thursday");

    let mut e = errors(
        app.get("/v1/calendar?from=2026-12-28&to=2026-12-24", &viewer)
            .await,
        400,
    )
    .await;
    e.sort();
    assert_eq!(
        e,
        [
            ("from".to_owned(), "invalid_range".to_owned()),
            ("to".to_owned(), "invalid_range".to_owned())
        ]
    );
    assert_eq!(
        errors(
            app.get("/v1/calendar?from=2026-01-01&to=2027-01-03", &viewer)
                .await,
            400
        )
        .await,
        [("to".to_owned(), "invalid_range".to_owned())]
    );
    assert_eq!(
        errors(app.get("/v1/calendar?from=2026-13-01", &viewer).await, 400).await,
        [
            ("from".to_owned(), "invalid_date".to_owned()),
            ("to".to_owned(), "required".to_owned())
        ]
    );
}

fn section2_with_alternative_procedure(checked: bool) -> Value {
    json!({
        "listA1DocTitle": "U.S. Passport", "listA1DocIssuer": "U.S. Department of State",
        "listA1DocNumber": "X1234567", "employerFirstName": "Wes", "employerLastName": "Turner",
        "employerTitle": "HR Manager", "employerBusiness": "Acme Staffing US LLC",
        "employerSignature": "Wes Turner", "alternativeProcedure": checked
    })
}

async fn section2(app: &TestApp, token: &str, i9: i64, body: &Value) -> (u16, Value) {
    let r = app
        .post_json(&format!("/v1/i9s/{i9}/section2"), token, body)
        .await;
    (r.status().as_u16(), r.json().await.unwrap())
}

/// The alternative procedure is recorded for an employee of an E-Verify
/// employer in good standing (`acme-us`: an account, status `Active`), and
/// shown on the I-9.
#[tokio::test]
async fn the_alternative_procedure_is_recorded_for_an_everify_employer_in_good_standing() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let maria = app.employee_id("EMP-1001").await; // acme-us
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let (status, rec) =
        section2(&app, &admin, i9, &section2_with_alternative_procedure(true)).await;
    assert_eq!(status, 200, "{rec}");
    assert_eq!(rec["alternativeProcedure"], true);
    assert_eq!(rec["i9Status"], "Signed Sec 2");
    let shown = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(shown["alternativeProcedure"], true);

    // Unchecked (or left out), it is false.
    let other = app.employee_id("EMP-1002").await;
    let i9 = app.insert_i9(other, "Signed Sec 1").await;
    let mut body = section2_with_alternative_procedure(false);
    body.as_object_mut().unwrap().remove("alternativeProcedure");
    let (status, rec) = section2(&app, &admin, i9, &body).await;
    assert_eq!(status, 200, "{rec}");
    assert_eq!(rec["alternativeProcedure"], false);
}

/// Refused, saying why, for an employer not enrolled in E-Verify
/// (`acme-labs`: no account, `Not Ready`) and for one enrolled but not in
/// good standing; nothing is written. Unchecked, the same Section 2 is
/// recorded.
#[tokio::test]
async fn the_alternative_procedure_is_refused_without_everify_in_good_standing() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let lee = app.employee_id("EMP-1003").await; // acme-labs
    let i9 = app.insert_i9(lee, "Signed Sec 1").await;
    let (status, problem) =
        section2(&app, &admin, i9, &section2_with_alternative_procedure(true)).await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["errors"].as_array().unwrap().len(), 1, "{problem}");
    let e = &problem["errors"][0];
    assert_eq!(e["field"], "alternativeProcedure");
    assert_eq!(e["code"], "everify_not_enrolled");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("Acme Labs Inc"), "{message}");
    assert!(message.contains("not enrolled in E-Verify"), "{message}");
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["i9Status"], "Signed Sec 1", "nothing written");

    // Enrolled, but no longer in good standing.
    sqlx::query(
        "UPDATE legal_entities SET everify_id = '7654321', everify_status = 'Terminated'
         WHERE seed_key = 'acme-labs'",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let (status, problem) =
        section2(&app, &admin, i9, &section2_with_alternative_procedure(true)).await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["errors"][0]["code"], "everify_not_in_good_standing");
    assert!(problem["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("\"Terminated\""));

    // Every problem at once: the refusal beside a bad field.
    let mut body = section2_with_alternative_procedure(true);
    body["employerSignature"] = json!("Someone Else");
    let (status, problem) = section2(&app, &admin, i9, &body).await;
    assert_eq!(status, 422);
    let mut fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    fields.sort();
    assert_eq!(fields, ["alternativeProcedure", "employerSignature"]);

    // Unchecked: recorded.
    let (status, rec) = section2(
        &app,
        &admin,
        i9,
        &section2_with_alternative_procedure(false),
    )
    .await;
    assert_eq!(status, 200, "{rec}");
    assert_eq!(rec["alternativeProcedure"], false);
}

/// `i9-admin seed` loads closed days: added once, unchanged the second
/// time, one audit entry for the run; a bad day is named.
#[tokio::test]
async fn the_seed_file_closes_days() {
    let db = TestDb::new().await;
    let cipher = DataCipher::from_config(&Config::for_tests(&db.url));
    let mut org = fixture();
    org.closed_days = vec![
        ClosedDay {
            date: "2030-12-24".into(),
            name: "Christmas Eve".into(),
        },
        ClosedDay {
            date: "11/29/2030".into(),
            name: "Day after Thanksgiving".into(),
        },
    ];
    let first = seed::load(&db.pool, &cipher, &org).await.unwrap();
    let days: Vec<(&str, String, i64, Outcome)> = first
        .iter()
        .filter(|a| a.kind == "closed day")
        .map(|a| (a.kind, a.key.clone(), a.id, a.outcome))
        .collect();
    assert_eq!(
        days,
        [
            (
                "closed day",
                "2030-12-24".to_owned(),
                20301224,
                Outcome::Created
            ),
            (
                "closed day",
                "2030-11-29".to_owned(),
                20301129,
                Outcome::Created
            ),
        ]
    );
    let second = seed::load(&db.pool, &cipher, &org).await.unwrap();
    assert!(second.iter().all(|a| a.outcome == Outcome::Unchanged));
    let audit: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(audit, 1, "one entry for the run that changed anything");

    org.closed_days.push(ClosedDay {
        date: "2030-02-30".into(),
        name: "".into(),
    });
    let err = seed::load(&db.pool, &cipher, &org).await.unwrap_err();
    let SeedError::Invalid(problems) = &err else {
        panic!("{err}")
    };
    let all = problems.join("\n");
    assert!(all.contains("closedDays[2].date"), "{all}");
    assert!(all.contains("closedDays[2].name"), "{all}");
}
