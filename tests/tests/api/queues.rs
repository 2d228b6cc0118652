//! Work queues on `GET /v1/i9s` (docs/api.md, "Filters" and "Work queues"):
//! the `i9Status` filter, date ranges, named queues, the total, CSV.

use i9_tests::{ids, spawn_app, TestApp, ADMIN, WEST_HR};
use serde_json::Value;

/// A 400's errors as (field, code, message).
async fn errors(app: &TestApp, token: &str, path: &str) -> Vec<(String, String, String)> {
    let r = app.get(path, token).await;
    assert_eq!(r.status(), 400, "{path}");
    let body: Value = r.json().await.unwrap();
    body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_owned();
            (s("field"), s("code"), s("message"))
        })
        .collect()
}

/// An employee in `group` with one I-9 in `status`; returns the I-9's id.
async fn i9_in(app: &TestApp, name: &str, group: &str, status: &str) -> i64 {
    let e = app.insert_employee(name, "Queue", group, None).await;
    app.insert_i9(e, status).await
}

async fn employee_of(app: &TestApp, i9: i64) -> i64 {
    sqlx::query_scalar("SELECT employee_id FROM i9s WHERE id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn i9_status_filters_the_list_and_items_carry_the_status() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let incomplete = i9_in(&app, "A", "Seattle Office", "Section 1 Incomplete").await;
    let signed1 = i9_in(&app, "B", "Seattle Office", "Signed Sec 1").await;
    let signed1b = i9_in(&app, "C", "Boston Office", "Signed Sec 1").await;
    let completed = i9_in(&app, "D", "Boston Office", "Completed").await;
    i9_in(&app, "E", "Boston Office", "Parked").await;

    let body = app
        .get_json("/v1/i9s?i9Status=Signed%20Sec%201", &token)
        .await;
    assert_eq!(ids(&body), [signed1, signed1b]);
    let item = &body["searchResult"][0];
    assert_eq!(item["i9Status"], "Signed Sec 1");
    assert_eq!(item["startDate"], "2026-11-02");
    assert_eq!(item["dateDue"], "2026-11-05");
    assert!(item["employeeId"].is_i64());
    assert_eq!(item["i9Expiration"], Value::Null);
    // Its members: the specification's four and the added ones.
    let keys: Vec<&str> = item
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // (Sorted: the JSON object here keeps no order; the CSV header shows it.)
    assert_eq!(
        keys,
        [
            "dateDue",
            "documentDueDate",
            "documentDueKind",
            "emailAddress",
            "employeeId",
            "firstName",
            "i9Expiration",
            "i9Status",
            "id",
            "lastName",
            "startDate"
        ]
    );

    // Case-insensitive; several separated by commas (any of them).
    assert_eq!(
        ids(&app
            .get_json("/v1/i9s?i9Status=section+1+INCOMPLETE", &token)
            .await),
        [incomplete]
    );
    assert_eq!(
        ids(&app
            .get_json(
                "/v1/i9s?i9Status=completed,Section%201%20Incomplete",
                &token
            )
            .await),
        [incomplete, completed]
    );
    // Combined with another filter (AND).
    assert_eq!(
        ids(&app
            .get_json(
                &format!(
                    "/v1/i9s?i9Status=Signed%20Sec%201&employeeId={}",
                    employee_of(&app, signed1b).await
                ),
                &token
            )
            .await),
        [signed1b]
    );

    // An unknown status names the accepted ones; a repeated one is refused;
    // every problem at once.
    let errs = errors(&app, &token, "/v1/i9s?i9Status=Signed&lastName=&page=0").await;
    let fields: Vec<&str> = errs.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(fields, ["i9Status", "lastName", "page"]);
    assert_eq!(errs[0].1, "invalid_value");
    assert!(
        errs[0].2.contains(
            "Section 1 Incomplete, Signed Sec 1, Signed Sec 2, Completed, Approved, Parked"
        ),
        "{}",
        errs[0].2
    );
    for bad in ["Signed%20Sec%201,", "Signed%20Sec%201,,Parked", "Started"] {
        let errs = errors(&app, &token, &format!("/v1/i9s?i9Status={bad}")).await;
        assert_eq!(errs.len(), 1, "{bad}");
        assert_eq!(
            (errs[0].0.as_str(), errs[0].1.as_str()),
            ("i9Status", "invalid_value")
        );
    }
    let errs = errors(&app, &token, "/v1/i9s?i9Status=Parked&i9Status=Completed").await;
    assert_eq!(errs[0].0, "i9Status");
    assert_eq!(errs[0].1, "repeated");
}

/// Set an I-9's dates directly.
async fn set_dates(app: &TestApp, i9: i64, start: &str, due: &str, expiration: Option<&str>) {
    sqlx::query(
        "UPDATE i9s SET start_date = $2::DATE, date_due = $3::DATE, i9_expiration = $4::DATE
         WHERE id = $1",
    )
    .bind(i9)
    .bind(start)
    .bind(due)
    .bind(expiration)
    .execute(app.pool())
    .await
    .unwrap();
}

#[tokio::test]
async fn date_ranges_are_inclusive_and_a_crossed_range_names_both_ends() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let a = i9_in(&app, "A", "Seattle Office", "Signed Sec 1").await;
    let b = i9_in(&app, "B", "Seattle Office", "Signed Sec 1").await;
    let c = i9_in(&app, "C", "Boston Office", "Completed").await;
    set_dates(&app, a, "2026-11-02", "2026-11-05", Some("2027-01-31")).await;
    set_dates(&app, b, "2026-11-09", "2026-11-12", None).await;
    set_dates(&app, c, "2026-11-16", "2026-11-19", Some("2027-03-01")).await;
    let list = |q: &str| {
        let app = &app;
        let token = &token;
        let q = q.to_owned();
        async move { ids(&app.get_json(&format!("/v1/i9s?{q}"), token).await) }
    };

    // Both ends inclusive, either end alone, both formats of a date.
    assert_eq!(
        list("dateDueFrom=2026-11-05&dateDueTo=2026-11-12").await,
        [a, b]
    );
    assert_eq!(list("dateDueFrom=11/06/2026").await, [b, c]);
    assert_eq!(list("dateDueTo=2026-11-04").await, Vec::<i64>::new());
    assert_eq!(list("dateDue=2026-11-12").await, [b]);
    assert_eq!(
        list("startDateFrom=2026-11-09&startDateTo=2026-11-16").await,
        [b, c]
    );
    // A record without the date is outside every range of it.
    assert_eq!(list("i9ExpirationTo=2027-12-31").await, [a, c]);
    assert_eq!(list("i9ExpirationFrom=2027-02-01").await, [c]);
    // Ranges combine with the other filters and with each other.
    assert_eq!(
        list("i9Status=signed+sec+1&dateDueFrom=2026-11-01&startDateTo=2026-11-02").await,
        [a]
    );
    // A one-day range is the exact date.
    assert_eq!(
        list("dateDueFrom=2026-11-19&dateDueTo=2026-11-19").await,
        [c]
    );

    // A from after its to: both named, with every other problem.
    let errs = errors(
        &app,
        &token,
        "/v1/i9s?dateDueFrom=2026-11-20&dateDueTo=2026-11-19&startDateTo=2026-02-30&page=0",
    )
    .await;
    let got: Vec<(&str, &str)> = errs.iter().map(|e| (e.0.as_str(), e.1.as_str())).collect();
    assert_eq!(
        got,
        [
            ("startDateTo", "invalid_date"),
            ("page", "invalid_integer"),
            ("dateDueFrom", "invalid_range"),
            ("dateDueTo", "invalid_range"),
        ]
    );
    assert!(errs[2].2.contains("dateDueTo"), "{}", errs[2].2);
    assert!(errs[3].2.contains("dateDueFrom"), "{}", errs[3].2);
    // The ends of different dates do not cross.
    assert_eq!(
        list("dateDueFrom=2026-11-19&startDateTo=2026-11-16").await,
        [c]
    );
}

fn day(offset: i64) -> String {
    (chrono::Utc::now().date_naive() + chrono::Duration::days(offset)).to_string()
}

/// An I-9 in `status` in `group` with its start date, due date and expiration
/// `offset` days from today.
async fn dated(
    app: &TestApp,
    group: &str,
    status: &str,
    start: i64,
    due: i64,
    expiration: Option<i64>,
) -> i64 {
    let i9 = i9_in(app, status, group, status).await;
    let exp = expiration.map(day);
    set_dates(app, i9, &day(start), &day(due), exp.as_deref()).await;
    i9
}

#[tokio::test]
async fn named_queues_are_one_query_each_with_their_order_filters_paging_and_visibility() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let west = app.token(WEST_HR).await;
    const S1: &str = "Section 1 Incomplete";
    const SS1: &str = "Signed Sec 1";
    // Inserted out of deadline order, so the queue's order is not the id order.
    let d = dated(&app, "Seattle Office", SS1, -1, 2, None).await;
    let e = dated(&app, "Boston Office", SS1, -3, 0, None).await;
    let c = dated(&app, "Portland Warehouse", SS1, -4, -1, None).await;
    let a = dated(&app, "Boston Office", S1, -3, 0, None).await;
    let b = dated(&app, "Seattle Office", S1, 0, 3, None).await; // starts today: not overdue
    dated(&app, "Seattle Office", "Signed Sec 2", -8, -5, None).await;
    dated(&app, "Seattle Office", "Parked", -10, -7, None).await;
    let r1 = dated(&app, "Seattle Office", "Completed", -90, -87, Some(30)).await;
    dated(&app, "Seattle Office", "Approved", -90, -87, Some(31)).await;
    let r3 = dated(&app, "Boston Office", "Approved", -90, -87, Some(-2)).await;
    dated(&app, "Seattle Office", "Parked", -90, -87, Some(1)).await;
    let r5 = dated(
        &app,
        "Portland Warehouse",
        "Signed Sec 2",
        -90,
        -87,
        Some(10),
    )
    .await;

    let list = |q: &str, token: &str| {
        let app = &app;
        let path = format!("/v1/i9s?{q}");
        let token = token.to_owned();
        async move { app.get_json(&path, &token).await }
    };

    // Section 2 due: by dateDue (then id).
    assert_eq!(ids(&list("queue=section2-due", &admin).await), [c, e, d]);
    // Overdue: Section 1 past the start date, Section 2 past dateDue; the
    // longest overdue first (c's deadline and a's start are both past).
    assert_eq!(ids(&list("queue=overdue", &admin).await), [a, c]);
    // Reverification within 30 days: passed ones first, not Parked.
    assert_eq!(
        ids(&list("queue=reverification&withinDays=30", &admin).await),
        [r3, r5, r1]
    );
    assert_eq!(
        ids(&list("queue=REVERIFICATION&withinDays=0", &admin).await),
        [r3]
    );
    // Every I-9 is still listed without a queue.
    assert_eq!(
        list("", &admin).await["searchResult"]
            .as_array()
            .unwrap()
            .len(),
        12
    );
    let _ = b;

    // Visibility: west.hr sees only West Region's (Seattle, Portland).
    assert_eq!(ids(&list("queue=section2-due", &west).await), [c, d]);
    assert_eq!(ids(&list("queue=overdue", &west).await), [c]);
    assert_eq!(
        ids(&list("queue=reverification&withinDays=30", &west).await),
        [r5, r1]
    );

    // Combined with other filters (AND) and with paging; links keep the queue.
    assert_eq!(
        ids(&list(
            &format!("queue=section2-due&dateDueFrom={}", day(0)),
            &admin
        )
        .await),
        [e, d]
    );
    assert_eq!(
        ids(&list("queue=overdue&i9Status=signed+sec+1", &admin).await),
        [c]
    );
    let page = list("queue=section2-due&page_size=2", &admin).await;
    assert_eq!(ids(&page), [c, e]);
    let next = i9_tests::link(&page, "next").unwrap();
    assert_eq!(next, "/v1/i9s?queue=section2-due&page=2&page_size=2");
    assert_eq!(ids(&app.get_json(&next, &admin).await), [d]);

    // Bad queries: every problem named at once.
    let errs = errors(&app, &admin, "/v1/i9s?queue=late").await;
    assert_eq!(
        (errs[0].0.as_str(), errs[0].1.as_str()),
        ("queue", "invalid_value")
    );
    assert!(
        errs[0].2.contains("section2-due, overdue, reverification"),
        "{}",
        errs[0].2
    );
    let fields = |errs: Vec<(String, String, String)>| {
        errs.into_iter().map(|e| (e.0, e.1)).collect::<Vec<_>>()
    };
    let own = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        fields(errors(&app, &admin, "/v1/i9s?queue=reverification").await),
        [own("withinDays", "required")]
    );
    assert_eq!(
        fields(errors(&app, &admin, "/v1/i9s?withinDays=5&queue=overdue").await),
        [own("withinDays", "not_applicable")]
    );
    assert_eq!(
        fields(errors(&app, &admin, "/v1/i9s?withinDays=5").await),
        [own("withinDays", "not_applicable")]
    );
    for bad in ["-1", "3651", "x", "1.5"] {
        assert_eq!(
            fields(
                errors(
                    &app,
                    &admin,
                    &format!("/v1/i9s?queue=reverification&withinDays={bad}")
                )
                .await
            ),
            [own("withinDays", "invalid_integer")],
            "{bad}"
        );
    }
    assert_eq!(
        fields(errors(&app, &admin, "/v1/i9s?queue=late&withinDays=5").await),
        [own("queue", "invalid_value")],
        "a bad queue: whether withinDays applies is unknown"
    );
    assert_eq!(
        fields(errors(&app, &admin, "/v1/i9s?queue=overdue&queue=overdue").await),
        [own("queue", "repeated")]
    );
}

/// Set the current (latest) period of the employee of `i9`: its start, and
/// its end `terminated` days from today (`None`: running).
async fn set_current_period(app: &TestApp, i9: i64, terminated: Option<i64>) {
    let employee = employee_of(app, i9).await;
    sqlx::query(
        "UPDATE employment_periods SET start_date = $2::DATE, terminated_date = $3::DATE
         WHERE id = (SELECT max(id) FROM employment_periods WHERE employee_id = $1)",
    )
    .bind(employee)
    .bind(day(-400))
    .bind(terminated.map(day))
    .execute(app.pool())
    .await
    .unwrap();
}

/// Review: `queue=reverification` listed the I-9s of terminated employees.
/// An employer does not reverify someone no longer employed: an employee
/// whose current period of employment ended today or earlier is left out;
/// one whose termination is still ahead, or who was re-hired, stays
/// (docs/api.md, "Work queues").
#[tokio::test]
async fn the_reverification_queue_leaves_out_terminated_employees() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let active = dated(&app, "Seattle Office", "Completed", -400, -397, Some(5)).await;
    let yesterday = dated(&app, "Seattle Office", "Completed", -400, -397, Some(1)).await;
    set_current_period(&app, yesterday, Some(-1)).await;
    let today = dated(&app, "Boston Office", "Approved", -400, -397, Some(-3)).await;
    set_current_period(&app, today, Some(0)).await;
    let leaving = dated(&app, "Seattle Office", "Approved", -400, -397, Some(7)).await;
    set_current_period(&app, leaving, Some(1)).await;
    // Terminated once, re-hired since: the current period runs.
    let rehired = dated(&app, "Portland Warehouse", "Completed", -400, -397, Some(2)).await;
    set_current_period(&app, rehired, Some(-30)).await;
    sqlx::query("INSERT INTO employment_periods (employee_id, start_date) VALUES ($1, $2::DATE)")
        .bind(employee_of(&app, rehired).await)
        .bind(day(-10))
        .execute(app.pool())
        .await
        .unwrap();

    let path = "/v1/i9s?queue=reverification&withinDays=30";
    let body = app.get_json(path, &admin).await;
    assert_eq!(ids(&body), [rehired, active, leaving]);
    assert_eq!(body["total"], 3);
    // The CSV export is the same queue: a header and three rows.
    let (status, _, text) = get_as(&app, path, &admin, "text/csv").await;
    assert_eq!(status, 200, "{text}");
    let rows = parse_csv(&text);
    assert_eq!(rows.len(), 4, "a header and 3 rows");
    let got: Vec<i64> = rows[1..].iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(got, [rehired, active, leaving]);
    // Each item carries the date that puts it in the queue and orders it,
    // in JSON and in the CSV's ninth column.
    let expirations = [day(2), day(5), day(7)];
    let json: Vec<&str> = body["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["i9Expiration"].as_str().unwrap())
        .collect();
    assert_eq!(json, expirations);
    assert_eq!(rows[0][8], "i9Expiration");
    let csv: Vec<&str> = rows[1..].iter().map(|r| r[8].as_str()).collect();
    assert_eq!(csv, expirations);
    // The terminated ones' I-9s are still in the collection, outside the queue.
    let all = app
        .get_json("/v1/i9s?i9ExpirationFrom=2000-01-01", &admin)
        .await;
    assert_eq!(all["total"], 5);
    for gone in [yesterday, today] {
        assert!(ids(&all).contains(&gone));
    }
}

#[tokio::test]
async fn every_list_carries_the_total_the_caller_may_see_on_every_page() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let west = app.token(WEST_HR).await;
    for (i, group) in ["Seattle Office", "Portland Warehouse", "Boston Office"]
        .iter()
        .enumerate()
    {
        i9_in(&app, &format!("T{i}"), group, "Signed Sec 1").await;
    }
    i9_in(&app, "T3", "Boston Office", "Completed").await;
    let total = |body: &Value| body["total"].as_i64().unwrap();

    // Every collection: the total is the number of matching records, the
    // same on a page of one.
    for path in [
        "/v1/employees?lastName=Queue",
        "/v1/i9s",
        "/v1/eins",
        "/v1/groups",
        "/v1/users",
        "/v1/roles",
        "/v1/groups/1/users",
    ] {
        let all = app.get_json(path, &admin).await;
        let n = all["searchResult"].as_array().unwrap().len() as i64;
        assert!(n > 0, "{path}: a non-empty list to check");
        let sep = if path.contains('?') { '&' } else { '?' };
        let one = app
            .get_json(&format!("{path}{sep}page_size=1&page=2"), &admin)
            .await;
        assert_eq!((total(&all), total(&one)), (n, n), "{path}");
    }
    // Exact counts: the filter and the caller's visibility apply.
    let q = "/v1/i9s?queue=section2-due&page_size=1";
    assert_eq!(total(&app.get_json(q, &admin).await), 3);
    assert_eq!(total(&app.get_json(q, &west).await), 2);
    assert_eq!(
        total(&app.get_json("/v1/i9s?i9Status=Completed", &west).await),
        0
    );
    assert_eq!(
        total(&app.get_json("/v1/i9s?lastName=nobody", &admin).await),
        0
    );
    // Past the end, the total stays.
    assert_eq!(total(&app.get_json("/v1/i9s?page=9", &admin).await), 4);
}

/// GET with an `Accept`; the status, the headers and the body text.
pub(crate) async fn get_as(
    app: &TestApp,
    path: &str,
    token: &str,
    accept: &str,
) -> (u16, reqwest::header::HeaderMap, String) {
    let r = app
        .http
        .get(app.url(path))
        .bearer_auth(token)
        .header("accept", accept)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.text().await.unwrap())
}

/// The CSV's lines, each split on commas outside quotes, quotes undone.
pub(crate) fn parse_csv(text: &str) -> Vec<Vec<String>> {
    assert!(text.ends_with("\r\n"), "CRLF after every row");
    let mut rows = vec![vec![String::new()]];
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let row = rows.last_mut().unwrap();
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                row.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(String::new()),
            ('\r', false) => {
                assert_eq!(chars.next(), Some('\n'));
                rows.push(vec![String::new()]);
            }
            (c, _) => row.last_mut().unwrap().push(c),
        }
    }
    rows.pop();
    rows
}

#[tokio::test]
async fn csv_exports_the_whole_queue_with_neutralised_formulas_and_masked_numbers() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let mut expected = Vec::new();
    for i in 0..60 {
        expected.push(i9_in(&app, &format!("N{i:02}"), "Seattle Office", "Signed Sec 1").await);
    }
    i9_in(&app, "Other", "Seattle Office", "Completed").await;
    let csv = "text/csv";

    // The whole queue in one answer (more than a JSON page), in its order.
    let (status, headers, text) = get_as(&app, "/v1/i9s?queue=section2-due", &admin, csv).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        headers["content-type"],
        "text/csv; charset=utf-8; header=present"
    );
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"i9s.csv\""
    );
    let rows = parse_csv(&text);
    assert_eq!(
        rows[0],
        [
            "id",
            "firstName",
            "lastName",
            "emailAddress",
            "i9Status",
            "dateDue",
            "startDate",
            "employeeId",
            "i9Expiration",
            "documentDueDate",
            "documentDueKind"
        ]
    );
    assert_eq!(rows.len(), 61, "a header and 60 rows");
    let got: Vec<i64> = rows[1..].iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(got, expected);
    assert_eq!(rows[1][4], "Signed Sec 1");
    assert_eq!(rows[1][3], "", "null is an empty cell");
    let link = headers["link"].to_str().unwrap();
    assert!(
        link.contains("</v1/i9s?queue=section2-due&page=1>; rel=\"self\"")
            && link.contains("rel=\"last\"")
            && !link.contains("rel=\"next\""),
        "{link}"
    );
    // Pages of a CSV, when asked for, are linked in the Link header.
    let (_, headers, text) = get_as(
        &app,
        "/v1/i9s?queue=section2-due&page_size=25&page=3",
        &admin,
        csv,
    )
    .await;
    assert_eq!(parse_csv(&text).len(), 11);
    let link = headers["link"].to_str().unwrap();
    assert!(
        link.contains("</v1/i9s?queue=section2-due&page=2&page_size=25>; rel=\"previous\""),
        "{link}"
    );

    // RFC 4180 quoting, and formulas neutralised.
    let tricky = [
        "=HYPERLINK(\"http://x\")",
        "+1",
        "-2+3",
        "@SUM(A1)",
        "O\"Neil, Jr",
        "Line\nBreak",
    ];
    for (i, first) in tricky.iter().enumerate() {
        let e = app
            .insert_employee(
                first,
                "Tricky",
                "Seattle Office",
                Some(&format!("123-45-67{i:02}")),
            )
            .await;
        app.insert_i9(e, "Signed Sec 1").await;
    }
    let (_, _, text) = get_as(&app, "/v1/i9s?lastName=tricky", &admin, csv).await;
    assert!(text.contains("\"'=HYPERLINK(\"\"http://x\"\")\""), "{text}");
    let (_, _, text) = get_as(
        &app,
        "/v1/employees?lastName=tricky",
        &app.token(WEST_HR).await,
        csv,
    )
    .await;
    let rows = parse_csv(&text);
    assert_eq!(
        rows[0],
        [
            "id",
            "i9Status",
            "i9Expiration",
            "firstName",
            "lastName",
            "socialSecurityNumber",
            "profileId"
        ]
    );
    let firsts: Vec<&str> = rows[1..].iter().map(|r| r[3].as_str()).collect();
    assert_eq!(
        firsts,
        [
            "'=HYPERLINK(\"http://x\")",
            "'+1",
            "'-2+3",
            "'@SUM(A1)",
            "O\"Neil, Jr",
            "Line\nBreak"
        ]
    );
    // Without permission 12 the number is masked, as in JSON.
    let masks: Vec<&str> = rows[1..].iter().map(|r| r[5].as_str()).collect();
    assert_eq!(
        masks,
        [
            "***-**-6700",
            "***-**-6701",
            "***-**-6702",
            "***-**-6703",
            "***-**-6704",
            "***-**-6705"
        ]
    );
    assert!(!text.contains("123-45-67"));
}

#[tokio::test]
async fn every_list_answers_csv_or_json_by_accept_and_406_otherwise() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    i9_in(&app, "A", "Seattle Office", "Signed Sec 1").await;
    for path in [
        "/v1/employees",
        "/v1/i9s",
        "/v1/eins",
        "/v1/groups",
        "/v1/users",
        "/v1/roles",
        "/v1/groups/1/users",
    ] {
        let json = app.get_json(path, &admin).await;
        let (status, headers, text) = get_as(&app, path, &admin, "text/csv").await;
        assert_eq!(status, 200, "{path}: {text}");
        assert!(headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv"));
        let rows = parse_csv(&text);
        // The header is the JSON member names; a row per record.
        let mut header = rows[0].clone();
        header.sort();
        let mut keys: Vec<String> = json["searchResult"][0]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        assert_eq!(header, keys, "{path}");
        assert_eq!(
            rows.len() as i64 - 1,
            json["total"].as_i64().unwrap(),
            "{path}"
        );
        assert_eq!(
            rows[1][0],
            json["searchResult"][0]["id"].to_string(),
            "{path}"
        );
    }

    // Negotiation: the highest q, JSON on a tie unless CSV is named more
    // specifically; JSON without Accept.
    for (accept, want) in [
        ("*/*", "application/json"),
        ("application/json, text/csv", "application/json"),
        ("text/csv, */*", "text/csv"),
        ("text/*", "text/csv"),
        ("application/json;q=0.5, text/csv", "text/csv"),
        ("text/csv;q=0.2, application/*;q=0.3", "application/json"),
        ("TEXT/CSV", "text/csv"),
    ] {
        let (status, headers, _) = get_as(&app, "/v1/i9s", &admin, accept).await;
        assert_eq!(status, 200, "{accept}");
        assert!(
            headers["content-type"].to_str().unwrap().starts_with(want),
            "{accept}: {:?}",
            headers["content-type"]
        );
    }
    for accept in [
        "application/xml",
        "text/csv;q=0, application/json;q=0",
        "text/html, image/*",
    ] {
        let (status, headers, text) = get_as(&app, "/v1/employees", &admin, accept).await;
        assert_eq!(status, 406, "{accept}");
        assert_eq!(headers["content-type"], "application/problem+json");
        assert!(text.contains("/problems/not-acceptable"), "{text}");
    }
    // The strict query string holds for CSV: a 400 problem, no CSV.
    let (status, headers, _) = get_as(&app, "/v1/i9s?nope=1", &admin, "text/csv").await;
    assert_eq!(status, 400);
    assert_eq!(headers["content-type"], "application/problem+json");
}

/// The I-9 of `employee`'s `n`th period (0: the first), in `status`, with
/// that period's start date.
async fn i9_of_period(app: &TestApp, employee: i64, n: i64, status: &str) -> i64 {
    let i9 = app.insert_i9(employee, status).await;
    sqlx::query(
        "UPDATE i9s SET employment_period_id = p.id, start_date = p.start_date,
                        date_due = p.start_date + 3
         FROM (SELECT id, start_date FROM employment_periods WHERE employee_id = $2
               ORDER BY id OFFSET $3 LIMIT 1) p
         WHERE i9s.id = $1",
    )
    .bind(i9)
    .bind(employee)
    .bind(n)
    .execute(app.pool())
    .await
    .unwrap();
    i9
}

/// The I-9's `startDate` and `dateDue`, as `GET /v1/i9s/{id}` shows them.
async fn i9_dates(app: &TestApp, token: &str, i9: i64) -> (String, String) {
    let r = app.get_json(&format!("/v1/i9s/{i9}"), token).await;
    let s = |k: &str| r[k].as_str().unwrap_or("null").to_owned();
    (s("startDate"), s("dateDue"))
}

/// HR trial: a PATCH of the employee's startDate left its open I-9 with the
/// old startDate and dateDue, so the work queues missed it. A change of the
/// current period's start moves the open I-9 (before `Completed`) with it,
/// `dateDue` by the rule of the I-9's creation, audited as `i9.start_date`
/// in the I-9's history; a completed or approved I-9, of this period or an
/// earlier one, keeps its dates (docs/api.md, "Periods of employment").
#[tokio::test]
async fn a_start_date_change_moves_the_open_i9_and_the_queues_follow() {
    use i9_common::domain::calendar::Calendar;
    use serde_json::json;
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    let seattle = app.group_id("Seattle Office").await;
    let total = |q: String| {
        let app = &app;
        let admin = admin.clone();
        async move {
            app.get_json(&format!("/v1/i9s?{q}"), &admin).await["total"]
                .as_i64()
                .unwrap()
        }
    };
    let patch = |id: i64, extra: Value| {
        let app = &app;
        let admin = admin.clone();
        async move {
            let mut b = json!({"firstName": "Maria", "lastName": "Queue", "locationId": seattle});
            b.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let r = app
                .patch_json(&format!("/v1/employees/{id}"), &admin, &b)
                .await;
            assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        }
    };
    let moved = |i9: i64| {
        app.count(
            "SELECT count(*) FROM audit_log WHERE action = 'i9.start_date' AND resource_type = 'i9'
               AND resource_id = $1::TEXT",
            i9,
        )
    };
    let due = |offset: i64| {
        Calendar::default()
            .section2_due(day(offset).parse().unwrap())
            .to_string()
    };

    // Section 1 not signed, starting in five days: not overdue yet.
    let maria = app
        .insert_employee("Maria", "Queue", "Seattle Office", None)
        .await;
    patch(maria, json!({"startDate": day(5)})).await;
    let open = i9_of_period(&app, maria, 0, "Section 1 Incomplete").await;
    let overdue = || total("queue=overdue".into());
    assert_eq!(overdue().await, 0);

    // A fixed date first, to see the rule: Thursday 2030-01-03 -> Tuesday 2030-01-08.
    patch(maria, json!({"startDate": "2030-01-03"})).await;
    assert_eq!(
        i9_dates(&app, &admin, open).await,
        ("2030-01-03".into(), "2030-01-08".into())
    );
    // The start moved three days back: Section 1 is overdue.
    patch(maria, json!({"startDate": day(-3)})).await;
    assert_eq!(i9_dates(&app, &admin, open).await, (day(-3), due(-3)));
    assert_eq!(
        ids(&app.get_json("/v1/i9s?queue=overdue", &admin).await),
        [open]
    );
    assert_eq!(moved(open).await, 2);
    // The I-9's history shows it: who, and the two fields.
    let history = app
        .get_json(&format!("/v1/i9s/{open}/history"), &admin)
        .await;
    let entries: Vec<&Value> = history["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "i9.start_date")
        .collect();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["fields"], json!(["startDate", "dateDue"]));
    assert_eq!(entries[0]["actor"]["login"], "admin");
    // A PATCH that keeps the start date changes nothing of the I-9.
    patch(maria, json!({"startDate": day(-3), "jobTitle": "Picker"})).await;
    assert_eq!(moved(open).await, 2);

    // Section 1 signed, Section 2 was due long ago (an I-9 without a period
    // is of the latest one): overdue, and due by today.
    let luis = app
        .insert_employee("Luis", "Queue", "Seattle Office", None)
        .await;
    let signed = app.insert_i9(luis, "Signed Sec 1").await;
    let due_by_today = || total(format!("queue=section2-due&dateDueTo={}", day(0)));
    assert_eq!((overdue().await, due_by_today().await), (2, 1));
    // Started later than recorded: Section 2 is due in the future.
    patch(luis, json!({"startDate": day(7)})).await;
    assert_eq!(i9_dates(&app, &admin, signed).await, (day(7), due(7)));
    assert_eq!((overdue().await, due_by_today().await), (1, 0));
    assert_eq!(total("queue=section2-due".into()).await, 1);

    // Once completed, the I-9 records what happened: its dates stay.
    sqlx::query("UPDATE i9s SET status = 'Completed' WHERE id = $1")
        .bind(open)
        .execute(app.pool())
        .await
        .unwrap();
    patch(maria, json!({"startDate": day(-2)})).await;
    assert_eq!(i9_dates(&app, &admin, open).await, (day(-3), due(-3)));
    assert_eq!(moved(open).await, 2);

    // A re-hire: the approved I-9 of the ended period keeps its dates when
    // the new period's start moves; the new period's open I-9 follows.
    let ana = app
        .insert_employee("Ana", "Queue", "Seattle Office", None)
        .await;
    patch(
        ana,
        json!({"startDate": day(-400), "terminatedDate": day(-100)}),
    )
    .await;
    let approved = i9_of_period(&app, ana, 0, "Approved").await;
    let before = i9_dates(&app, &admin, approved).await;
    patch(ana, json!({"rehire": "yes", "startDate": day(10)})).await;
    let rehired = i9_of_period(&app, ana, 1, "Section 1 Incomplete").await;
    patch(ana, json!({"startDate": day(-1)})).await;
    assert_eq!(i9_dates(&app, &admin, rehired).await, (day(-1), due(-1)));
    assert_eq!(i9_dates(&app, &admin, approved).await, before);
    assert_eq!(moved(approved).await, 0);
    assert_eq!(moved(rehired).await, 1);
    assert_eq!(
        ids(&app.get_json("/v1/i9s?queue=overdue", &admin).await),
        [rehired],
        "Maria's is completed, Luis's not due yet, Ana's new one overdue"
    );
}
