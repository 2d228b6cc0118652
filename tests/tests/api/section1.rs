//! The Section 1 page: the form, errors beside their fields, English and
//! Spanish, signing, the redirect to employeeReturnUrl, single use, and the
//! partner's callback.

use i9_tests::{eventually, spawn, spawn_partner_stack, Stack, TestApp, ATS_BOT};
use serde_json::{json, Value};

const ATS: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");

async fn hire(app: &TestApp, candidate: &str, language: i64) -> (i64, String) {
    let token = app.sign_in_with(ATS, ATS_BOT, None).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = json!({"integrationCandidateId": candidate, "onboardingType": "on-site", "firstName": "Ana",
                      "lastName": "Diaz", "emailAddress": "ana@mail.example", "startDate": "2026-12-01",
                      "locationId": 3, "languagePreference": language,
                      "employeeReturnUrl": "https://ats.example/done/8812"});
    let r = app
        .post_json("/v1/partners/i9s/section1", &token, &body)
        .await;
    assert_eq!(r.status(), 201);
    let b: Value = r.json().await.unwrap();
    let id = b["id"].as_i64().unwrap();
    eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;
    (id, b["i9Section1Link"].as_str().unwrap().to_owned())
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
        ("socialSecurityNumber", "456-78-9012"),
        ("attestation", "citizen"),
        ("agree", "yes"),
        ("signature", "Ana Diaz"),
    ]
}

#[tokio::test]
async fn the_employee_signs_section_1_and_returns_to_the_partner() {
    let (app, receiver) = spawn_partner_stack().await;
    let (id, link) = hire(&app, "cand-s1", 1).await;

    let page = app.http.get(&link).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("<html lang=\"en\""));
    assert!(
        html.contains("<label for=\"lastName\">") && html.contains("value=\"Diaz\""),
        "labelled and prefilled"
    );
    assert!(
        html.contains("<fieldset") && html.contains("<legend>"),
        "the attestation is a fieldset"
    );

    // Errors appear next to their fields, and nothing is signed.
    let mut bad = good_form();
    bad.retain(|(k, _)| *k != "attestation");
    bad.iter_mut()
        .filter(|(k, _)| *k == "signature")
        .for_each(|f| f.1 = "Someone Else");
    let r = app.http.post(&link).form(&bad).send().await.unwrap();
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(html.contains("role=\"alert\""), "an error summary");
    assert!(
        html.contains("id=\"signature-error\"")
            && html.contains("aria-describedby=\"signature-hint signature-error\"")
    );
    assert!(html.contains("id=\"attestation-error\""));
    assert!(
        html.contains("value=\"12 Harbor Way\""),
        "what was typed is kept"
    );
    let status: String = sqlx::query_scalar("SELECT status FROM i9s WHERE employee_id = $1")
        .bind(id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(status, "Section 1 Incomplete");

    // Signing sends the browser back to the partner.
    let r = app
        .http
        .post(&link)
        .header("x-request-id", "sign-s1-1")
        .form(&good_form())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "https://ats.example/done/8812");
    // One audit entry, with the request's id.
    let audited: Vec<Option<String>> =
        sqlx::query_scalar("SELECT request_id FROM audit_log WHERE action = 'i9.section1'")
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(audited, vec![Some("sign-s1-1".to_owned())]);
    let row: (String, Option<String>, Option<chrono::NaiveDate>) = sqlx::query_as(
        "SELECT status, attestation, signed_date_employee FROM i9s WHERE employee_id = $1",
    )
    .bind(id)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(
        (row.0.as_str(), row.1.as_deref()),
        ("Signed Sec 1", Some("citizen"))
    );
    assert_eq!(row.2, Some(chrono::Utc::now().date_naive()));

    // The link works once.
    assert_eq!(app.http.get(&link).send().await.unwrap().status(), 404);
    assert_eq!(
        app.http
            .post(&link)
            .form(&good_form())
            .send()
            .await
            .unwrap()
            .status(),
        404
    );

    // And the partner hears of it.
    eventually("the Signed Sec 1 callback", || async {
        receiver.received().iter().any(|(_, b)| {
            serde_json::from_slice::<Value>(b)
                .map(|v| v["i9Status"] == "Signed Sec 1")
                .unwrap_or(false)
        })
    })
    .await;
}

#[tokio::test]
async fn the_form_speaks_spanish_and_checks_what_each_attestation_needs() {
    let app = spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    let (_, link) = hire(&app, "cand-es", 2).await;
    let html = app
        .http
        .get(&link)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("<html lang=\"es\"") && html.contains("Apellido"));
    let en = app
        .http
        .get(format!("{link}?lang=en"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(en.contains("<html lang=\"en\"") && en.contains("Last name"));

    let mut alien = good_form();
    alien
        .iter_mut()
        .filter(|(k, _)| *k == "attestation")
        .for_each(|f| f.1 = "alien authorized to work");
    let r = app
        .http
        .post(format!("{link}?lang=en"))
        .form(&alien)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(html.contains("id=\"workAuthorizationExpiration-error\""));
    assert!(html.contains("id=\"alienNumber-error\""));
    alien.push(("workAuthorizationExpiration", "2031-01-31"));
    alien.push(("admissionNumber", "12345678901"));
    let r = app.http.post(&link).form(&alien).send().await.unwrap();
    assert_eq!(r.status(), 303);
    let exp: Option<chrono::NaiveDate> =
        sqlx::query_scalar("SELECT work_authorization_expiration FROM i9s")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(exp.map(|d| d.to_string()).as_deref(), Some("2031-01-31"));
}

#[tokio::test]
async fn an_expired_link_does_not_open_the_form() {
    let app = spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    let (_, link) = hire(&app, "cand-late", 1).await;
    assert_eq!(app.http.get(&link).send().await.unwrap().status(), 200);
    sqlx::query("UPDATE i9_requests SET section1_expires_at = now() - interval '1 second'")
        .execute(app.pool())
        .await
        .unwrap();
    let r = app.http.get(&link).send().await.unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.text().await.unwrap().contains("expired"));
    assert_eq!(
        app.http
            .post(&link)
            .form(&good_form())
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
}
