//! The employee pages in a real browser: headless Chromium (Debian's
//! `chromium` and `chromedriver`, installed by scripts/test.sh), driven over
//! WebDriver.
//! - The Section 1 link: fill the form, see an error beside its field, sign,
//!   land on the partner's employeeReturnUrl; the I-9 is Signed Sec 1, the
//!   partner got the callback, and the link does not work twice.
//! - The employee's own page: set the password from the login email, sign
//!   in, open the pending Section 1, sign it, see it signed, sign out.

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
        ("addressState", "OR"),
        ("addressZip", "97201"),
        ("dateOfBirth", "1990-03-14"),
        ("signature", "Ana Dias"),
    ] {
        c.find(Locator::Id(id))
            .await
            .unwrap()
            .send_keys(value)
            .await
            .unwrap();
    }
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
    c.find(Locator::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

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
    c.find(Locator::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

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
        ("addressState", "OR"),
        ("addressZip", "97201"),
        ("dateOfBirth", "1990-03-14"),
        ("signature", "Lee Park"),
    ] {
        type_into(&c, id, value).await;
    }
    click(&c, Locator::Css("input[name=attestation][value=citizen]")).await;
    click(&c, Locator::Id("agree")).await;
    click(&c, Locator::Css("button[type=submit]")).await;
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
