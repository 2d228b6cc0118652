//! Social security numbers: masked without permission 12, whole with it;
//! every whole read and every search by number written to the audit log, and
//! nothing else that disclosed no number.

use i9_tests::{spawn_app, ADMIN, WEST_HR};
use serde_json::{json, Value};

async fn ssn_reads(app: &i9_tests::TestApp) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as("SELECT resource_type, resource_id, request_id FROM audit_log WHERE action = 'ssn.read' ORDER BY id")
        .fetch_all(app.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn users_without_permission_12_see_masked_numbers_and_leave_no_audit() {
    let app = spawn_app().await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let west = app.token(WEST_HR).await;
    let list = app.get_json("/v1/employees", &west).await;
    assert_eq!(
        list["searchResult"][0]["socialSecurityNumber"],
        "***-**-6789"
    );
    let one = app.get_json(&format!("/v1/employees/{maria}"), &west).await;
    assert_eq!(one["socialSecurityNumber"], "***-**-6789");
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &west).await;
    assert_eq!(record["ssn"], "***-**-6789");
    assert!(!list.to_string().contains("123-45"));
    assert!(ssn_reads(&app).await.is_empty());
}

/// The `ssn.search` audit rows: user, request id and the `matched` count.
async fn ssn_searches(app: &i9_tests::TestApp) -> Vec<(i64, Option<String>, Value)> {
    sqlx::query_as(
        "SELECT user_id, request_id, detail FROM audit_log WHERE action = 'ssn.search' ORDER BY id",
    )
    .fetch_all(app.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn searching_by_ssn_needs_permission_12_and_each_search_is_audited() {
    let app = spawn_app().await;
    let maria = app.employee_id("EMP-1001").await;
    // Without permission 12 the filter would reveal masked numbers by trial.
    let west = app.token(WEST_HR).await;
    let r = app
        .get("/v1/employees?socialSecurityNumber=123-45-6789", &west)
        .await;
    assert_eq!(r.status(), 403);
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["type"], "/problems/forbidden");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("socialSecurityNumber") && detail.contains("permission 12"),
        "{detail}"
    );
    assert!(!p.to_string().contains("123-45"));
    assert!(
        ssn_searches(&app).await.is_empty(),
        "a refused search is not a search"
    );
    assert_eq!(
        app.get("/v1/employees?lastName=Lopez", &west)
            .await
            .status(),
        200,
        "other filters need no permission 12"
    );

    let admin = app.token(ADMIN).await;
    let r = app
        .http
        .get(app.url("/v1/employees?socialSecurityNumber=123-45-6789"))
        .bearer_auth(&admin)
        .header("x-request-id", "ssn-search-1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let found: Value = r.json().await.unwrap();
    assert_eq!(i9_tests::ids(&found), vec![maria]);
    let none = app
        .get_json("/v1/employees?socialSecurityNumber=567-89-0123", &admin)
        .await;
    assert!(i9_tests::ids(&none).is_empty());

    let searches = ssn_searches(&app).await;
    assert_eq!(searches.len(), 2, "one row per search");
    assert_eq!(
        searches[0],
        (1, Some("ssn-search-1".to_owned()), json!({"matched": 1}))
    );
    assert_eq!(searches[1].2, json!({"matched": 0}));
    // The employee shown is a read of a full number as well; the number searched is never kept.
    assert_eq!(ssn_reads(&app).await.len(), 1);
    let audit: Vec<String> = sqlx::query_scalar("SELECT row_to_json(a)::TEXT FROM audit_log a")
        .fetch_all(app.pool())
        .await
        .unwrap();
    for row in audit {
        for number in ["123-45-6789", "123456789", "567-89-0123", "567890123"] {
            assert!(!row.contains(number), "{row}");
        }
    }
}

/// The audit actions of one request, by its `x-request-id`.
async fn audited(app: &i9_tests::TestApp, request_id: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT action FROM audit_log WHERE request_id = $1 ORDER BY id")
        .bind(request_id)
        .fetch_all(app.pool())
        .await
        .unwrap()
}

/// Send `method path` with `token` and the request id `rid`; its status.
async fn send(app: &i9_tests::TestApp, method: &str, path: &str, token: &str, rid: &str) -> u16 {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = app
        .http
        .request(method.clone(), app.url(path))
        .bearer_auth(token)
        .header("x-request-id", rid);
    if method == reqwest::Method::POST {
        req = req.json(&json!({}));
    }
    req.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn only_what_was_disclosed_is_audited() {
    let app = spawn_app().await;
    let maria = app.employee_id("EMP-1001").await;
    let aisha = app.employee_id("EMP-1003").await;
    let maria_i9 = app.insert_i9(maria, "Signed Sec 2").await;
    let aisha_i9 = app.insert_i9(aisha, "Signed Sec 2").await;
    // West HR sees full numbers, in West Region only.
    sqlx::query(
        "INSERT INTO role_permissions (role_id, permission_id)
         SELECT id, 12 FROM roles WHERE name = 'HR Manager'",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let west = app.token(WEST_HR).await;
    let admin = app.token(ADMIN).await;

    let cases: Vec<(&str, String, &str, u16, Vec<&str>)> = vec![
        // Records the caller cannot see: 404, nothing decrypted, nothing audited.
        ("GET", format!("/v1/employees/{aisha}"), &west, 404, vec![]),
        ("GET", format!("/v1/i9s/{aisha_i9}"), &west, 404, vec![]),
        (
            "POST",
            format!("/v1/i9s/{aisha_i9}/complete"),
            &west,
            404,
            vec![],
        ),
        // A read that shows a full number: one entry.
        (
            "GET",
            format!("/v1/employees/{maria}"),
            &west,
            200,
            vec!["ssn.read"],
        ),
        // A step: its own entry, and one read for the number its answer shows.
        (
            "POST",
            format!("/v1/i9s/{maria_i9}/complete"),
            &west,
            200,
            vec!["i9.complete", "ssn.read"],
        ),
        // A step the status does not allow discloses nothing.
        (
            "POST",
            format!("/v1/i9s/{maria_i9}/complete"),
            &admin,
            409,
            vec![],
        ),
        (
            "POST",
            format!("/v1/i9s/{aisha_i9}/park"),
            &admin,
            200,
            vec!["i9.park", "ssn.read"],
        ),
    ];
    for (n, (method, path, token, status, actions)) in cases.iter().enumerate() {
        let rid = format!("disclosed-{n}");
        assert_eq!(
            send(&app, method, path, token, &rid).await,
            *status,
            "{method} {path}"
        );
        assert_eq!(audited(&app, &rid).await, *actions, "{method} {path}");
    }
    // Without permission 12 a step's answer shows a masked number: no read.
    let boston_i9 = app.insert_i9(aisha, "Signed Sec 1").await;
    sqlx::query("DELETE FROM role_permissions WHERE permission_id = 12 AND role_id = (SELECT id FROM roles WHERE name = 'Administrator')")
        .execute(app.pool())
        .await
        .unwrap();
    let admin = app.token(ADMIN).await; // a new sign-in: the old token's rights may be cached
    assert_eq!(
        send(
            &app,
            "POST",
            &format!("/v1/i9s/{boston_i9}/park"),
            &admin,
            "masked"
        )
        .await,
        200
    );
    assert_eq!(audited(&app, "masked").await, ["i9.park"]);
}

#[tokio::test]
async fn permission_12_reveals_numbers_and_each_read_is_audited() {
    let app = spawn_app().await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let no_ssn = app.insert_employee("No", "Number", "Acme", None).await;
    let admin = app.token(ADMIN).await;

    let r = app.get(&format!("/v1/employees/{maria}"), &admin).await;
    let request_id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let one: Value = r.json().await.unwrap();
    assert_eq!(one["socialSecurityNumber"], "123-45-6789");
    assert_eq!(
        ssn_reads(&app).await,
        vec![("employee".to_owned(), maria.to_string(), Some(request_id))]
    );

    let list = app.get_json("/v1/employees", &admin).await;
    let numbers: Vec<&Value> = list["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["socialSecurityNumber"])
        .collect();
    assert_eq!(
        numbers,
        [
            &Value::from("123-45-6789"),
            &Value::from("234-56-7890"),
            &Value::from("345-67-8901"),
            &Value::Null
        ]
    );
    let reads = ssn_reads(&app).await;
    assert_eq!(
        reads.len(),
        1 + 3,
        "one entry per number shown, none for the employee without one"
    );
    assert!(!reads.iter().any(|(_, id, _)| *id == no_ssn.to_string()));

    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["ssn"], "123-45-6789");
    let last = ssn_reads(&app).await.pop().unwrap();
    assert_eq!((last.0.as_str(), last.1), ("i9", i9.to_string()));

    let who: (i64, String) =
        sqlx::query_as("SELECT user_id, action FROM audit_log WHERE action = 'ssn.read' LIMIT 1")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(who, (1, "ssn.read".to_owned()));
}

/// What one write answered, as the caller sees it.
async fn answer(r: reqwest::Response) -> (u16, String) {
    let status = r.status().as_u16();
    let body: Value = r.json().await.unwrap();
    let said = match body["errors"].as_array() {
        Some(errors) => serde_json::to_string(errors).unwrap(),
        None => body["detail"].as_str().unwrap_or_default().to_owned(),
    };
    (status, said)
}

/// A user who sees `***-**-6789` cannot find the whole number by trying
/// writes: a write refused for another reason answers the same whether the
/// number is taken or not; a caller's writes of numbers ending in the same
/// four digits wait after a few (429 with Retry-After), other digits and
/// callers with permission 12 do not; a refusal for a taken number is
/// audited; the throttle keeps no digits (docs/api.md, "Social security
/// numbers").
#[tokio::test]
async fn a_masked_ssn_cannot_be_found_by_trying_writes() {
    let app = i9_tests::spawn_app_with(|c| {
        c.ssn_writes = i9_common::config::ThrottleLimit {
            free_failures: 6,
            forget: std::time::Duration::from_secs(3600),
        }
    })
    .await;
    let maria = app.employee_id("EMP-1001").await;
    let (taken, free) = ("123-45-6789", "456-12-6789");
    let west = app.token(WEST_HR).await;
    // Two employees of west.hr's: one with an I-9 being created, one with a sign-in.
    let mut ids = Vec::new();
    for (first, extra) in [
        ("Tom", json!({"createI9": "yes"})),
        (
            "Una",
            json!({"emailAddress": "una@mail.example", "createLogin": true}),
        ),
    ] {
        let mut body = json!({"firstName": first, "lastName": "Probe", "locationId": 3});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let r = app.post_json("/v1/employees", &west, &body).await;
        assert_eq!(r.status(), 201);
        ids.push(r.json::<Value>().await.unwrap()["id"].as_i64().unwrap());
    }
    let (tom, _una) = (ids[0], ids[1]);

    // Each probe refused for another reason: the same answer for both numbers.
    let probes = |ssn: &str| {
        vec![
            // Tom has an I-9 being created.
            (
                format!("/v1/employees/{tom}"),
                json!({"firstName": "Tom", "lastName": "Probe", "locationId": 3,
                       "socialSecurityNumber": ssn, "createI9": "yes"}),
                true,
            ),
            // Una's address is already a login.
            (
                format!("/v1/employees/{tom}"),
                json!({"firstName": "Tom", "lastName": "Probe", "locationId": 3,
                       "socialSecurityNumber": ssn, "emailAddress": "una@mail.example",
                       "createLogin": true}),
                true,
            ),
            // No group 999.
            (
                "/v1/employees".to_owned(),
                json!({"firstName": "Vic", "lastName": "Probe", "locationId": 999,
                       "socialSecurityNumber": ssn}),
                false,
            ),
        ]
    };
    for ((path, with_taken, patch), (_, with_free, _)) in
        probes(taken).into_iter().zip(probes(free))
    {
        let send = |body: Value| {
            let (app, west, path) = (&app, &west, path.clone());
            async move {
                if patch {
                    app.patch_json(&path, west, &body).await
                } else {
                    app.post_json(&path, west, &body).await
                }
            }
        };
        let a = answer(send(with_taken).await).await;
        let b = answer(send(with_free).await).await;
        assert_eq!(
            a, b,
            "{path}: a taken number answered otherwise than a free one"
        );
        assert!(a.0 == 409 || a.0 == 422, "{a:?}");
    }
    // Six writes ending in 6789 so far, all refused, none audited as a conflict.
    let conflicts = || async {
        sqlx::query_scalar::<_, String>(
            "SELECT resource_id FROM audit_log WHERE action = 'ssn.conflict' ORDER BY id",
        )
        .fetch_all(app.pool())
        .await
        .unwrap()
    };
    assert!(conflicts().await.is_empty());

    // The seventh goes through to the number check: a 409, audited.
    let body = json!({"firstName": "Una", "lastName": "Probe", "locationId": 3,
                      "socialSecurityNumber": taken});
    let (status, said) = answer(
        app.patch_json(&format!("/v1/employees/{}", ids[1]), &west, &body)
            .await,
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(
        said,
        "socialSecurityNumber already belongs to another employee."
    );
    assert_eq!(conflicts().await, vec![maria.to_string()]);

    // The eighth waits, whatever else it holds, and says for how long.
    let r = app
        .post_json(
            "/v1/employees",
            &west,
            &json!({"firstName": "Wes", "lastName": "Probe", "locationId": 3,
                    "socialSecurityNumber": "555-12-6789"}),
        )
        .await;
    assert_eq!(r.status(), 429);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(wait >= 1, "{wait}");
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["type"], "/problems/too-many-requests");
    // Nothing of it was written.
    let wes: i64 = sqlx::query_scalar("SELECT count(*) FROM employees WHERE first_name = 'Wes'")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(wes, 0);

    // Other last digits, and a caller who may read numbers whole, go on.
    let r = app
        .post_json(
            "/v1/employees",
            &west,
            &json!({"firstName": "Xia", "lastName": "Probe", "locationId": 3,
                    "socialSecurityNumber": "555-12-4321"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let admin = app.token(ADMIN).await;
    let r = app
        .post_json(
            "/v1/employees",
            &admin,
            &json!({"firstName": "Yan", "lastName": "Probe", "locationId": 3,
                    "socialSecurityNumber": "555-12-6789"}),
        )
        .await;
    assert_eq!(r.status(), 201);

    // Counted per user and last four digits, by key only: two keys, no digits.
    let rows: Vec<(Vec<u8>, i64)> = sqlx::query_as(
        "SELECT key, failures FROM throttle WHERE kind = 'ssn_write' ORDER BY failures",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(
        rows.iter().map(|r| r.1).collect::<Vec<_>>(),
        vec![1, 7],
        "4321 once; 6789 seven times (the refused eighth is not counted)"
    );
    for (key, _) in rows {
        assert!(!key.windows(4).any(|w| w == b"6789" || w == b"4321"));
    }
}
