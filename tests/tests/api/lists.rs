//! List conventions: paging links, the page_size cap, strict parameters,
//! case-insensitive exact-match filters, ordering.

use std::collections::HashSet;

use i9_tests::{ids, link, spawn_app, ADMIN};
use serde_json::Value;

#[tokio::test]
async fn paging_links_walk_every_page_and_keep_the_filters() {
    let app = spawn_app().await;
    let mut expected = Vec::new();
    for i in 0..23 {
        expected.push(
            app.insert_employee(&format!("P{i:02}"), "Pager", "Portland Warehouse", None)
                .await,
        );
    }
    app.insert_employee("Other", "Person", "Portland Warehouse", None)
        .await;
    let token = app.token(ADMIN).await;

    let first = app
        .get_json("/v1/employees?lastName=pager&page_size=10", &token)
        .await;
    assert_eq!(first["searchResult"].as_array().unwrap().len(), 10);
    assert_eq!(
        link(&first, "self").unwrap(),
        "/v1/employees?lastName=pager&page=1&page_size=10"
    );
    assert_eq!(
        link(&first, "first").unwrap(),
        "/v1/employees?lastName=pager&page=1&page_size=10"
    );
    assert_eq!(
        link(&first, "last").unwrap(),
        "/v1/employees?lastName=pager&page=3&page_size=10"
    );
    assert_eq!(
        link(&first, "next").unwrap(),
        "/v1/employees?lastName=pager&page=2&page_size=10"
    );
    assert_eq!(link(&first, "previous"), None, "no previous on page 1");

    let mut seen = ids(&first);
    let mut page = first;
    let mut pages = 1;
    while let Some(next) = link(&page, "next") {
        page = app.get_json(&next, &token).await;
        pages += 1;
        assert!(link(&page, "previous").is_some());
        seen.extend(ids(&page));
        assert!(pages <= 3, "too many pages");
    }
    assert_eq!(pages, 3);
    assert_eq!(ids(&page).len(), 3, "23 = 10 + 10 + 3");
    assert_eq!(
        link(&page, "previous").unwrap(),
        "/v1/employees?lastName=pager&page=2&page_size=10"
    );
    assert_eq!(seen, expected, "every match once, in id order");

    // A page past the end is empty, not an error.
    let past = app
        .get_json("/v1/employees?lastName=pager&page=9&page_size=10", &token)
        .await;
    assert!(ids(&past).is_empty());
    assert_eq!(
        link(&past, "last").unwrap(),
        "/v1/employees?lastName=pager&page=3&page_size=10"
    );
    assert_eq!(link(&past, "next"), None);
}

#[tokio::test]
async fn page_size_defaults_to_50_and_is_capped_at_50() {
    let app = spawn_app().await;
    for i in 0..52 {
        app.insert_employee(&format!("C{i:02}"), "Capped", "Seattle Office", None)
            .await;
    }
    let token = app.token(ADMIN).await;
    let body = app.get_json("/v1/employees", &token).await;
    assert_eq!(body["searchResult"].as_array().unwrap().len(), 50);
    assert_eq!(link(&body, "next").unwrap(), "/v1/employees?page=2");
    let body = app.get_json("/v1/employees?page_size=1000", &token).await;
    assert_eq!(body["searchResult"].as_array().unwrap().len(), 50);
    assert_eq!(
        link(&body, "next").unwrap(),
        "/v1/employees?page=2&page_size=50"
    );
    let body = app
        .get_json("/v1/employees?page=2&page_size=1000", &token)
        .await;
    assert_eq!(
        body["searchResult"].as_array().unwrap().len(),
        5,
        "3 seeded + 52 = 55"
    );
}

async fn bad_query(app: &i9_tests::TestApp, token: &str, path: &str) -> Vec<String> {
    let r = app.get(path, token).await;
    assert_eq!(r.status(), 400, "{path}");
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let body: Value = r.json().await.unwrap();
    body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn unknown_parameters_and_bad_paging_are_400() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    for collection in [
        "/v1/employees",
        "/v1/i9s",
        "/v1/eins",
        "/v1/groups",
        "/v1/users",
        "/v1/roles",
        "/v1/groups/1/users",
    ] {
        assert_eq!(
            bad_query(&app, &token, &format!("{collection}?nope=1")).await,
            ["nope"]
        );
        for page in [
            "page=0",
            "page=-1",
            "page=abc",
            "page=1.5",
            "page_size=0",
            "page_size=x",
            "page=",
        ] {
            let field = page.split('=').next().unwrap();
            assert_eq!(
                bad_query(&app, &token, &format!("{collection}?{page}")).await,
                [field],
                "{collection}?{page}"
            );
        }
    }
    // A misspelt SSN filter must never list everyone.
    let r = app
        .get("/v1/employees?socialSecurityNo=123-45-6789", &token)
        .await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    let message = body["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("socialSecurityNumber"),
        "names the accepted parameters: {message}"
    );
    assert!(!body.to_string().contains("123-45-6789"));
    // Every bad parameter is named at once.
    let fields = bad_query(
        &app,
        &token,
        "/v1/employees?page=0&languagePreference=3&dateOfBirth=2026-02-30&x=1",
    )
    .await;
    assert_eq!(fields, ["page", "languagePreference", "dateOfBirth", "x"]);
    // Filter names are exact: a different case is unknown.
    assert_eq!(
        bad_query(&app, &token, "/v1/employees?lastname=Lopez").await,
        ["lastname"]
    );
    // Repeated parameters are refused.
    assert_eq!(
        bad_query(&app, &token, "/v1/employees?lastName=a&lastName=b").await,
        ["lastName"]
    );
}

#[tokio::test]
async fn filters_are_exact_and_case_insensitive_on_every_collection() {
    let app = spawn_app().await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Section 1 Incomplete").await;
    let token = app.token(ADMIN).await;
    let names = |body: &Value, field: &str| -> Vec<String> {
        body["searchResult"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[field].as_str().unwrap().to_owned())
            .collect()
    };

    let cases: &[(&str, &str, &[&str])] = &[
        ("/v1/employees?lastName=LOPEZ", "lastName", &["Lopez"]),
        (
            "/v1/employees?firstName=maria&lastName=lOpEz",
            "lastName",
            &["Lopez"],
        ),
        (
            "/v1/employees?profileId=emp-1002",
            "profileId",
            &["EMP-1002"],
        ),
        (
            "/v1/employees?emailAddress=AISHA.OKAFOR@MAIL.EXAMPLE",
            "firstName",
            &["Aisha"],
        ),
        (
            "/v1/employees?jobTitle=forklift operator",
            "firstName",
            &["Maria"],
        ),
        ("/v1/employees?middleName=ELENA", "firstName", &["Maria"]),
        ("/v1/employees?lastName=Lope", "lastName", &[]),
        ("/v1/i9s?lastName=lopez", "lastName", &["Lopez"]),
        ("/v1/i9s?firstName=MARIA", "firstName", &["Maria"]),
        ("/v1/i9s?lastName=lope", "lastName", &[]),
        (
            "/v1/eins?entityName=acme labs inc",
            "entityName",
            &["Acme Labs Inc"],
        ),
        (
            "/v1/eins?ein=12-3456789",
            "entityName",
            &["Acme Staffing US LLC"],
        ),
        (
            "/v1/eins?everifyId=1234567",
            "entityName",
            &["Acme Staffing US LLC"],
        ),
        ("/v1/eins?entityName=acme", "entityName", &[]),
        ("/v1/groups?name=boston OFFICE", "name", &["Boston Office"]),
        ("/v1/groups?name=boston", "name", &[]),
        ("/v1/users?firstName=ADA", "fullName", &["Admin, Ada"]),
        ("/v1/users?login=WEST.HR", "fullName", &["Turner, Wes"]),
        (
            "/v1/users?emailAddress=Bea.Stone@ACME.example",
            "fullName",
            &["Stone, Bea"],
        ),
        ("/v1/users?title=auditor", "fullName", &["Stone, Bea"]),
        ("/v1/users?lastName=turn", "fullName", &[]),
        ("/v1/roles?name=administrator", "name", &["Administrator"]),
        ("/v1/roles?name=HR MANAGER", "name", &["HR Manager"]),
        ("/v1/roles?name=HR", "name", &[]),
    ];
    for (path, field, expected) in cases {
        let body = app.get_json(path, &token).await;
        assert_eq!(names(&body, field), *expected, "{path}");
    }

    // Typed filters.
    let by = |q: &str| format!("/v1/employees?{q}");
    assert_eq!(
        ids(&app.get_json(&by("dateOfBirth=1990-03-14"), &token).await),
        vec![maria]
    );
    assert_eq!(
        ids(&app.get_json(&by("dateOfBirth=03/14/1990"), &token).await),
        vec![maria]
    );
    assert_eq!(
        ids(&app.get_json(&by("languagePreference=2"), &token).await),
        vec![maria]
    );
    let portland = app.group_id("Portland Warehouse").await;
    assert_eq!(
        ids(&app
            .get_json(&by(&format!("locationId={portland}")), &token)
            .await),
        vec![maria]
    );
    assert_eq!(
        ids(&app.get_json(&by("legalEntity=2"), &token).await),
        vec![app.employee_id("EMP-1003").await]
    );
    assert_eq!(
        ids(&app
            .get_json(&by("socialSecurityNumber=123-45-6789"), &token)
            .await),
        vec![maria]
    );
    assert_eq!(
        ids(&app.get_json("/v1/i9s?startDate=10/05/2026", &token).await),
        vec![i9]
    );
    assert!(ids(&app.get_json("/v1/i9s?startDate=2026-10-06", &token).await).is_empty());
}

#[tokio::test]
async fn a_unique_value_finds_exactly_one_employee() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let body = app
        .get_json("/v1/employees?profileId=EMP-1001", &token)
        .await;
    assert_eq!(body["searchResult"].as_array().unwrap().len(), 1);
    assert_eq!(body["searchResult"][0]["i9Status"], "Not Started");
}

#[tokio::test]
async fn users_are_ordered_by_full_name_and_other_lists_by_id() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let body = app.get_json("/v1/users", &token).await;
    let full: Vec<String> = body["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["fullName"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        full,
        [
            "Admin, Ada",
            "Integration, Ats",
            "Stone, Bea",
            "Turner, Wes"
        ]
    );

    for collection in ["/v1/employees", "/v1/eins", "/v1/groups", "/v1/roles"] {
        let got = ids(&app.get_json(collection, &token).await);
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(got, sorted, "{collection} by id");
        assert_eq!(got.iter().collect::<HashSet<_>>().len(), got.len());
    }
}

#[tokio::test]
async fn group_users_lists_the_members_of_one_group() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let boston = app.group_id("Boston Office").await;
    let body = app
        .get_json(&format!("/v1/groups/{boston}/users"), &token)
        .await;
    let users = body["searchResult"].as_array().unwrap();
    assert_eq!(users.len(), 1);
    assert_eq!(users[0]["fullName"], "Stone, Bea");
    assert_eq!(
        users[0]["groups"],
        serde_json::json!([{"id": boston, "name": "Boston Office"}])
    );
    assert_eq!(
        link(&body, "self").unwrap(),
        format!("/v1/groups/{boston}/users?page=1")
    );
    assert_eq!(
        app.get("/v1/groups/999999/users", &token).await.status(),
        404
    );
}
