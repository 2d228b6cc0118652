//! The Section 1 page: the form, errors beside their fields, English and
//! Spanish, signing, the redirect to employeeReturnUrl, single use, the
//! partner's callback, the page while the I-9 is being prepared, and a form
//! that cannot be read.

use i9_tests::{eventually, spawn, spawn_partner_stack, Stack, TestApp, ATS_BOT};
use serde_json::{json, Value};

const ATS: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");

/// A remote hire with a Section 1 link: the employee's id and the link.
async fn hire_request(app: &TestApp, candidate: &str, language: i64) -> (i64, String) {
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
    (
        b["id"].as_i64().unwrap(),
        b["i9Section1Link"].as_str().unwrap().to_owned(),
    )
}

/// [`hire_request`], once the worker has created the I-9.
async fn hire(app: &TestApp, candidate: &str, language: i64) -> (i64, String) {
    let (id, link) = hire_request(app, candidate, language).await;
    eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;
    (id, link)
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

#[tokio::test]
async fn the_page_being_prepared_tells_the_browser_when_to_look_again() {
    // No worker: the I-9 is never created, the link stays "being prepared".
    let app = i9_tests::spawn_app().await;
    let (id, link) = hire_request(&app, "cand-early", 2).await;
    for (url, lang, says) in [
        (
            link.clone(),
            "es",
            "Esta página vuelve a cargarse en 5 segundos",
        ),
        (
            format!("{link}?lang=en"),
            "en",
            "This page looks again in 5 seconds",
        ),
    ] {
        let r = app.http.get(&url).send().await.unwrap();
        assert_eq!(r.status(), 200, "{lang}");
        assert_eq!(r.headers()["retry-after"], "5", "{lang}");
        let html = r.text().await.unwrap();
        assert!(html.contains(&format!("<html lang=\"{lang}\"")), "{html}");
        assert!(
            html.contains("<meta http-equiv=\"refresh\" content=\"5\">"),
            "{html}"
        );
        assert!(html.contains(says), "{html}");
        assert!(!html.contains("<form"), "no form yet: {html}");
    }
    // Nothing to sign yet.
    let r = app
        .http
        .post(&link)
        .form(&good_form())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(app.i9_count(id).await, 0);
}

/// The page that says the form could not be read, in `lang`.
async fn unreadable(r: reqwest::Response, status: u16, lang: &str, what: &str) {
    assert_eq!(r.status(), status, "{what}");
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{what}"
    );
    let html = r.text().await.unwrap();
    assert!(
        html.contains(&format!("<html lang=\"{lang}\"")),
        "{what}: {html}"
    );
    let title = if lang == "es" {
        "No se pudo leer el formulario"
    } else {
        "The form could not be read"
    };
    assert!(html.contains(title), "{what}: {html}");
}

#[tokio::test]
async fn a_form_that_cannot_be_read_is_a_400_page_in_its_language_and_signs_nothing() {
    let app = spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    let (id, link) = hire(&app, "cand-garbled", 2).await;
    let good = serde_urlencoded::to_string(good_form()).unwrap();
    let form = "application/x-www-form-urlencoded";
    let cases: Vec<(&str, Option<&str>, Vec<u8>)> = vec![
        (
            "a value not UTF-8, percent-encoded",
            Some(form),
            format!("{good}&middleInitial=%FF").into_bytes(),
        ),
        (
            "a value not UTF-8, raw",
            Some(form),
            [good.as_bytes(), b"&otherLastNames=D\xedaz"].concat(),
        ),
        (
            "a field repeated",
            Some(form),
            format!("{good}&lastName=Other").into_bytes(),
        ),
        (
            "a field the page does not have",
            Some(form),
            format!("{good}&status=Signed+Sec+1").into_bytes(),
        ),
        (
            "JSON sent as a form",
            Some(form),
            br#"{"lastName":"Diaz","firstName":"Ana"}"#.to_vec(),
        ),
        (
            "JSON",
            Some("application/json"),
            serde_json::to_vec(
                &good_form()
                    .into_iter()
                    .collect::<std::collections::HashMap<_, _>>(),
            )
            .unwrap(),
        ),
        ("no content type", None, good.clone().into_bytes()),
        ("text/plain", Some("text/plain"), good.clone().into_bytes()),
        (
            "multipart",
            Some("multipart/form-data; boundary=x"),
            good.clone().into_bytes(),
        ),
    ];
    for (what, content_type, body) in cases {
        let mut req = app.http.post(&link).body(body);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        unreadable(req.send().await.unwrap(), 400, "es", what).await;
    }
    // In the language asked for.
    let r = app
        .http
        .post(format!("{link}?lang=en"))
        .header("content-type", form)
        .body(format!("{good}&lastName=Other"))
        .send()
        .await
        .unwrap();
    unreadable(r, 400, "en", "a field repeated, in English").await;
    // Over the body limit: the same page, as a 413.
    let r = app
        .http
        .post(&link)
        .header("content-type", form)
        .body(format!("{good}&otherLastNames={}", "a".repeat(300 * 1024)))
        .send()
        .await
        .unwrap();
    unreadable(r, 413, "es", "a body over the limit").await;

    // Nothing was signed, and the link still works.
    let status: String = sqlx::query_scalar("SELECT status FROM i9s WHERE employee_id = $1")
        .bind(id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(status, "Section 1 Incomplete");
    let signed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'i9.section1'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(signed, 0);
    // A form missing a field is still read: the error sits by that field.
    let mut missing = good_form();
    missing.retain(|(k, _)| *k != "addressCity");
    let r = app.http.post(&link).form(&missing).send().await.unwrap();
    assert_eq!(r.status(), 422);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("<p class=\"error\" id=\"addressCity-error\">Este campo es obligatorio.</p>"));
    let r = app
        .http
        .post(&link)
        .form(&good_form())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    // A used link is a used link, whatever the body.
    let r = app
        .http
        .post(&link)
        .header("content-type", form)
        .body("lastName=%FF")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}
