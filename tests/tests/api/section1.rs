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

pub(crate) fn good_form() -> Vec<(&'static str, &'static str)> {
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

/// The error summary of a page: each entry's link fragment and text.
pub(crate) fn summary(html: &str) -> Vec<(String, String)> {
    let start = html.find("class=\"summary\"").expect("an error summary");
    let end = start + html[start..].find("</div>").unwrap();
    regex::Regex::new(r##"<li><a href="#([^"]*)">([^<]*)</a></li>"##)
        .unwrap()
        .captures_iter(&html[start..end])
        .map(|c| (c[1].to_owned(), c[2].to_owned()))
        .collect()
}

/// The HR engineer's trial: the summary linked to `#attestation`, which no
/// element carried, and said "This field is required." without naming the
/// field. Each entry now links to an element of the page and names its
/// field, in English and in Spanish.
#[tokio::test]
async fn the_error_summary_links_to_its_fields_and_names_them() {
    let app = spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        |_| {},
    )
    .await;
    let (_, link) = hire(&app, "cand-summary", 1).await;
    let ids: regex::Regex = regex::Regex::new(r#"\sid="([^"]+)""#).unwrap();
    let incomplete = [
        ("lastName", "Diaz"),
        ("dateOfBirth", "1990-02-30"),
        ("socialSecurityNumber", "456-78"),
    ];
    for (lang, names) in [
        (
            "en",
            [
                ("firstName", "First name (given name): "),
                ("addressStreet", "Address (street number and name): "),
                ("addressCity", "City or town: "),
                ("addressState", "State: "),
                ("addressZip", "ZIP code: "),
                ("dateOfBirth", "Date of birth: "),
                ("socialSecurityNumber", "U.S. Social Security number: "),
                ("attestation", "Citizenship or immigration status: "),
                ("agree", "Penalty of perjury statement: "),
                ("signature", "Signature: "),
            ],
        ),
        (
            "es",
            [
                ("firstName", "Nombre: "),
                ("addressStreet", "Dirección (número y nombre de la calle): "),
                ("addressCity", "Ciudad o pueblo: "),
                ("addressState", "Estado: "),
                ("addressZip", "Código postal: "),
                ("dateOfBirth", "Fecha de nacimiento: "),
                (
                    "socialSecurityNumber",
                    "Número de Seguro Social de EE. UU.: ",
                ),
                ("attestation", "Estatus de ciudadanía o inmigración: "),
                ("agree", "Declaración bajo pena de perjurio: "),
                ("signature", "Firma: "),
            ],
        ),
    ] {
        let r = app
            .http
            .post(format!("{link}?lang={lang}"))
            .form(&incomplete)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422);
        let html = r.text().await.unwrap();
        let on_page: Vec<&str> = ids
            .captures_iter(&html)
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        let entries = summary(&html);
        for (fragment, text) in &entries {
            assert!(
                on_page.contains(&fragment.as_str()),
                "{lang}: #{fragment} is no element's id"
            );
            let (_, name) = names
                .iter()
                .find(|(field, _)| field == fragment)
                .unwrap_or_else(|| panic!("{lang}: an entry for {fragment}: {text}"));
            assert!(
                text.starts_with(name) && text.len() > name.len(),
                "{lang}: {text:?} names {name:?}"
            );
        }
        let mut linked: Vec<&str> = entries.iter().map(|(f, _)| f.as_str()).collect();
        linked.sort_unstable();
        let mut expected: Vec<&str> = names.iter().map(|(f, _)| *f).collect();
        expected.sort_unstable();
        assert_eq!(linked, expected, "{lang}: one entry per field in error");
        // The attestation's link lands on its first radio button.
        assert!(
            html.contains(r#"<input id="attestation" type="radio" name="attestation""#),
            "{html}"
        );
    }
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
    // HR sees it on the I-9's record, to compare the documents with.
    let i9: i64 = sqlx::query_scalar("SELECT id FROM i9s")
        .fetch_one(app.pool())
        .await
        .unwrap();
    let token = app.token(i9_tests::ADMIN).await;
    let rec = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_eq!(rec["workAuthorizationExpiration"], "2031-01-31");
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

/// An employee that HR (`admin`'s token) hires with `fields` besides a name,
/// a group and a start date, with an I-9: its id, its I-9's id and the
/// Section 1 link, once the worker has created the I-9.
pub(crate) async fn hr_hire(app: &TestApp, admin: &str, fields: Value) -> (i64, i64, String) {
    let mut body = json!({"firstName": "Ana", "lastName": "Diaz", "startDate": "2026-12-01",
                          "locationId": 3, "createI9": "yes"});
    body.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    let r = app.post_json("/v1/employees", admin, &body).await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    let id = created["id"].as_i64().unwrap();
    let link = created["i9FormSection1Link"].as_str().unwrap().to_owned();
    eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;
    let i9 = app
        .count("SELECT id FROM i9s WHERE employee_id = $1", id)
        .await;
    (id, i9, link)
}

/// Sign Section 1 with `form` as request `request_id`: the thank-you page.
async fn sign(app: &TestApp, link: &str, form: &[(&str, &str)], request_id: &str) -> String {
    let r = app
        .http
        .post(link)
        .header("x-request-id", request_id)
        .form(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "signed, no return URL");
    let html = r.text().await.unwrap();
    assert!(html.contains("Section 1 is signed"), "{html}");
    html
}

/// The audit entries of the fill of employee `id`: request id and detail.
async fn fills(app: &TestApp, id: i64) -> Vec<(Option<String>, Value)> {
    sqlx::query_as(
        "SELECT request_id, detail FROM audit_log
         WHERE action = 'employee.section1_fill' AND resource_type = 'employee' AND resource_id = $1::TEXT",
    )
    .bind(id)
    .fetch_all(app.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn section_1_fills_what_the_employee_record_lacks() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (id, i9, link) = hr_hire(&app, &admin, json!({})).await;
    let before = app.get_json(&format!("/v1/employees/{id}"), &admin).await;
    for field in [
        "dateOfBirth",
        "socialSecurityNumber",
        "addressStreet",
        "addressZip",
    ] {
        assert_eq!(before[field], Value::Null, "{field}");
    }
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(
        record["section1Differences"],
        Value::Null,
        "nothing recorded before Section 1 is signed"
    );

    sign(&app, &link, &good_form(), "fill-1").await;

    let after = app.get_json(&format!("/v1/employees/{id}"), &admin).await;
    for (field, value) in [
        ("dateOfBirth", "1990-03-14"),
        ("socialSecurityNumber", "456-78-9012"),
        ("addressStreet", "12 Harbor Way"),
        ("addressCity", "Portland"),
        ("addressState", "OR"),
        ("addressZip", "97201"),
    ] {
        assert_eq!(after[field], value, "{field}");
    }
    assert_eq!(after["addressApartment"], Value::Null, "none attested");
    // Masked for those without permission 12, as any number.
    let west = app.token(i9_tests::WEST_HR).await;
    let masked = app.get_json(&format!("/v1/employees/{id}"), &west).await;
    assert_eq!(masked["socialSecurityNumber"], "***-**-9012");
    // One entry of the fill, naming the fields, not their values.
    let entries = fills(&app, id).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].0.as_deref(), Some("fill-1"));
    assert_eq!(
        entries[0].1,
        json!({"fields": ["date_of_birth", "address_street", "address_city", "address_state",
                          "address_zip", "ssn"], "i9Id": i9})
    );
    // Nothing differed.
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["section1Differences"], json!([]));
    // The number is the employee's as any write's: another employee cannot take it.
    let r = app
        .post_json(
            "/v1/employees",
            &admin,
            &json!({"firstName": "Bo", "lastName": "Lund", "locationId": 3, "startDate": "2026-12-01",
                    "socialSecurityNumber": "456-78-9012"}),
        )
        .await;
    assert_eq!(r.status(), 409);
}

#[tokio::test]
async fn a_date_of_birth_hr_entered_is_kept_and_the_i9_shows_the_difference() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (id, i9, link) = hr_hire(&app, &admin, json!({"dateOfBirth": "1991-01-01"})).await;

    sign(&app, &link, &good_form(), "dob-1").await;

    let employee = app.get_json(&format!("/v1/employees/{id}"), &admin).await;
    assert_eq!(employee["dateOfBirth"], "1991-01-01", "HR's value is kept");
    assert_eq!(employee["socialSecurityNumber"], "456-78-9012");
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(
        record["dateOfBirth"], "1990-03-14",
        "the I-9 holds the attested one"
    );
    assert_eq!(
        record["section1Differences"],
        json!([{"field": "dateOfBirth", "reason": "differs"}])
    );
    let entries = fills(&app, id).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        entries[0].1["fields"],
        json!([
            "address_street",
            "address_city",
            "address_state",
            "address_zip",
            "ssn"
        ])
    );
}

#[tokio::test]
async fn an_ssn_another_employee_holds_is_not_copied_and_the_signing_succeeds() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let r = app
        .post_json(
            "/v1/employees",
            &admin,
            &json!({"firstName": "Bo", "lastName": "Lund", "locationId": 3, "startDate": "2026-12-01",
                    "socialSecurityNumber": "456-78-9012"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let holder = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    let (id, i9, link) = hr_hire(&app, &admin, json!({})).await;

    let page = sign(&app, &link, &good_form(), "held-1").await;
    assert!(
        !page.contains("456-78-9012") && !page.contains("456789012") && !page.contains("9012"),
        "{page}"
    );

    let status: String = sqlx::query_scalar("SELECT status FROM i9s WHERE id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(status, "Signed Sec 1");
    let employee = app.get_json(&format!("/v1/employees/{id}"), &admin).await;
    assert_eq!(employee["socialSecurityNumber"], Value::Null);
    assert_eq!(employee["dateOfBirth"], "1990-03-14", "the rest is filled");
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(
        record["section1Differences"],
        json!([{"field": "socialSecurityNumber", "reason": "held_by_another_employee"}])
    );
    // The holder keeps its number.
    let held = app
        .get_json(&format!("/v1/employees/{holder}"), &admin)
        .await;
    assert_eq!(held["socialSecurityNumber"], "456-78-9012");
    // The fill names no SSN; the refusal is audited as any refusal for a
    // taken number, naming the holder; no entry holds the number.
    let entries = fills(&app, id).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        entries[0].1["fields"],
        json!([
            "date_of_birth",
            "address_street",
            "address_city",
            "address_state",
            "address_zip"
        ])
    );
    let conflicts: Vec<(Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT resource_id, request_id FROM audit_log WHERE action = 'ssn.conflict'",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(
        conflicts,
        vec![(Some(holder.to_string()), Some("held-1".to_owned()))]
    );
    let leaked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE detail::TEXT LIKE '%9012%' OR detail::TEXT LIKE '%456%'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(leaked, 0);
}

#[tokio::test]
async fn equal_values_differ_in_nothing_and_fill_nothing() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    // As the employee will attest them (case and spacing aside).
    let (id, i9, link) = hr_hire(
        &app,
        &admin,
        json!({"dateOfBirth": "1990-03-14", "socialSecurityNumber": "456-78-9012",
               "addressStreet": "12 harbor  way", "addressCity": "Portland", "addressState": "or",
               "addressZip": "97201"}),
    )
    .await;

    sign(&app, &link, &good_form(), "same-1").await;

    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["i9Status"], "Signed Sec 1");
    assert_eq!(record["section1Differences"], json!([]));
    assert!(fills(&app, id).await.is_empty(), "nothing was filled");
    let employee = app.get_json(&format!("/v1/employees/{id}"), &admin).await;
    assert_eq!(
        employee["addressStreet"], "12 harbor  way",
        "HR's spelling stays"
    );
}

#[tokio::test]
async fn a_blank_ssn_attests_the_number_on_the_i9_and_is_compared_with_the_record() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (id, i9, link) =
        hr_hire(&app, &admin, json!({"socialSecurityNumber": "456-78-9012"})).await;
    // HR changes the number after the I-9 took the first one.
    let r = app
        .patch_json(
            &format!("/v1/employees/{id}"),
            &admin,
            &json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3,
                    "socialSecurityNumber": "456-78-9013"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let mut form = good_form();
    form.retain(|(k, _)| *k != "socialSecurityNumber");

    sign(&app, &link, &form, "blank-1").await;

    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["ssn"], "456-78-9012", "the I-9 keeps its number");
    assert_eq!(
        record["section1Differences"],
        json!([{"field": "socialSecurityNumber", "reason": "differs"}])
    );
    let employee = app.get_json(&format!("/v1/employees/{id}"), &admin).await;
    assert_eq!(employee["socialSecurityNumber"], "456-78-9013");
}

#[tokio::test]
async fn an_ssn_taken_while_the_employee_signs_is_not_copied_either() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (id, i9, link) = hr_hire(&app, &admin, json!({})).await;
    // Another employee takes the number in a transaction not yet committed:
    // the signing's look for a holder cannot see it, its write of the number
    // waits for it.
    let ssn = i9_common::domain::Ssn::parse("456-78-9012").unwrap();
    let mut other = app.pool().begin().await.unwrap();
    let holder: i64 = sqlx::query_scalar(
        "INSERT INTO employees (first_name, last_name, location_id, ssn_ciphertext, ssn_hash, ssn_last4)
         VALUES ('Bo', 'Lund', 3, $1, $2, $3) RETURNING id",
    )
    .bind(
        app.cipher
            .encrypt_ssn(i9_common::crypto::Purpose::EmployeeSsn, &ssn),
    )
    .bind(app.cipher.ssn_search_hash(&ssn))
    .bind(ssn.last4())
    .fetch_one(&mut *other)
    .await
    .unwrap();
    let signing = {
        let http = app.http.clone();
        let link = link.clone();
        tokio::spawn(async move {
            http.post(&link)
                .header("x-request-id", "race-1")
                .form(&good_form())
                .send()
                .await
                .unwrap()
        })
    };
    eventually("the signing waits for the other write", || async {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'
               AND query LIKE 'UPDATE employees %'",
        )
        .fetch_one(app.pool())
        .await
        .unwrap();
        waiting > 0
    })
    .await;
    other.commit().await.unwrap();

    let r = signing.await.unwrap();
    assert_eq!(r.status(), 200);
    let employee = app.get_json(&format!("/v1/employees/{id}"), &admin).await;
    assert_eq!(employee["socialSecurityNumber"], Value::Null);
    assert_eq!(employee["dateOfBirth"], "1990-03-14", "the rest is filled");
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["i9Status"], "Signed Sec 1");
    assert_eq!(
        record["section1Differences"],
        json!([{"field": "socialSecurityNumber", "reason": "held_by_another_employee"}])
    );
    let entries = fills(&app, id).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        entries[0].1["fields"],
        json!([
            "date_of_birth",
            "address_street",
            "address_city",
            "address_state",
            "address_zip"
        ])
    );
    let conflicts: Vec<(Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT resource_id, request_id FROM audit_log WHERE action = 'ssn.conflict'",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(
        conflicts,
        vec![(Some(holder.to_string()), Some("race-1".to_owned()))]
    );
}

/// The error beside `field` on a page, if any.
pub(crate) fn error_beside(html: &str, field: &str) -> Option<String> {
    regex::Regex::new(&format!(
        r#"<p class="error" id="{field}-error">([^<]*)</p>"#
    ))
    .unwrap()
    .captures(html)
    .map(|c| c[1].to_owned())
}

/// `form` with `changes` made (a field set, or added).
pub(crate) fn with(
    mut form: Vec<(&'static str, String)>,
    changes: &[(&'static str, &str)],
) -> Vec<(&'static str, String)> {
    for &(field, value) in changes {
        match form.iter_mut().find(|(k, _)| *k == field) {
            Some(f) => f.1 = value.to_owned(),
            None => form.push((field, value.to_owned())),
        }
    }
    form
}

pub(crate) fn good_form_owned() -> Vec<(&'static str, String)> {
    good_form()
        .into_iter()
        .map(|(k, v)| (k, v.to_owned()))
        .collect()
}

/// The HR trial: a date of birth in the future, a ZIP code of four digits,
/// a state that is no state and an A-Number of five digits were signed and
/// copied to the employee record. Each is now refused beside its field, in
/// English and in Spanish, and nothing is signed.
#[tokio::test]
async fn impossible_values_are_refused_beside_their_fields() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (id, i9, link) = hr_hire(&app, &admin, json!({})).await;
    let tomorrow = (chrono::Utc::now().date_naive() + chrono::Days::new(1)).to_string();
    let alien = [
        ("attestation", "alien authorized to work"),
        ("workAuthorizationExpiration", "N/A"),
    ];
    // The fields changed, the field in error, its English and Spanish messages.
    type Case<'a> = (
        Vec<(&'static str, &'a str)>,
        &'static str,
        &'static str,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (
            vec![("dateOfBirth", "2030-01-01")],
            "dateOfBirth",
            "Enter your date of birth; it cannot be in the future.",
            "Escriba su fecha de nacimiento; no puede ser una fecha futura.",
        ),
        (
            vec![("dateOfBirth", &tomorrow)],
            "dateOfBirth",
            "Enter your date of birth; it cannot be in the future.",
            "Escriba su fecha de nacimiento; no puede ser una fecha futura.",
        ),
        (
            vec![("dateOfBirth", "12/31/1899")],
            "dateOfBirth",
            "Enter your date of birth; it cannot be before 1900.",
            "Escriba su fecha de nacimiento; no puede ser anterior a 1900.",
        ),
        (
            vec![("addressZip", "9720")],
            "addressZip",
            "Enter the ZIP code as 5 digits, or as ZIP+4: 12345-6789.",
            "Escriba el código postal con 5 dígitos, o como ZIP+4: 12345-6789.",
        ),
        (
            vec![("addressZip", "97201-12")],
            "addressZip",
            "Enter the ZIP code as 5 digits, or as ZIP+4: 12345-6789.",
            "Escriba el código postal con 5 dígitos, o como ZIP+4: 12345-6789.",
        ),
        (
            vec![("addressState", "Oregon")],
            "addressState",
            "Choose the state, territory or military post office from the list.",
            "Elija el estado, territorio u oficina postal militar de la lista.",
        ),
        (
            vec![("addressState", "XX")],
            "addressState",
            "Choose the state, territory or military post office from the list.",
            "Elija el estado, territorio u oficina postal militar de la lista.",
        ),
        (
            vec![
                ("attestation", "permanent resident"),
                ("alienNumber", "A12345"),
            ],
            "alienNumber",
            "Enter the A-Number as 7 to 9 digits, e.g. A123456789.",
            "Escriba el número A con 7 a 9 dígitos, p. ej., A123456789.",
        ),
        (
            [&alien[..], &[("admissionNumber", "1234567890")]].concat(),
            "admissionNumber",
            "Enter the 11 digits and letters of the I-94 admission number.",
            "Escriba los 11 dígitos y letras del número de admisión del I-94.",
        ),
        (
            [&alien[..], &[("admissionNumber", "1234567890!")]].concat(),
            "admissionNumber",
            "Enter the 11 digits and letters of the I-94 admission number.",
            "Escriba los 11 dígitos y letras del número de admisión del I-94.",
        ),
    ];
    for (changes, field, en, es) in &cases {
        for (lang, message) in [("en", en), ("es", es)] {
            let form = with(good_form_owned(), changes);
            let r = app
                .http
                .post(format!("{link}?lang={lang}"))
                .form(&form)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 422, "{changes:?}");
            let html = r.text().await.unwrap();
            assert_eq!(
                error_beside(&html, field).as_deref(),
                Some(*message),
                "{lang} {changes:?}"
            );
            let entries = summary(&html);
            assert_eq!(entries.len(), 1, "{lang} {changes:?}: {entries:?}");
            assert_eq!(entries[0].0, *field);
        }
    }
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9s WHERE employee_id = $1 AND status = 'Section 1 Incomplete'",
            id
        )
        .await,
        1,
        "nothing signed"
    );
    // The hints say what is asked; the state is a list.
    let page = app
        .http
        .get(&link)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(r#"<select id="addressState" name="addressState" autocomplete="address-level1" required>"#)
            && page.contains(r#"<option value="OR">OR – Oregon</option>"#),
        "{page}"
    );
    assert!(page
        .contains(r#"id="addressZip-hint">5 digits, e.g. 97201, or ZIP+4, e.g. 97201-1234.</p>"#));
    assert!(page.contains(r#"id="workAuthorizationExpiration-hint">YYYY-MM-DD or MM/DD/YYYY. Type N/A if it does not expire.</p>"#));

    // A state in any letter case is stored upper-case; ZIP+4 and a date of
    // birth of today are accepted, and copied to the employee record.
    let today = chrono::Utc::now().date_naive().to_string();
    let form = with(
        good_form_owned(),
        &[
            ("addressState", "or"),
            ("addressZip", "97201-1234"),
            ("dateOfBirth", &today),
        ],
    );
    let r = app.http.post(&link).form(&form).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(
        (
            &record["addressState"],
            &record["addressZip"],
            &record["dateOfBirth"]
        ),
        (&json!("OR"), &json!("97201-1234"), &json!(today))
    );
    let employee = app.get_json(&format!("/v1/employees/{id}"), &admin).await;
    assert_eq!(
        (&employee["addressState"], &employee["addressZip"]),
        (&json!("OR"), &json!("97201-1234"))
    );
}

/// The HR trial: a citizen's I-9 kept the A-Number typed on the form. An
/// I-9 keeps the numbers of its attestation only: a citizen or noncitizen
/// national none, a lawful permanent resident the A-Number (normalised), a
/// noncitizen authorized to work what was given.
#[tokio::test]
async fn an_i9_keeps_only_the_numbers_of_its_attestation() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let typed = [
        ("alienNumber", "a-123-456-78"),
        ("workAuthorizationExpiration", "2031-01-31"),
        ("admissionNumber", "123456789a1"),
        ("foreignPassportNumber", "X1234567"),
        ("foreignPassportCountry", "Mexico"),
    ];
    let null = Value::Null;
    for (attestation, kept) in [
        ("citizen", [&null, &null, &null, &null, &null]),
        ("noncitizen national", [&null, &null, &null, &null, &null]),
        (
            "permanent resident",
            [&json!("A012345678"), &null, &null, &null, &null],
        ),
        (
            "alien authorized to work",
            [
                &json!("A012345678"),
                &json!("2031-01-31"),
                &json!("123456789A1"),
                &json!("X1234567"),
                &json!("Mexico"),
            ],
        ),
    ] {
        let (_, i9, link) = hr_hire(&app, &admin, json!({})).await;
        let form = with(
            with(good_form_owned(), &typed),
            &[("attestation", attestation)],
        );
        let r = app.http.post(&link).form(&form).send().await.unwrap();
        assert_eq!(
            r.status(),
            200,
            "{attestation}: {}",
            r.text().await.unwrap()
        );
        let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
        assert_eq!(record["attestation"], attestation);
        let expiry: Option<chrono::NaiveDate> =
            sqlx::query_scalar("SELECT work_authorization_expiration FROM i9s WHERE id = $1")
                .bind(i9)
                .fetch_one(app.pool())
                .await
                .unwrap();
        let expiry = expiry.map_or(Value::Null, |d| json!(d.to_string()));
        assert_eq!(
            [
                &record["alienNumber"],
                &expiry,
                &record["admissionNumber"],
                &record["foreignPassportNumber"],
                &record["foreignPassportCountry"],
            ],
            kept,
            "{attestation}"
        );
    }
}

/// The expiry of a noncitizen's work authorization: the message says to
/// type N/A when it does not expire (there is no box to check), in either
/// case of letters, and N/A stores no date.
#[tokio::test]
async fn a_work_authorization_that_does_not_expire_is_typed_n_a() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (_, i9, link) = hr_hire(&app, &admin, json!({})).await;
    let alien = with(
        good_form_owned(),
        &[
            ("attestation", "alien authorized to work"),
            ("admissionNumber", "12345678901"),
        ],
    );
    for (lang, message) in [
        ("en", "Give the expiration date of your work authorization, or type N/A if it does not expire."),
        ("es", "Indique la fecha de vencimiento de su autorización de empleo, o escriba N/A si no vence."),
    ] {
        let r = app.http.post(format!("{link}?lang={lang}")).form(&alien).send().await.unwrap();
        assert_eq!(r.status(), 422);
        let html = r.text().await.unwrap();
        assert_eq!(error_beside(&html, "workAuthorizationExpiration").as_deref(), Some(message));
    }
    let r = app
        .http
        .post(&link)
        .form(&with(alien, &[("workAuthorizationExpiration", "n/A")]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["admissionNumber"], "12345678901");
    let expiry: Option<chrono::NaiveDate> =
        sqlx::query_scalar("SELECT work_authorization_expiration FROM i9s WHERE id = $1")
            .bind(i9)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(expiry, None);
}

#[tokio::test]
async fn a_link_that_does_not_work_says_so_in_the_language_asked() {
    let app = spawn(Stack::default(), |_| {}).await;
    for (path, lang, words) in [
        (
            "/i9/section1/s1_nope?lang=es",
            "es",
            "Este enlace no funciona",
        ),
        (
            "/account/set-password/pw_nope?lang=es",
            "es",
            "Este enlace no funciona",
        ),
        ("/i9/section1/s1_nope", "en", "This link does not work"),
    ] {
        let r = app.http.get(app.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        let html = r.text().await.unwrap();
        assert!(
            html.contains(&format!(r#"<html lang="{lang}">"#)),
            "{path}: {html}"
        );
        assert!(html.contains(words), "{path}: {html}");
    }
}
