//! The employee's own page (docs/api.md, "The employee's own page"): the
//! login email says where to sign in; the employee signs in with the
//! password they set, sees their pending Section 1, completes it there, and
//! signs out. Only their own I-9s; not for HR users; throttled like the
//! token endpoint; sessions end.

use std::time::Duration;

use i9_common::config::ThrottleLimit;
use i9_tests::{eventually, spawn, spawn_stack, Stack, TestApp, ADMIN, PORTAL, WEST_HR};
use serde_json::{json, Value};

const PASSWORD: &str = "a long pass phrase";

/// An employee hired by HR with an I-9 and a sign-in whose password is set
/// through the emailed link: its id and its I-9's id.
async fn employee_with_sign_in(app: &TestApp, email: &str, language: i64) -> (i64, i64) {
    let token = app.token(ADMIN).await;
    let body = json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3, "emailAddress": email,
                      "startDate": "2026-12-01", "languagePreference": language, "createI9": "yes",
                      "createLogin": true, "sendLoginEmail": true});
    let r = app.post_json("/v1/employees", &token, &body).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    eventually("the login email arrives", || async {
        !app.smtp().to(email).is_empty()
    })
    .await;
    let mail = app.smtp().to(email).remove(0);
    let set_password = mail
        .text
        .split_whitespace()
        .find(|w| w.contains("/account/set-password/"))
        .unwrap()
        .to_owned();
    // The page speaks the employee's language, refusals included.
    let lang = if language == 2 { "es" } else { "en" };
    let page = app.http.get(&set_password).send().await.unwrap();
    assert!(page
        .text()
        .await
        .unwrap()
        .contains(&format!(r#"<html lang="{lang}">"#)));
    let weak = app
        .http
        .post(&set_password)
        .form(&[("password", "password1234"), ("confirm", "password1234")])
        .send()
        .await
        .unwrap();
    assert_eq!(weak.status(), 422);
    let refusal = if language == 2 {
        "demasiado fácil de adivinar"
    } else {
        "too easy to guess"
    };
    assert!(weak.text().await.unwrap().contains(refusal));
    let r = app
        .http
        .post(&set_password)
        .form(&[("password", PASSWORD), ("confirm", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains(&format!(r#"href="/account/sign-in?lang={lang}""#)));
    eventually("the I-9 exists", || async { app.i9_count(id).await == 1 }).await;
    // One email: the login email (an on-site I-9 sends none of its own).
    assert_eq!(app.smtp().to(email).len(), 1);
    let i9: i64 = sqlx::query_scalar("SELECT id FROM i9s WHERE employee_id = $1")
        .bind(id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    (id, i9)
}

/// Sign in on the page: the response.
async fn sign_in(app: &TestApp, login: &str, password: &str) -> reqwest::Response {
    app.http
        .post(app.url("/account/sign-in"))
        .form(&[("login", login), ("password", password)])
        .send()
        .await
        .unwrap()
}

/// The session cookie a successful sign-in set (`name=value`), after
/// checking its attributes.
fn session_cookie(r: &reqwest::Response) -> String {
    let set = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/account"] {
        assert!(set.contains(attribute), "{attribute} in {set}");
    }
    set.split(';').next().unwrap().to_owned()
}

async fn get(app: &TestApp, path: &str, cookie: &str) -> reqwest::Response {
    app.http
        .get(app.url(path))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
}

async fn post(app: &TestApp, path: &str, cookie: &str, form: &[(&str, &str)]) -> reqwest::Response {
    app.http
        .post(app.url(path))
        .header("cookie", cookie)
        .form(form)
        .send()
        .await
        .unwrap()
}

fn location(r: &reqwest::Response) -> String {
    r.headers()["location"].to_str().unwrap().to_owned()
}

/// The value of the hidden `csrf` field of a page.
fn csrf(html: &str) -> String {
    let at = html.find(r#"name="csrf" value=""#).expect("a csrf field") + 19;
    html[at..].split('"').next().unwrap().to_owned()
}

fn section1_form(csrf: &str) -> Vec<(&'static str, String)> {
    [
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
    .into_iter()
    .map(|(k, v)| (k, v.to_owned()))
    .chain([("csrf", csrf.to_owned())])
    .collect()
}

async fn status_of(app: &TestApp, i9: i64) -> String {
    sqlx::query_scalar("SELECT status FROM i9s WHERE id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap()
}

async fn sessions(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM account_sessions")
        .fetch_one(app.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn an_employee_signs_in_completes_section_1_and_signs_out() {
    let app = spawn_stack().await;
    let email = "ana.own@mail.example";
    let (_, i9) = employee_with_sign_in(&app, email, 2).await;
    let mail = app.smtp().to(email).remove(0);
    let sign_in_url = format!("{}/account/sign-in?lang=es", app.address);
    assert!(mail.text.contains(&sign_in_url), "{}", mail.text);
    assert!(mail.html.contains(&sign_in_url), "{}", mail.html);

    let page = app.http.get(&sign_in_url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<html lang="es">"#) && html.contains(r#"<label for="password">"#));

    let wrong = sign_in(&app, email, "not the pass phrase").await;
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get("set-cookie").is_none());
    assert!(wrong.text().await.unwrap().contains("role=\"alert\""));
    assert_eq!(sessions(&app).await, 0);

    // Any letter case of the login, as the token endpoint takes it.
    let ok = sign_in(&app, &email.to_uppercase(), PASSWORD).await;
    assert_eq!(ok.status(), 303);
    assert_eq!(location(&ok), "/account", "in the employee's own language");
    let cookie = session_cookie(&ok);
    assert_eq!(sessions(&app).await, 1);
    let stored: Vec<u8> = sqlx::query_scalar("SELECT token_hash FROM account_sessions")
        .fetch_one(app.pool())
        .await
        .unwrap();
    let secret = cookie.split_once('=').unwrap().1;
    assert_ne!(
        stored,
        secret.as_bytes(),
        "only the secret's hash is stored"
    );

    // The employee's language by default.
    let home = get(&app, "/account", &cookie).await;
    assert_eq!(home.status(), 200);
    assert_eq!(home.headers()["cache-control"], "no-store");
    let html = home.text().await.unwrap();
    assert!(html.contains(r#"<html lang="es">"#), "{html}");
    let href = format!("/account/i9s/{i9}/section1?lang=es");
    assert_eq!(
        html.matches(&href).count(),
        1,
        "one form to complete: {html}"
    );
    assert!(html.contains("2026-12-01"), "its due date: {html}");

    let form = get(&app, &format!("/account/i9s/{i9}/section1"), &cookie).await;
    assert_eq!(form.status(), 200);
    let html = form.text().await.unwrap();
    assert!(html.contains("Sección 1"), "{html}");
    let token = csrf(&html);

    // A form without the session's token (posted from another site) signs nothing.
    let mut forged = section1_form("forged");
    let path = format!("/account/i9s/{i9}/section1");
    let r = post(
        &app,
        &path,
        &cookie,
        &forged
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(status_of(&app, i9).await, "Section 1 Incomplete");
    // Nor does the session's token without the session.
    forged = section1_form(&token);
    let fields: Vec<(&str, &str)> = forged.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = post(&app, &path, "i9_account=i9as_guessed", &fields).await;
    assert_eq!(r.status(), 303);
    assert!(location(&r).starts_with("/account/sign-in"));
    assert_eq!(status_of(&app, i9).await, "Section 1 Incomplete");

    let signed = post(&app, &path, &cookie, &fields).await;
    assert_eq!(signed.status(), 303);
    assert_eq!(location(&signed), "/account?lang=es");
    assert_eq!(status_of(&app, i9).await, "Signed Sec 1");
    // Signed by the employee's own sign-in, recorded once.
    let actors: Vec<Option<i64>> = sqlx::query_scalar(
        "SELECT user_id FROM audit_log WHERE action = 'i9.section1' AND resource_id = $1",
    )
    .bind(i9.to_string())
    .fetch_all(app.pool())
    .await
    .unwrap();
    let user: i64 = app
        .id_of("SELECT id FROM users WHERE login = $1", email)
        .await;
    assert_eq!(actors, vec![Some(user)]);
    // Signed twice: the second is the page of a form that does not work.
    let again = post(&app, &path, &cookie, &fields).await;
    assert_eq!(again.status(), 404);

    let html = get(&app, "/account", &cookie).await.text().await.unwrap();
    assert!(!html.contains(&href), "nothing left to complete: {html}");
    assert!(html.contains("firmada el"), "{html}");

    let out = post(&app, "/account/sign-out", &cookie, &[("csrf", &token)]).await;
    assert_eq!(out.status(), 303);
    assert!(out.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    assert_eq!(sessions(&app).await, 0);
    let after = get(&app, "/account", &cookie).await;
    assert_eq!(after.status(), 303, "the old cookie no longer works");
    assert!(location(&after).starts_with("/account/sign-in"));
}

#[tokio::test]
async fn an_employee_reaches_only_their_own_i9s() {
    let app = spawn_stack().await;
    let (_, own) = employee_with_sign_in(&app, "own.one@mail.example", 1).await;
    let (_, other) = employee_with_sign_in(&app, "other.one@mail.example", 1).await;
    let cookie = session_cookie(&sign_in(&app, "own.one@mail.example", PASSWORD).await);
    let html = get(&app, "/account", &cookie).await.text().await.unwrap();
    assert!(html.contains(&format!("/account/i9s/{own}/section1")));
    assert!(!html.contains(&format!("/account/i9s/{other}/")));
    let path = format!("/account/i9s/{other}/section1");
    let not_theirs = get(&app, &path, &cookie).await;
    assert_eq!(not_theirs.status(), 404);
    assert!(not_theirs
        .text()
        .await
        .unwrap()
        .contains("This form is not waiting for you"));
    let own_form = get(&app, &format!("/account/i9s/{own}/section1"), &cookie)
        .await
        .text()
        .await
        .unwrap();
    let fields = section1_form(&csrf(&own_form));
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(post(&app, &path, &cookie, &fields).await.status(), 404);
    assert_eq!(status_of(&app, other).await, "Section 1 Incomplete");
    for odd in [
        "/account/i9s/x/section1",
        "/account/i9s/99999999999999999999/section1",
    ] {
        assert_eq!(get(&app, odd, &cookie).await.status(), 404, "{odd}");
    }
}

#[tokio::test]
async fn an_hr_user_gets_no_session_and_a_retired_or_idle_session_ends() {
    let app = spawn_stack().await;
    let hr = sign_in(&app, WEST_HR.0, WEST_HR.1).await;
    assert_eq!(hr.status(), 403);
    assert!(hr.headers().get("set-cookie").is_none());
    assert_eq!(sessions(&app).await, 0);

    employee_with_sign_in(&app, "idle.one@mail.example", 1).await;
    let cookie = session_cookie(&sign_in(&app, "idle.one@mail.example", PASSWORD).await);
    assert_eq!(get(&app, "/account", &cookie).await.status(), 200);
    sqlx::query("UPDATE account_sessions SET last_seen_at = now() - interval '31 minutes'")
        .execute(app.pool())
        .await
        .unwrap();
    assert_eq!(get(&app, "/account", &cookie).await.status(), 303, "idle");

    // A new password (a new link from sendLoginEmail) ends the sessions.
    let cookie = session_cookie(&sign_in(&app, "idle.one@mail.example", PASSWORD).await);
    assert_eq!(get(&app, "/account", &cookie).await.status(), 200);
    let token = i9_common::crypto::new_token("pw_");
    sqlx::query(
        "INSERT INTO password_set_tokens (token_hash, user_id, expires_at)
         SELECT $1, id, now() + interval '1 hour' FROM users WHERE login = 'idle.one@mail.example'",
    )
    .bind(i9_common::crypto::token_hash(&token))
    .execute(app.pool())
    .await
    .unwrap();
    let reset = app
        .http
        .post(app.url(&format!("/account/set-password/{token}")))
        .form(&[
            ("password", "another long phrase"),
            ("confirm", "another long phrase"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 200);
    assert_eq!(get(&app, "/account", &cookie).await.status(), 303, "reset");
    assert_eq!(sessions(&app).await, 0);
    let cookie =
        session_cookie(&sign_in(&app, "idle.one@mail.example", "another long phrase").await);
    assert_eq!(get(&app, "/account", &cookie).await.status(), 200);
    sqlx::query("UPDATE users SET retired = true WHERE login = 'idle.one@mail.example'")
        .execute(app.pool())
        .await
        .unwrap();
    assert_eq!(
        get(&app, "/account", &cookie).await.status(),
        303,
        "retired"
    );
    let retired = sign_in(&app, "idle.one@mail.example", "another long phrase").await;
    assert_eq!(retired.status(), 403);
    assert!(retired.headers().get("set-cookie").is_none());
}

#[tokio::test]
async fn the_sign_in_page_counts_failures_with_the_token_endpoint() {
    let app = spawn(Stack::default(), |c| {
        c.sign_in_username = ThrottleLimit {
            free_failures: 1_000,
            forget: Duration::from_secs(3600),
        };
    })
    .await;
    let login = "west.hr";
    for _ in 0..3 {
        assert_eq!(sign_in(&app, login, "wrong-password-1").await.status(), 401);
    }
    let counted: Vec<(String, i64)> =
        sqlx::query_as("SELECT kind, failures FROM throttle ORDER BY kind")
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(
        counted,
        vec![("address".into(), 3), ("username".into(), 3)],
        "each failure counted once per key, as the token endpoint counts them"
    );
    // A delayed username: the page answers at once, the right password
    // included, and so does the token endpoint (one count for both doors).
    sqlx::query(
        "UPDATE throttle SET blocked_until = now() + interval '1 hour' WHERE kind = 'username'",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let r = sign_in(&app, "WEST.HR", WEST_HR.1).await;
    assert_eq!(r.status(), 429);
    assert!(
        r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    assert!(r.text().await.unwrap().contains("Too many failed sign-ins"));
    let token = app
        .token_request(&[
            ("grant_type", "password"),
            ("client_id", PORTAL.0),
            ("client_secret", PORTAL.1),
            ("username", login),
            ("password", WEST_HR.1),
        ])
        .await;
    assert_eq!(token.status(), 429);
    assert_eq!(sessions(&app).await, 0);
}
