//! The token endpoint: grants, errors, refresh rotation and reuse detection
//! (with and without `username`), expiry, retired users. Throttling:
//! `throttle.rs`.

use i9_tests::{eventually, spawn_app, spawn_app_with, ADMIN, PORTAL, REPORTING, WEST_HR};
use serde_json::Value;

async fn error_of(r: reqwest::Response) -> (u16, String, Value) {
    let status = r.status().as_u16();
    assert_eq!(
        r.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json"),
        "OAuth errors are JSON"
    );
    let body: Value = r.json().await.unwrap();
    (
        status,
        body["error"].as_str().unwrap_or_default().to_owned(),
        body,
    )
}

#[tokio::test]
async fn password_grant_issues_bearer_tokens() {
    let app = spawn_app().await;
    let r = app
        .token_request(&[
            ("grant_type", "password"),
            ("client_id", PORTAL.0),
            ("client_secret", PORTAL.1),
            ("username", ADMIN.0),
            ("password", ADMIN.1),
        ])
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3600);
    assert_eq!(body["scope"], "read+write");
    let access = body["access_token"].as_str().unwrap();
    assert!(access.len() >= 40);
    assert!(body["refresh_token"].as_str().unwrap().len() >= 40);
    assert_eq!(app.get("/v1/employees", access).await.status(), 200);
}

#[tokio::test]
async fn the_trailing_slash_path_and_basic_client_auth_work() {
    let app = spawn_app().await;
    let r = app
        .http
        .post(app.url("/oauth2/access_token/"))
        .basic_auth(PORTAL.0, Some(PORTAL.1))
        .form(&[
            ("grant_type", "password"),
            ("username", ADMIN.0),
            ("password", ADMIN.1),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn scope_defaults_to_the_client_and_may_be_narrowed() {
    let app = spawn_app().await;
    let read_only = app.sign_in_with(REPORTING, ADMIN, None).await;
    assert_eq!(read_only["scope"], "read");
    let narrowed = app.sign_in_with(PORTAL, ADMIN, Some("read")).await;
    assert_eq!(narrowed["scope"], "read");
    let spaced = app.sign_in_with(PORTAL, ADMIN, Some("read write")).await;
    assert_eq!(spaced["scope"], "read+write");
}

#[tokio::test]
async fn each_token_error_has_its_rfc_6749_code() {
    let app = spawn_app().await;
    let good = [
        ("grant_type", "password"),
        ("client_id", PORTAL.0),
        ("client_secret", PORTAL.1),
        ("username", ADMIN.0),
        ("password", ADMIN.1),
    ];
    let without = |name: &str| {
        good.iter()
            .copied()
            .filter(|(k, _)| *k != name)
            .collect::<Vec<_>>()
    };
    let with = |name: &str, value: &'static str| {
        good.iter()
            .map(|&(k, v)| if k == name { (k, value) } else { (k, v) })
            .collect::<Vec<_>>()
    };

    type Case<'a> = (Vec<(&'a str, &'a str)>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (without("grant_type"), 400, "invalid_request"),
        (
            with("grant_type", "client_credentials"),
            400,
            "unsupported_grant_type",
        ),
        (without("client_id"), 400, "invalid_request"),
        (without("username"), 400, "invalid_request"),
        (without("password"), 400, "invalid_request"),
        (with("client_secret", "wrong-secret"), 401, "invalid_client"),
        (with("client_id", "no-such-client"), 401, "invalid_client"),
        (with("password", "wrong-password"), 400, "invalid_grant"),
        (with("username", "nobody"), 400, "invalid_grant"),
        (
            [good.to_vec(), vec![("scope", "admin")]].concat(),
            400,
            "invalid_scope",
        ),
    ];
    for (form, status, code) in cases {
        let (s, e, body) = error_of(app.token_request(&form).await).await;
        assert_eq!((s, e.as_str()), (status, code), "{form:?} gave {body}");
        assert!(body["error_description"].is_string());
    }

    // A client may not ask for more than it is registered for.
    let (s, e, _) = error_of(
        app.token_request(&[
            ("grant_type", "password"),
            ("client_id", REPORTING.0),
            ("client_secret", REPORTING.1),
            ("username", ADMIN.0),
            ("password", ADMIN.1),
            ("scope", "write"),
        ])
        .await,
    )
    .await;
    assert_eq!((s, e.as_str()), (400, "invalid_scope"));

    // A wrong client answers with a Basic challenge.
    let r = app
        .token_request(&with("client_secret", "wrong-secret"))
        .await;
    assert!(r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .starts_with("Basic"));

    // A JSON body is not a token request.
    let r = app
        .http
        .post(app.url("/oauth2/access_token"))
        .json(&serde_json::json!({"grant_type": "password"}))
        .send()
        .await
        .unwrap();
    let (s, e, _) = error_of(r).await;
    assert_eq!((s, e.as_str()), (400, "invalid_request"));

    // Repeated parameters are refused.
    let (s, e, _) = error_of(
        app.token_request(&[good.to_vec(), vec![("username", "west.hr")]].concat())
            .await,
    )
    .await;
    assert_eq!((s, e.as_str()), (400, "invalid_request"));
}

async fn refresh(
    app: &i9_tests::TestApp,
    refresh_token: &str,
    username: &str,
) -> reqwest::Response {
    app.token_request(&[
        ("grant_type", "refresh_token"),
        ("client_id", PORTAL.0),
        ("client_secret", PORTAL.1),
        ("refresh_token", refresh_token),
        ("username", username),
    ])
    .await
}

#[tokio::test]
async fn refresh_rotates_the_refresh_token() {
    let app = spawn_app().await;
    let first = app.sign_in_with(PORTAL, ADMIN, None).await;
    let r = refresh(&app, first["refresh_token"].as_str().unwrap(), "ADMIN").await;
    assert_eq!(r.status(), 200, "username matches case-insensitively");
    let second: Value = r.json().await.unwrap();
    assert_ne!(second["refresh_token"], first["refresh_token"]);
    assert_ne!(second["access_token"], first["access_token"]);
    assert_eq!(second["scope"], "read+write");
    assert_eq!(
        app.get("/v1/employees", second["access_token"].as_str().unwrap())
            .await
            .status(),
        200
    );

    // The new refresh token works in turn.
    let r = refresh(&app, second["refresh_token"].as_str().unwrap(), "admin").await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn refresh_needs_the_same_client_and_username() {
    let app = spawn_app().await;
    let first = app.sign_in_with(PORTAL, ADMIN, None).await;
    let token = first["refresh_token"].as_str().unwrap();
    let (s, e, _) = error_of(refresh(&app, token, "west.hr").await).await;
    assert_eq!((s, e.as_str()), (400, "invalid_grant"));
    let (s, e, _) = error_of(
        app.token_request(&[
            ("grant_type", "refresh_token"),
            ("client_id", REPORTING.0),
            ("client_secret", REPORTING.1),
            ("refresh_token", token),
            ("username", "admin"),
        ])
        .await,
    )
    .await;
    assert_eq!((s, e.as_str()), (400, "invalid_grant"));
    let (s, e, _) = error_of(refresh(&app, "i9rt_not-a-real-token", "admin").await).await;
    assert_eq!((s, e.as_str()), (400, "invalid_grant"));
    // The failed attempts did not use it up.
    assert_eq!(refresh(&app, token, "admin").await.status(), 200);
}

/// A refresh as requests-oauthlib's `OAuth2Session.refresh_token()` sends
/// it: `grant_type` and `refresh_token` only, no `username`, the client in
/// HTTP Basic (or, with `client_id`/`client_secret` passed as keyword
/// arguments, in the body), `Accept: application/json` and a charset on the
/// content type.
async fn library_refresh(app: &i9_tests::TestApp, refresh_token: &str, basic: bool) -> Value {
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
    ];
    let mut req = app
        .http
        .post(app.url("/oauth2/access_token"))
        .header("accept", "application/json")
        .header(
            "content-type",
            "application/x-www-form-urlencoded;charset=UTF-8",
        );
    if basic {
        req = req.basic_auth(PORTAL.0, Some(PORTAL.1));
    } else {
        form.extend([("client_id", PORTAL.0), ("client_secret", PORTAL.1)]);
    }
    let body = serde_urlencoded::to_string(&form).unwrap();
    let r = req.body(body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    r.json().await.unwrap()
}

#[tokio::test]
async fn refresh_works_without_username_as_oauth_libraries_send_it() {
    let app = spawn_app().await;
    let first = app.sign_in_with(PORTAL, ADMIN, None).await;
    let second = library_refresh(&app, first["refresh_token"].as_str().unwrap(), true).await;
    assert_eq!(second["token_type"], "Bearer");
    assert_eq!(second["scope"], "read+write");
    let third = library_refresh(&app, second["refresh_token"].as_str().unwrap(), false).await;
    let access = third["access_token"].as_str().unwrap();
    assert_eq!(app.get("/v1/roles", access).await.status(), 200);
    // Rotation and reuse detection hold without a username too: the used
    // token is refused and revokes the sign-in.
    let r = app
        .token_request(&[
            ("grant_type", "refresh_token"),
            ("client_id", PORTAL.0),
            ("client_secret", PORTAL.1),
            ("refresh_token", second["refresh_token"].as_str().unwrap()),
        ])
        .await;
    let (s, e, _) = error_of(r).await;
    assert_eq!((s, e.as_str()), (400, "invalid_grant"));
    eventually("the sign-in is revoked", || async {
        app.get("/v1/roles", access).await.status() == 401
    })
    .await;
    let grants: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM oauth_grants WHERE revoked_reason = 'refresh token reuse'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(grants, 1);
}

#[tokio::test]
async fn reusing_a_refresh_token_revokes_the_whole_sign_in() {
    let app = spawn_app().await;
    let first = app.sign_in_with(PORTAL, ADMIN, None).await;
    let old_refresh = first["refresh_token"].as_str().unwrap().to_owned();
    let second: Value = refresh(&app, &old_refresh, "admin")
        .await
        .json()
        .await
        .unwrap();
    let new_access = second["access_token"].as_str().unwrap();
    assert_eq!(app.get("/v1/roles", new_access).await.status(), 200);

    // Someone replays the used refresh token: refused, and everything descended from it dies.
    let (s, e, _) = error_of(refresh(&app, &old_refresh, "admin").await).await;
    assert_eq!((s, e.as_str()), (400, "invalid_grant"));
    assert_eq!(app.get("/v1/roles", new_access).await.status(), 401);
    assert_eq!(
        app.get("/v1/roles", first["access_token"].as_str().unwrap())
            .await
            .status(),
        401
    );
    let (s, e, _) =
        error_of(refresh(&app, second["refresh_token"].as_str().unwrap(), "admin").await).await;
    assert_eq!((s, e.as_str()), (400, "invalid_grant"));

    // Another sign-in of the same user is unaffected.
    let other = app.token(ADMIN).await;
    assert_eq!(app.get("/v1/roles", &other).await.status(), 200);
}

#[tokio::test]
async fn an_expired_access_token_is_refused() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    assert_eq!(app.get("/v1/eins", &token).await.status(), 200);
    sqlx::query("UPDATE access_tokens SET expires_at = now() - interval '1 second'")
        .execute(app.pool())
        .await
        .unwrap();
    // API processes cache validated tokens; the change reaches them by NOTIFY.
    eventually("the expired token is refused", || async {
        app.get("/v1/eins", &token).await.status() == 401
    })
    .await;
    let r = app.get("/v1/eins", &token).await;
    assert_eq!(r.status(), 401);
    assert!(r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .contains("invalid_token"));
}

#[tokio::test]
async fn an_expired_refresh_token_is_refused() {
    let app = spawn_app().await;
    let first = app.sign_in_with(PORTAL, ADMIN, None).await;
    sqlx::query("UPDATE refresh_tokens SET expires_at = now() - interval '1 second'")
        .execute(app.pool())
        .await
        .unwrap();
    let (s, e, _) =
        error_of(refresh(&app, first["refresh_token"].as_str().unwrap(), "admin").await).await;
    assert_eq!((s, e.as_str()), (400, "invalid_grant"));
}

#[tokio::test]
async fn the_configured_access_token_lifetime_is_reported() {
    let app = spawn_app_with(|c| c.access_token_ttl = std::time::Duration::from_secs(120)).await;
    let body = app.sign_in_with(PORTAL, ADMIN, None).await;
    assert_eq!(body["expires_in"], 120);
}

#[tokio::test]
async fn retired_users_cannot_sign_in_and_their_tokens_stop_working() {
    let app = spawn_app().await;
    let token = app.token(WEST_HR).await;
    assert_eq!(app.get("/v1/employees", &token).await.status(), 200);
    sqlx::query("UPDATE users SET retired = TRUE WHERE login = 'west.hr'")
        .execute(app.pool())
        .await
        .unwrap();
    eventually("the retired user's token stops working", || async {
        app.get("/v1/employees", &token).await.status() == 401
    })
    .await;
    let (s, e, _) = error_of(
        app.token_request(&[
            ("grant_type", "password"),
            ("client_id", PORTAL.0),
            ("client_secret", PORTAL.1),
            ("username", WEST_HR.0),
            ("password", WEST_HR.1),
        ])
        .await,
    )
    .await;
    assert_eq!((s, e.as_str()), (400, "invalid_grant"));
}

#[tokio::test]
async fn a_role_losing_a_permission_takes_effect_on_existing_tokens() {
    let app = spawn_app().await;
    let token = app.token(WEST_HR).await;
    assert_eq!(app.get("/v1/users", &token).await.status(), 200);
    sqlx::query(
        "DELETE FROM role_permissions WHERE permission_id = 8
           AND role_id = (SELECT id FROM roles WHERE name = 'HR Manager')",
    )
    .execute(app.pool())
    .await
    .unwrap();
    eventually("the cached permission is dropped", || async {
        app.get("/v1/users", &token).await.status() == 403
    })
    .await;
}

#[tokio::test]
async fn without_the_token_cache_revocations_apply_to_the_next_request() {
    let app = spawn_app_with(|c| c.auth_cache_ttl = std::time::Duration::ZERO).await;
    let token = app.token(WEST_HR).await;
    assert_eq!(app.get("/v1/employees", &token).await.status(), 200);
    sqlx::query("UPDATE users SET retired = TRUE WHERE login = 'west.hr'")
        .execute(app.pool())
        .await
        .unwrap();
    assert_eq!(app.get("/v1/employees", &token).await.status(), 401);
}
