//! A partner's `employeeReturnUrl` must be https unless the deployment allows
//! private callbacks (finding 12 of issue 8): an http one is a 422 naming the
//! field, with every other bad field, and nothing is written.

use i9_tests::{spawn_app, spawn_app_with, TestApp, ATS_BOT};
use serde_json::{json, Value};

const ATS: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");

async fn push(app: &TestApp, body: &Value) -> reqwest::Response {
    let token = app.sign_in_with(ATS, ATS_BOT, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    app.post_json("/v1/partners/i9s/section1", &token, body)
        .await
}

fn hire(candidate: &str, return_url: &str) -> Value {
    json!({"integrationCandidateId": candidate, "onboardingType": "remote", "firstName": "Ana",
           "lastName": "Diaz", "emailAddress": "ana@mail.example", "startDate": "2026-12-01",
           "locationId": 3, "employeeReturnUrl": return_url})
}

async fn employees_of(app: &TestApp, candidate: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM employees WHERE integration_candidate_id = $1")
        .bind(candidate)
        .fetch_one(app.pool())
        .await
        .unwrap()
}

fn errors(p: &Value) -> Vec<(String, String)> {
    p["errors"]
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

#[tokio::test]
async fn an_http_return_url_is_refused_when_private_callbacks_are_not_allowed() {
    let app = spawn_app().await;
    let r = push(&app, &hire("cand-http", "http://ats.example/done/1")).await;
    assert_eq!(r.status(), 422);
    let p: Value = r.json().await.unwrap();
    assert_eq!(
        errors(&p),
        [("employeeReturnUrl".to_owned(), "https_required".to_owned())]
    );
    assert_eq!(employees_of(&app, "cand-http").await, 0, "nothing written");

    // With another bad field, both are named in one answer.
    let mut body = hire("cand-http", "http://ats.example/done/1");
    body["firstName"] = json!("x".repeat(51));
    let p: Value = push(&app, &body).await.json().await.unwrap();
    let got = errors(&p);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got.contains(&("firstName".into(), "too_long".into())));
    assert!(got.contains(&("employeeReturnUrl".into(), "https_required".into())));
    assert_eq!(employees_of(&app, "cand-http").await, 0);

    // https is taken.
    let r = push(&app, &hire("cand-https", "https://ats.example/done/1")).await;
    assert_eq!(r.status(), 201);
    assert_eq!(employees_of(&app, "cand-https").await, 1);
}

#[tokio::test]
async fn an_http_return_url_is_taken_when_private_callbacks_are_allowed() {
    let app = spawn_app_with(|c| c.allow_private_callbacks = true).await;
    let r = push(&app, &hire("cand-local", "http://127.0.0.1:9099/done")).await;
    assert_eq!(r.status(), 201);
    assert_eq!(employees_of(&app, "cand-local").await, 1);
    let r = push(&app, &hire("cand-js", "javascript:alert(1)")).await;
    assert_eq!(r.status(), 422);
    let p: Value = r.json().await.unwrap();
    assert_eq!(
        errors(&p),
        [("employeeReturnUrl".to_owned(), "invalid_format".to_owned())]
    );
}

/// A return URL holding a user name or password is refused however the
/// deployment is set (partner trial): it would be stored and sent in clear.
#[tokio::test]
async fn a_return_url_with_credentials_is_refused_even_when_private_callbacks_are_allowed() {
    let app = spawn_app_with(|c| c.allow_private_callbacks = true).await;
    for url in [
        "https://user:pw@ats.example/done/1",
        "https://user@ats.example/done/1",
        "http://user:pw@127.0.0.1:9099/done",
    ] {
        let r = push(&app, &hire("cand-creds", url)).await;
        assert_eq!(r.status(), 422, "{url}");
        let p: Value = r.json().await.unwrap();
        assert_eq!(
            errors(&p),
            [(
                "employeeReturnUrl".to_owned(),
                "credentials_in_url".to_owned()
            )],
            "{url}"
        );
        assert!(!p.to_string().contains("pw@"), "the URL is not echoed");
    }
    assert_eq!(employees_of(&app, "cand-creds").await, 0, "nothing written");
}
