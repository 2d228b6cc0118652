//! The security headers of the employee pages (finding 11 of issue 8): every
//! page, whether it shows a form, an error or a result, and every other
//! answer on their routes (the redirect after signing), is sent with a
//! Content-Security-Policy, `nosniff`, `no-referrer`, `no-store` and `DENY`
//! for framing; every answer of the API is `nosniff`.

use base64::{engine::general_purpose::STANDARD, Engine as _};
use i9_common::crypto::{new_token, token_hash};
use i9_tests::{eventually, spawn, Stack, TestApp, ADMIN, ATS_BOT};
use reqwest::Response;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const ATS: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");

/// The headers every answer on a page route carries.
fn assert_page_route_headers(r: &Response, what: &str) {
    for (name, value) in [
        ("cache-control", "no-store"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("cross-origin-opener-policy", "same-origin"),
    ] {
        assert_eq!(
            r.headers().get(name).and_then(|v| v.to_str().ok()),
            Some(value),
            "{name} of {what}"
        );
    }
}

/// Check a page's headers; its policy allows exactly its own inline style
/// sheet, and its form to post to itself and to `form_target`. Returns the body.
async fn page(r: Response, status: u16, form_target: Option<&str>, what: &str) -> String {
    assert_eq!(r.status(), status, "{what}");
    assert_page_route_headers(&r, what);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{what}"
    );
    let policy = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = r.text().await.unwrap();
    assert_eq!(
        body.matches("<style>").count(),
        1,
        "{what}: one style sheet"
    );
    let style = &body[body.find("<style>").unwrap() + 7..body.find("</style>").unwrap()];
    let hash = STANDARD.encode(Sha256::digest(style.as_bytes()));
    let form_action = match form_target {
        Some(t) => format!("'self' {t}"),
        None => "'self'".to_owned(),
    };
    assert_eq!(
        policy,
        format!(
            "default-src 'none'; style-src 'sha256-{hash}'; form-action {form_action}; \
             frame-ancestors 'none'; base-uri 'none'"
        ),
        "{what}"
    );
    assert!(
        !body.contains("<script") && !body.contains(" style="),
        "{what}: nothing the policy would block"
    );
    body
}

fn good_form() -> Vec<(&'static str, &'static str)> {
    vec![
        ("lastName", "Diaz"),
        ("firstName", "Ana"),
        ("addressStreet", "12 Harbor Way"),
        ("addressCity", "Portland"),
        ("addressState", "OR"),
        ("addressZip", "97201"),
        ("dateOfBirth", "03/14/1990"),
        ("attestation", "citizen"),
        ("agree", "yes"),
        ("signature", "Ana Diaz"),
    ]
}

async fn stack() -> TestApp {
    spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await
}

#[tokio::test]
async fn section_1_pages_and_the_redirect_carry_the_security_headers() {
    let app = stack().await;
    let token = app.sign_in_with(ATS, ATS_BOT, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = json!({"integrationCandidateId": "cand-headers", "onboardingType": "on-site", "firstName": "Ana",
                      "lastName": "Diaz", "emailAddress": "ana@mail.example", "startDate": "2026-12-01",
                      "locationId": 3, "employeeReturnUrl": "https://ats.example:8443/done/8812?step=i9"});
    let r = app
        .post_json("/v1/partners/i9s/section1", &token, &body)
        .await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    let id = created["id"].as_i64().unwrap();
    let link = created["i9Section1Link"].as_str().unwrap().to_owned();
    eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;
    let ats = Some("https://ats.example:8443");

    let form = page(
        app.http.get(&link).send().await.unwrap(),
        200,
        ats,
        "the form",
    )
    .await;
    assert!(form.contains("<form method=\"post\""));
    let spanish = app
        .http
        .get(format!("{link}?lang=es"))
        .send()
        .await
        .unwrap();
    page(spanish, 200, ats, "the form in Spanish").await;
    let mut bad = good_form();
    bad.retain(|(k, _)| *k != "attestation");
    let r = app.http.post(&link).form(&bad).send().await.unwrap();
    page(r, 422, ats, "the form with errors").await;
    let r = app
        .http
        .post(&link)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("lastName=%FF")
        .send()
        .await
        .unwrap();
    page(r, 400, None, "a form that cannot be read").await;

    // The redirect to the partner: no page, so a policy that allows nothing.
    let r = app
        .http
        .post(&link)
        .form(&good_form())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(
        r.headers()["location"],
        "https://ats.example:8443/done/8812?step=i9"
    );
    assert_page_route_headers(&r, "the redirect after signing");
    assert_eq!(
        r.headers()["content-security-policy"],
        "default-src 'none'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'"
    );

    // The used link: the error page.
    let r = app.http.get(&link).send().await.unwrap();
    page(r, 404, None, "a used link").await;
    let r = app
        .http
        .post(&link)
        .form(&good_form())
        .send()
        .await
        .unwrap();
    page(r, 404, None, "a used link, posted").await;
    let r = app
        .http
        .get(app.url(&format!("/i9/section1/{}", new_token(""))))
        .send()
        .await
        .unwrap();
    page(r, 404, None, "an unknown link").await;
}

#[tokio::test]
async fn the_signed_page_without_a_return_url_carries_the_security_headers() {
    let app = stack().await;
    let admin = app.token(ADMIN).await;
    let r = app
        .post_json(
            "/v1/employees",
            &admin,
            &json!({"firstName": "Ana", "lastName": "Diaz", "startDate": "2026-12-01",
                    "locationId": 3, "createI9": "yes"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    let id = created["id"].as_i64().unwrap();
    let link = created["i9FormSection1Link"].as_str().unwrap().to_owned();
    eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;
    page(
        app.http.get(&link).send().await.unwrap(),
        200,
        None,
        "the form",
    )
    .await;
    let r = app
        .http
        .post(&link)
        .form(&good_form())
        .send()
        .await
        .unwrap();
    let done = page(r, 200, None, "the signed page").await;
    assert!(done.contains("Section 1 is signed"));
}

#[tokio::test]
async fn set_password_pages_carry_the_security_headers() {
    let app = i9_tests::spawn_app().await;
    let token = new_token("");
    sqlx::query(
        "INSERT INTO password_set_tokens (token_hash, user_id, expires_at)
         SELECT $1, id, now() + interval '1 hour' FROM users WHERE login = 'west.hr'",
    )
    .bind(token_hash(&token))
    .execute(app.pool())
    .await
    .unwrap();
    let url = app.url(&format!("/account/set-password/{token}"));

    page(
        app.http.get(&url).send().await.unwrap(),
        200,
        None,
        "the form",
    )
    .await;
    let r = app
        .http
        .post(&url)
        .form(&[("password", "short"), ("confirm", "other")])
        .send()
        .await
        .unwrap();
    page(r, 422, None, "the form with errors").await;
    let r = app
        .http
        .post(&url)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    page(r, 400, None, "a form that cannot be read").await;
    let r = app
        .http
        .post(&url)
        .form(&[
            ("password", "a-long-new-passw0rd"),
            ("confirm", "a-long-new-passw0rd"),
        ])
        .send()
        .await
        .unwrap();
    let done = page(r, 200, None, "the password is set").await;
    assert!(done.contains("Your password is set"));
    page(
        app.http.get(&url).send().await.unwrap(),
        404,
        None,
        "a used link",
    )
    .await;
}

#[tokio::test]
async fn every_api_answer_is_nosniff() {
    let app = i9_tests::spawn_app().await;
    let admin = app.token(ADMIN).await;
    let answers = [
        app.http.get(app.url("/healthz")).send().await.unwrap(),
        app.get("/v1/employees", &admin).await,
        app.http.get(app.url("/v1/employees")).send().await.unwrap(),
        app.http
            .get(app.url("/no/such/route"))
            .send()
            .await
            .unwrap(),
        app.http
            .get(app.url("/v1/openapi.json"))
            .send()
            .await
            .unwrap(),
        app.token_request(&[("grant_type", "password")]).await,
    ];
    let statuses: Vec<u16> = answers.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(statuses, [200, 200, 401, 404, 401, 400]);
    for r in &answers {
        assert_eq!(
            r.headers()
                .get("x-content-type-options")
                .and_then(|v| v.to_str().ok()),
            Some("nosniff"),
            "{}",
            r.url()
        );
    }
}
