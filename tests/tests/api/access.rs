//! Bearer authentication on every /v1 route, scopes, permissions and group visibility.

use i9_tests::{
    eventually, ids, spawn_app, spawn_app_with, TestApp, ADMIN, ATS_BOT, BOSTON_VIEWER, PORTAL,
    WEST_HR,
};
use serde_json::Value;

/// Every GET route of the API, with ids that exist in the example organization.
async fn every_v1_route(app: &TestApp) -> Vec<String> {
    let emp = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(emp, "Section 1 Incomplete").await;
    let group = app.group_id("Acme").await;
    vec![
        "/v1/employees".into(),
        format!("/v1/employees/{emp}"),
        "/v1/i9s".into(),
        format!("/v1/i9s/{i9}"),
        "/v1/eins".into(),
        "/v1/eins/1".into(),
        "/v1/groups".into(),
        format!("/v1/groups/{group}"),
        format!("/v1/groups/{group}/users"),
        "/v1/users".into(),
        "/v1/users/1".into(),
        "/v1/roles".into(),
        "/v1/roles/1".into(),
        "/v1/openapi.json".into(),
    ]
}

#[tokio::test]
async fn every_v1_route_needs_a_bearer_token() {
    let app = spawn_app().await;
    let routes = every_v1_route(&app).await;
    let admin = app.token(ADMIN).await;
    for route in &routes {
        assert_eq!(
            app.get(route, &admin).await.status(),
            200,
            "{route} works with a token"
        );
        for auth in [
            None,
            Some("Bearer"),
            Some("Bearer not-a-token"),
            Some("Basic YWRtaW46YWRtaW4="),
            Some("bearer i9at_unknown"),
        ] {
            let mut req = app.http.get(app.url(route));
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), 401, "{route} with {auth:?}");
            let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
            assert!(
                challenge.starts_with("Bearer") && challenge.contains(r#"error="invalid_token""#),
                "{challenge}"
            );
            assert_eq!(r.headers()["content-type"], "application/problem+json");
            let body: Value = r.json().await.unwrap();
            assert_eq!(body["status"], 401);
        }
    }
    // Authentication comes before parameter checks: no token, bad query → still 401.
    let r = app
        .http
        .get(app.url("/v1/employees?socialSecurityNumbr=123-45-6789"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn a_token_without_the_read_scope_gets_403_insufficient_scope() {
    let app = spawn_app().await;
    let write_only = app.sign_in_with(PORTAL, ADMIN, Some("write")).await;
    let token = write_only["access_token"].as_str().unwrap();
    for route in every_v1_route(&app)
        .await
        .iter()
        .filter(|r| !r.ends_with("openapi.json"))
    {
        let r = app.get(route, token).await;
        assert_eq!(r.status(), 403, "{route}");
        assert!(r.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("insufficient_scope"));
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["type"], "/problems/insufficient-scope");
    }
}

#[tokio::test]
async fn a_role_without_the_permission_gets_403() {
    let app = spawn_app().await;
    // Viewer: permissions 1, 3, 6, 7 — no users (8) or roles (9).
    let viewer = app.token(BOSTON_VIEWER).await;
    for route in ["/v1/users", "/v1/users/1", "/v1/roles", "/v1/roles/1"] {
        let r = app.get(route, &viewer).await;
        assert_eq!(r.status(), 403, "{route}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["type"], "/problems/forbidden");
    }
    // Partner Integration: 1, 3, 10 — no legal entities (6) or groups (7).
    let bot = app.token(ATS_BOT).await;
    for route in ["/v1/eins", "/v1/groups"] {
        assert_eq!(app.get(route, &bot).await.status(), 403, "{route}");
    }
    assert_eq!(app.get("/v1/employees", &bot).await.status(), 200);
}

#[tokio::test]
async fn users_see_only_employees_of_their_groups_and_below() {
    let app = spawn_app().await;
    let maria = app.employee_id("EMP-1001").await; // Portland Warehouse (West)
    let james = app.employee_id("EMP-1002").await; // Seattle Office (West)
    let aisha = app.employee_id("EMP-1003").await; // Boston Office (East)
    let extra = app.insert_employee("Zed", "Zimmer", "Acme", None).await; // the root group

    let west = app.token(WEST_HR).await;
    let body = app.get_json("/v1/employees", &west).await;
    assert_eq!(ids(&body), vec![maria, james]);
    assert_eq!(
        app.get(&format!("/v1/employees/{maria}"), &west)
            .await
            .status(),
        200
    );
    for hidden in [aisha, extra] {
        let r = app.get(&format!("/v1/employees/{hidden}"), &west).await;
        assert_eq!(r.status(), 404, "hidden employee {hidden}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(
            body["detail"], "No such resource.",
            "the same answer as for a missing record"
        );
    }
    // A filter cannot reach past visibility either.
    let body = app.get_json("/v1/employees?lastName=Okafor", &west).await;
    assert!(ids(&body).is_empty());

    let boston = app.token(BOSTON_VIEWER).await;
    assert_eq!(
        ids(&app.get_json("/v1/employees", &boston).await),
        vec![aisha]
    );

    // Permission 11 sees everyone.
    let admin = app.token(ADMIN).await;
    assert_eq!(
        ids(&app.get_json("/v1/employees", &admin).await),
        vec![maria, james, aisha, extra]
    );
    // The partner's user through a client that is not a partner: its groups apply.
    let bot = app.token(ATS_BOT).await;
    assert_eq!(
        ids(&app.get_json("/v1/employees", &bot).await),
        vec![maria, james]
    );
}

/// A user's visible groups are cached beside its token (api/src/auth/cache.rs):
/// with an hour's cache, a change of the user's groups, or of the group tree,
/// still shows at once (every API process is told by NOTIFY), both ways.
#[tokio::test]
async fn a_change_of_groups_changes_what_a_cached_caller_sees() {
    let app = spawn_app_with(|c| c.auth_cache_ttl = std::time::Duration::from_secs(3600)).await;
    let aisha = app.employee_id("EMP-1003").await; // Boston Office (East)
    let extra = app.insert_employee("Zed", "Zimmer", "Acme", None).await; // the root group
    let west = app.token(WEST_HR).await;
    let status = |id: i64| {
        let (app, west) = (&app, &west);
        async move {
            app.get(&format!("/v1/employees/{id}"), west)
                .await
                .status()
                .as_u16()
        }
    };
    let listed = || async { ids(&app.get_json("/v1/employees", &west).await) };
    assert_eq!(status(aisha).await, 404);
    let before = listed().await;
    assert!(!before.contains(&aisha));

    // Added to Boston Office's group: Aisha shows, on the record and the list.
    let boston = app.group_id("Boston Office").await;
    let west_hr: i64 = sqlx::query_scalar("SELECT id FROM users WHERE login = $1")
        .bind(WEST_HR.0)
        .fetch_one(app.pool())
        .await
        .unwrap();
    sqlx::query("INSERT INTO user_groups (user_id, group_id) VALUES ($1, $2)")
        .bind(west_hr)
        .bind(boston)
        .execute(app.pool())
        .await
        .unwrap();
    eventually("the added group shows", || async {
        status(aisha).await == 200
    })
    .await;
    assert!(listed().await.contains(&aisha));

    // Taken out again: hidden again.
    sqlx::query("DELETE FROM user_groups WHERE user_id = $1 AND group_id = $2")
        .bind(west_hr)
        .bind(boston)
        .execute(app.pool())
        .await
        .unwrap();
    eventually("the removed group hides", || async {
        status(aisha).await == 404
    })
    .await;
    assert_eq!(listed().await, before);

    // The tree moves: a new group below West holds an employee the user
    // sees; moved under East, it is hidden.
    let west_group = app.group_id("West Region").await;
    let east_group = app.group_id("East Region").await;
    let moved: i64 = sqlx::query_scalar(
        "INSERT INTO groups (name, parent_id) VALUES ('Moved Site', $1) RETURNING id",
    )
    .bind(west_group)
    .fetch_one(app.pool())
    .await
    .unwrap();
    sqlx::query("UPDATE employees SET location_id = $1 WHERE id = $2")
        .bind(moved)
        .bind(extra)
        .execute(app.pool())
        .await
        .unwrap();
    eventually("a new group below the user's shows", || async {
        status(extra).await == 200
    })
    .await;
    sqlx::query("UPDATE groups SET parent_id = $1 WHERE id = $2")
        .bind(east_group)
        .bind(moved)
        .execute(app.pool())
        .await
        .unwrap();
    eventually("a group moved away hides", || async {
        status(extra).await == 404
    })
    .await;
}

#[tokio::test]
async fn i9s_follow_the_visibility_of_their_employee() {
    let app = spawn_app().await;
    let maria_i9 = app
        .insert_i9(app.employee_id("EMP-1001").await, "Signed Sec 1")
        .await;
    let aisha_i9 = app
        .insert_i9(app.employee_id("EMP-1003").await, "Section 1 Incomplete")
        .await;
    let west = app.token(WEST_HR).await;
    assert_eq!(ids(&app.get_json("/v1/i9s", &west).await), vec![maria_i9]);
    assert_eq!(
        app.get(&format!("/v1/i9s/{maria_i9}"), &west)
            .await
            .status(),
        200
    );
    assert_eq!(
        app.get(&format!("/v1/i9s/{aisha_i9}"), &west)
            .await
            .status(),
        404
    );
    let boston = app.token(BOSTON_VIEWER).await;
    assert_eq!(ids(&app.get_json("/v1/i9s", &boston).await), vec![aisha_i9]);
}

#[tokio::test]
async fn managed_tells_which_groups_the_caller_can_see() {
    let app = spawn_app().await;
    let managed = |body: &Value| -> Vec<(String, bool)> {
        body["searchResult"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["name"].as_str().unwrap().to_owned(),
                    g["managed"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let west = app.token(WEST_HR).await;
    let body = app.get_json("/v1/groups", &west).await;
    let expected = [
        ("Acme", false),
        ("West Region", true),
        ("Portland Warehouse", true),
        ("Seattle Office", true),
        ("East Region", false),
        ("Boston Office", false),
    ]
    .map(|(n, m)| (n.to_owned(), m));
    assert_eq!(managed(&body), expected);

    let only_managed = app.get_json("/v1/groups?managed=true", &west).await;
    assert_eq!(only_managed["searchResult"].as_array().unwrap().len(), 3);
    let unmanaged = app.get_json("/v1/groups?managed=FALSE", &west).await;
    assert_eq!(unmanaged["searchResult"].as_array().unwrap().len(), 3);

    let admin = app.token(ADMIN).await;
    assert!(managed(&app.get_json("/v1/groups", &admin).await)
        .iter()
        .all(|(_, m)| *m));
    let boston = app.token(BOSTON_VIEWER).await;
    let b = managed(&app.get_json("/v1/groups", &boston).await);
    assert_eq!(
        b.iter()
            .filter(|(_, m)| *m)
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        ["Boston Office"]
    );
}

#[tokio::test]
async fn permission_is_checked_before_the_id_is_looked_at() {
    let app = spawn_app().await;
    let viewer = app.token(BOSTON_VIEWER).await;
    for path in [
        "/v1/users/1",
        "/v1/users/abc",
        "/v1/users/999999",
        "/v1/roles/-5",
    ] {
        assert_eq!(app.get(path, &viewer).await.status(), 403, "{path}");
    }
}
