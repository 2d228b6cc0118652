//! The set-password page's form is read whole or not at all: a body that is
//! not a readable form of the page is a 400 page saying so, sets nothing and
//! leaves the link unspent; a form that is read gets its per-field errors.

use i9_common::crypto::{new_token, token_hash};
use i9_tests::{spawn_app, TestApp};

/// A live set-password link for `west.hr`.
async fn link(app: &TestApp) -> String {
    let token = new_token("pw_");
    sqlx::query(
        "INSERT INTO password_set_tokens (token_hash, user_id, expires_at)
         SELECT $1, id, now() + interval '1 hour' FROM users WHERE login = 'west.hr'",
    )
    .bind(token_hash(&token))
    .execute(app.pool())
    .await
    .unwrap();
    app.url(&format!("/account/set-password/{token}"))
}

/// west.hr's password hash, the unspent links, and the passwords set.
async fn effects(app: &TestApp) -> (Option<String>, i64, i64) {
    let hash = sqlx::query_scalar("SELECT password_hash FROM users WHERE login = 'west.hr'")
        .fetch_one(app.pool())
        .await
        .unwrap();
    let unspent =
        sqlx::query_scalar("SELECT count(*) FROM password_set_tokens WHERE used_at IS NULL")
            .fetch_one(app.pool())
            .await
            .unwrap();
    let set = sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'password.set'")
        .fetch_one(app.pool())
        .await
        .unwrap();
    (hash, unspent, set)
}

#[tokio::test]
async fn a_form_that_cannot_be_read_is_a_400_page_and_sets_nothing() {
    let app = spawn_app().await;
    let url = link(&app).await;
    let before = effects(&app).await;
    assert_eq!(before.1, 1);
    let form = "application/x-www-form-urlencoded";
    let good = "password=a-long-new-passw0rd&confirm=a-long-new-passw0rd";
    let cases: Vec<(&str, Option<&str>, Vec<u8>)> = vec![
        (
            "a password not UTF-8",
            Some(form),
            b"password=a-long-new-passw\xf6rd&confirm=a-long-new-passw\xf6rd".to_vec(),
        ),
        (
            "a password not UTF-8, percent-encoded",
            Some(form),
            b"password=a-long-new-passw%F6rd&confirm=a-long-new-passw%F6rd".to_vec(),
        ),
        (
            "the password twice",
            Some(form),
            format!("{good}&password=another-long-passw0rd").into_bytes(),
        ),
        (
            "a field the page does not have",
            Some(form),
            format!("{good}&login=admin").into_bytes(),
        ),
        (
            "JSON",
            Some("application/json"),
            br#"{"password":"a-long-new-passw0rd","confirm":"a-long-new-passw0rd"}"#.to_vec(),
        ),
        ("no content type", None, good.as_bytes().to_vec()),
    ];
    for (what, content_type, body) in cases {
        let mut req = app.http.post(&url).body(body);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 400, "{what}");
        let html = r.text().await.unwrap();
        assert!(html.contains("<html lang=\"en\""), "{what}: {html}");
        assert!(
            html.contains("The form could not be read") && html.contains("your link still works"),
            "{what}: {html}"
        );
        assert!(!html.contains("<form"), "{what}: {html}");
    }
    assert_eq!(effects(&app).await, before, "nothing set, the link unspent");

    // Fields missing or holding NUL are read, and named beside their fields.
    let r = app
        .http
        .post(&url)
        .header("content-type", form)
        .body("password=a-long-new-passw%00rd")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(
        html.contains("<p class=\"error\" id=\"password-error\">This holds characters that cannot be used; type it again.</p>"),
        "{html}"
    );
    let r = app
        .http
        .post(&url)
        .form(&[("password", "a-long-new-passw0rd")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(
        html.contains("aria-describedby=\"confirm-error\"")
            && html.contains("The two passwords differ."),
        "{html}"
    );
    assert_eq!(effects(&app).await, before);

    let r = app
        .http
        .post(&url)
        .body(good)
        .header("content-type", form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let after = effects(&app).await;
    assert_ne!(after.0, before.0, "the password is set");
    assert_eq!((after.1, after.2), (0, 1));
}
