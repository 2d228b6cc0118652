//! `i9-admin callbacks failed` and `i9-admin callbacks redeliver`, run as the
//! operator runs them, against a callback that ran out of attempts.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::process::Command;

use i9_tests::{eventually, spawn_partner_stack, ATS_BOT};
use serde_json::json;

fn admin(db_url: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_i9-admin"))
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("APP_ENV", "development")
        .output()
        .unwrap();
    i9_tests::logs::keep_stderr("i9-admin", &out.stderr);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn an_operator_lists_and_redelivers_a_dead_lettered_callback() {
    let (app, receiver) = spawn_partner_stack().await;
    receiver.fail_next(1_000);
    let token = app
        .sign_in_with(("greenhouse-ats", "ats-secret-change-me"), ATS_BOT, None)
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = json!({"integrationCandidateId": "cand-cli", "onboardingType": "on-site", "firstName": "Ana",
                      "lastName": "Diaz", "emailAddress": "ana@mail.example", "startDate": "2026-12-01", "locationId": 3});
    assert_eq!(
        app.post_json("/v1/partners/i9s/section1", &token, &body)
            .await
            .status(),
        201
    );
    eventually("the callback is dead-lettered", || async {
        sqlx::query_scalar::<_, bool>("SELECT dead_at IS NOT NULL FROM partner_events")
            .fetch_optional(app.pool())
            .await
            .unwrap()
            .unwrap_or(false)
    })
    .await;
    let event: String = sqlx::query_scalar("SELECT id::TEXT FROM partner_events")
        .fetch_one(app.pool())
        .await
        .unwrap();

    let (ok, out, err) = admin(&app.db.url, &["callbacks", "failed"]);
    assert!(ok, "{err}");
    let row = out
        .lines()
        .find(|l| l.contains(&event))
        .unwrap_or_else(|| panic!("the event is listed: {out}"));
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(fields[4], "3", "three attempts: {out}");
    assert!(
        row.ends_with("HTTP 503") && out.starts_with("EVENT"),
        "{out}"
    );

    let (ok, _, err) = admin(&app.db.url, &["callbacks", "redeliver"]);
    assert!(
        !ok && err.contains("--all"),
        "an id or --all is needed: {err}"
    );

    receiver.fail_next(0);
    let (ok, out, err) = admin(&app.db.url, &["callbacks", "redeliver", &event]);
    assert!(ok, "{err}");
    assert!(out.contains("1 callback(s) queued again"), "{out}");
    eventually("the partner receives the callback", || async {
        receiver.received().len() == 1
    })
    .await;
    let (ok, out, _) = admin(&app.db.url, &["callbacks", "failed"]);
    assert!(ok && out.contains("no failed callbacks"), "{out}");
}
