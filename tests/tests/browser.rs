//! The employee pages in a real browser: headless Chromium (Debian's
//! `chromium` and `chromedriver`, installed by scripts/test.sh), driven over
//! WebDriver.
//! - The Section 1 link: fill the form, see an error beside its field, sign,
//!   land on the partner's employeeReturnUrl; the I-9 is Signed Sec 1, the
//!   partner got the callback, and the link does not work twice.
//! - The employee's own page: set the password from the login email, sign
//!   in, open the pending Section 1, sign it, see it signed, sign out.
//! - Supplement A (docs/supplement-a.md): Section 1 signed with two
//!   preparers/translators in English (the second row added with the page's
//!   button) and with one in Spanish; the I-9 records show them.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::{process::Stdio, time::Duration};

use fantoccini::{ClientBuilder, Locator};
use i9_tests::{eventually, spawn_partner_stack, ATS_BOT};
use serde_json::{json, Value};

struct Driver(std::process::Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Headless Chromium under its own chromedriver and profile.
async fn browser() -> (Driver, fantoccini::Client, std::path::PathBuf) {
    let port = free_port();
    let driver = Driver(
        std::process::Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(i9_tests::logs::stderr_sink("chromedriver"))
            .spawn()
            .expect(
                "chromedriver (apt-get install chromium chromium-driver; scripts/test.sh does)",
            ),
    );
    let profile =
        std::env::temp_dir().join(format!("i9-chromium-{}", uuid::Uuid::new_v4().simple()));
    let caps = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-quic", "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync",
                     format!("--user-data-dir={}", profile.display())]
        }
    });
    let caps: serde_json::Map<String, Value> = caps.as_object().unwrap().clone();
    // Poll until chromedriver listens, within a deadline.
    let url = format!("http://127.0.0.1:{port}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let c = loop {
        match ClientBuilder::rustls()
            .unwrap()
            .capabilities(caps.clone())
            .connect(&url)
            .await
        {
            Ok(c) => break c,
            Err(e) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "no WebDriver session: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };

    (driver, c, profile)
}

#[tokio::test]
async fn an_employee_signs_section_1_in_a_browser() {
    // Several TLS back-ends are linked in; the WebDriver client needs one chosen.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (app, receiver) = spawn_partner_stack().await;
    let token = app
        .sign_in_with(("greenhouse-ats", "ats-secret-change-me"), ATS_BOT, None)
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = json!({"integrationCandidateId": "cand-browser", "onboardingType": "on-site", "firstName": "Ana",
                      "lastName": "Diaz", "emailAddress": "ana@mail.example", "startDate": "2026-12-01",
                      "locationId": 3, "employeeReturnUrl": receiver.return_url});
    let r = app
        .post_json("/v1/partners/i9s/section1", &token, &body)
        .await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    let id = created["id"].as_i64().unwrap();
    let link = created["i9Section1Link"].as_str().unwrap().to_owned();
    eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;

    let (_driver, c, profile) = browser().await;
    c.goto(&link).await.unwrap();
    let last = c.find(Locator::Id("lastName")).await.unwrap();
    assert_eq!(
        last.prop("value").await.unwrap().as_deref(),
        Some("Diaz"),
        "prefilled"
    );
    for (id, value) in [
        ("addressStreet", "12 Harbor Way"),
        ("addressCity", "Portland"),
        ("addressZip", "97201"),
        ("signature", "Ana Dias"),
    ] {
        c.find(Locator::Id(id))
            .await
            .unwrap()
            .send_keys(value)
            .await
            .unwrap();
    }
    choose_state(&c, "addressState", "OR").await;
    type_date(&c, "dateOfBirth", (1990, 3, 14)).await;
    c.find(Locator::Css("input[name=attestation][value=citizen]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.find(Locator::Id("agree"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    click(&c, SIGN).await;

    // A misspelt signature: the error sits beside the field; the rest is kept.
    let error = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Id("signature-error"))
        .await
        .unwrap();
    assert!(error.text().await.unwrap().contains("first and last name"));
    // The page's style sheet applies under its Content-Security-Policy.
    let colour = c
        .execute(
            "return getComputedStyle(document.getElementById('signature-error')).color",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        colour, "rgb(164, 0, 0)",
        "the inline style sheet is allowed"
    );
    let street = c.find(Locator::Id("addressStreet")).await.unwrap();
    assert_eq!(
        street.prop("value").await.unwrap().as_deref(),
        Some("12 Harbor Way")
    );
    c.find(Locator::Css("input[name=attestation][value=citizen]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.find(Locator::Id("agree"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let sig = c.find(Locator::Id("signature")).await.unwrap();
    sig.clear().await.unwrap();
    sig.send_keys("Ana Diaz").await.unwrap();
    click(&c, SIGN).await;

    // Signed: the browser lands on the partner's page.
    let heading = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("h1"))
        .await
        .unwrap();
    eventually("the browser is back at the ATS", || async {
        c.current_url()
            .await
            .map(|u| u.as_str() == receiver.return_url)
            .unwrap_or(false)
    })
    .await;
    assert!(
        heading
            .text()
            .await
            .unwrap_or_default()
            .contains("Back at the ATS")
            || c.source().await.unwrap().contains("Back at the ATS")
    );
    let status: String = sqlx::query_scalar("SELECT status FROM i9s WHERE employee_id = $1")
        .bind(id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(status, "Signed Sec 1");
    eventually("the partner has the Signed Sec 1 callback", || async {
        receiver.received().iter().any(|(_, b)| {
            serde_json::from_slice::<Value>(b)
                .map(|v| v["i9Status"] == "Signed Sec 1")
                .unwrap_or(false)
        })
    })
    .await;

    // A second use of the link is refused.
    c.goto(&link).await.unwrap();
    let title = c.title().await.unwrap();
    assert!(title.contains("does not work"), "{title}");
    c.close().await.unwrap();
    std::fs::remove_dir_all(&profile).ok();
}

/// Type `value` into the input `id`.
async fn type_into(c: &fantoccini::Client, id: &str, value: &str) {
    c.find(Locator::Id(id))
        .await
        .unwrap()
        .send_keys(value)
        .await
        .unwrap();
}

async fn click(c: &fantoccini::Client, locator: Locator<'_>) {
    c.find(locator).await.unwrap().click().await.unwrap();
}

/// The Section 1 page's signing button.
const SIGN: Locator<'static> = Locator::Css("button[name=action][value=sign]");

/// Choose the state `code` in the list `id`.
async fn choose_state(c: &fantoccini::Client, id: &str, code: &str) {
    c.find(Locator::Id(id))
        .await
        .unwrap()
        .select_by_value(code)
        .await
        .unwrap();
}

/// Type a date into the date input `id` as a person does in an en-US
/// browser (month, day, year), and check the browser read it.
async fn type_date(c: &fantoccini::Client, id: &str, (y, m, d): (i32, u32, u32)) {
    let input = c.find(Locator::Id(id)).await.unwrap();
    assert_eq!(input.attr("type").await.unwrap().as_deref(), Some("date"));
    input.send_keys(&format!("{m:02}{d:02}{y}")).await.unwrap();
    assert_eq!(
        input.prop("value").await.unwrap().as_deref(),
        Some(format!("{y}-{m:02}-{d:02}").as_str()),
        "the date input read what was typed"
    );
}

/// The page's `h1`, once the page has one that says `what`.
async fn heading_is(c: &fantoccini::Client, what: &str) {
    eventually(&format!("the page says {what:?}"), || async {
        match c.find(Locator::Css("h1")).await {
            Ok(h) => h.text().await.map(|t| t == what).unwrap_or(false),
            Err(_) => false,
        }
    })
    .await;
}

#[tokio::test]
async fn an_employee_signs_in_and_signs_section_1_on_their_own_page() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = i9_tests::spawn_stack().await;
    let token = app.token(i9_tests::ADMIN).await;
    let email = "lee.own@mail.example";
    let body = json!({"firstName": "Lee", "lastName": "Park", "locationId": 3, "emailAddress": email,
                      "startDate": "2026-12-01", "createI9": "yes", "createLogin": true,
                      "sendLoginEmail": true});
    let r = app.post_json("/v1/employees", &token, &body).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    eventually("the login email arrives", || async {
        !app.smtp().to(email).is_empty()
    })
    .await;
    eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;
    let mail = app.smtp().to(email).remove(0);
    let set_password = mail
        .text
        .split_whitespace()
        .find(|w| w.contains("/account/set-password/"))
        .unwrap()
        .to_owned();
    let (_driver, c, profile) = browser().await;

    // The password, from the email's link; the page then leads to the sign-in.
    c.goto(&set_password).await.unwrap();
    type_into(&c, "password", "a long pass phrase").await;
    type_into(&c, "confirm", "a long pass phrase").await;
    click(&c, Locator::Css("button[type=submit]")).await;
    heading_is(&c, "Password set").await;
    click(&c, Locator::LinkText("Sign in")).await;
    heading_is(&c, "Sign in").await;

    // A wrong password: said in the alert; then the right one.
    type_into(&c, "login", email).await;
    type_into(&c, "password", "not the pass phrase").await;
    click(&c, Locator::Css("button[type=submit]")).await;
    let alert = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("[role=alert]"))
        .await
        .unwrap();
    assert!(alert.text().await.unwrap().contains("wrong"));
    type_into(&c, "password", "a long pass phrase").await;
    click(&c, Locator::Css("button[type=submit]")).await;
    heading_is(&c, "Your forms").await;

    // The pending Section 1, completed on the page.
    click(
        &c,
        Locator::LinkText("Form I-9, Section 1: Employee information and attestation"),
    )
    .await;
    heading_is(
        &c,
        "Form I-9, Section 1: Employee information and attestation",
    )
    .await;
    for (id, value) in [
        ("addressStreet", "12 Harbor Way"),
        ("addressCity", "Portland"),
        ("addressZip", "97201"),
        ("signature", "Lee Park"),
    ] {
        type_into(&c, id, value).await;
    }
    choose_state(&c, "addressState", "OR").await;
    type_date(&c, "dateOfBirth", (1990, 3, 14)).await;
    click(&c, Locator::Css("input[name=attestation][value=citizen]")).await;
    click(&c, Locator::Id("agree")).await;
    click(&c, SIGN).await;
    heading_is(&c, "Your forms").await;
    let page = c.source().await.unwrap();
    assert!(page.contains("signed on"), "{page}");
    assert!(page.contains("You have no form to complete"), "{page}");
    let status: String = sqlx::query_scalar("SELECT status FROM i9s WHERE employee_id = $1")
        .bind(id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(status, "Signed Sec 1");

    // Signed out, the page asks to sign in again.
    click(&c, Locator::Css("button[type=submit]")).await;
    heading_is(&c, "Sign in").await;
    c.goto(&app.url("/account")).await.unwrap();
    heading_is(&c, "Sign in").await;
    let sessions: i64 = sqlx::query_scalar("SELECT count(*) FROM account_sessions")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(sessions, 0);
    c.close().await.unwrap();
    std::fs::remove_dir_all(&profile).ok();
}

/// Fill the row `n` of Supplement A (its date is today's, filled in).
async fn fill_preparer(c: &fantoccini::Client, n: usize, first: &str, last: &str, state: &str) {
    for (part, value) in [
        ("LastName", last),
        ("FirstName", first),
        ("Address", "400 Main St"),
        ("City", "Salem"),
        ("Zip", "97301"),
        ("Signature", &format!("{first} {last}")),
    ] {
        type_into(c, &format!("preparer{n}{part}"), value).await;
    }
    choose_state(c, &format!("preparer{n}State"), state).await;
    click(c, Locator::Id(&format!("preparer{n}Agree"))).await;
}

/// Fill the employee's part of Section 1 (names prefilled), checking that
/// a preparer or translator assisted.
async fn fill_section1(c: &fantoccini::Client, signature: &str) {
    for (id, value) in [
        ("addressStreet", "12 Harbor Way"),
        ("addressCity", "Portland"),
        ("addressZip", "97201"),
        ("signature", signature),
    ] {
        type_into(c, id, value).await;
    }
    choose_state(c, "addressState", "OR").await;
    type_date(c, "dateOfBirth", (1990, 3, 14)).await;
    click(c, Locator::Css("input[name=attestation][value=citizen]")).await;
    click(c, Locator::Id("agree")).await;
    click(c, Locator::Css("input[name=preparer][value=assisted]")).await;
}

#[tokio::test]
async fn section_1_with_preparers_and_translators_in_english_and_spanish() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let hire = |first: &'static str, language: i64| {
        let (app, admin) = (&app, &admin);
        async move {
            let body = json!({"firstName": first, "lastName": "Diaz", "locationId": 3,
                              "startDate": "2026-12-01", "createI9": "yes",
                              "languagePreference": language});
            let r = app.post_json("/v1/employees", admin, &body).await;
            assert_eq!(r.status(), 201);
            let created: Value = r.json().await.unwrap();
            let id = created["id"].as_i64().unwrap();
            let link = created["i9FormSection1Link"].as_str().unwrap().to_owned();
            eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;
            let i9 = app
                .count("SELECT id FROM i9s WHERE employee_id = $1", id)
                .await;
            (i9, link)
        }
    };
    let (i9_en, link_en) = hire("Ana", 1).await;
    let (i9_es, link_es) = hire("Luis", 1).await;
    let (_driver, c, profile) = browser().await;

    // English, two preparers: the second row comes from the page's button,
    // which keeps what was typed.
    c.goto(&link_en).await.unwrap();
    heading_is(
        &c,
        "Form I-9, Section 1: Employee information and attestation",
    )
    .await;
    fill_preparer(&c, 1, "Rosa", "Mendez", "OR").await;
    click(&c, Locator::Css("button[name=action][value=addPreparer]")).await;
    let second = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Id("preparer2LastName"))
        .await
        .unwrap();
    assert_eq!(second.prop("value").await.unwrap().as_deref(), Some(""));
    let first = c.find(Locator::Id("preparer1LastName")).await.unwrap();
    assert_eq!(
        first.prop("value").await.unwrap().as_deref(),
        Some("Mendez")
    );
    // The attestation boxes are checked anew (as the employee's is).
    click(&c, Locator::Id("preparer1Agree")).await;
    fill_preparer(&c, 2, "Tom", "Ng", "PR").await;
    fill_section1(&c, "Ana Diaz").await;
    click(&c, SIGN).await;
    eventually("signed", || async {
        c.source()
            .await
            .map(|s| s.contains("Section 1 is signed"))
            .unwrap_or(false)
    })
    .await;

    // Spanish (?lang=es), one preparer.
    c.goto(&format!("{link_es}?lang=es")).await.unwrap();
    heading_is(
        &c,
        "Formulario I-9, Sección 1: Información y declaración del empleado",
    )
    .await;
    let legend = c.find(Locator::Css("fieldset legend")).await.unwrap();
    assert!(legend.text().await.unwrap().contains("Declaro"));
    assert!(c.source().await.unwrap().contains("Suplemento A"));
    fill_preparer(&c, 1, "Marta", "Ruiz", "TX").await;
    fill_section1(&c, "Luis Diaz").await;
    click(&c, SIGN).await;
    eventually("firmado", || async {
        c.source()
            .await
            .map(|s| s.contains("La Sección 1 está firmada"))
            .unwrap_or(false)
    })
    .await;

    // The I-9 records show them, in order; the first also in translator*.
    let today = chrono::Utc::now().date_naive().to_string();
    let en = app.get_json(&format!("/v1/i9s/{i9_en}"), &admin).await;
    let names: Vec<(&str, &str, &str)> = en["preparersAndTranslators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["firstName"].as_str().unwrap(),
                p["lastName"].as_str().unwrap(),
                p["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("Rosa", "Mendez", "OR"), ("Tom", "Ng", "PR")]);
    assert_eq!(en["translatorLastName"], "Mendez");
    assert_eq!(en["signedDateTranslator"], json!(today));
    assert_eq!(en["dateOfBirth"], "1990-03-14");
    assert_eq!(en["i9Status"], "Signed Sec 1");
    let es = app.get_json(&format!("/v1/i9s/{i9_es}"), &admin).await;
    assert_eq!(es["preparersAndTranslators"].as_array().unwrap().len(), 1);
    assert_eq!(es["preparersAndTranslators"][0]["signature"], "Marta Ruiz");
    assert_eq!(es["preparersAndTranslators"][0]["signedDate"], json!(today));
    assert_eq!(es["translatorState"], "TX");
    c.close().await.unwrap();
    std::fs::remove_dir_all(&profile).ok();
}
