//! A partner's signing secret rotates with an overlap (docs/partners.md):
//! after `i9-admin partners rotate-secret` (or `i9-admin seed` with another
//! `signingSecret`) each callback carries two signatures in its
//! `webhook-signature` header, one verifying with the old secret and one with
//! the new; once the overlap ends, one signature, with the new secret only.
//! Verified at a real HTTP endpoint with the `standardwebhooks` library.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::process::Command;

use i9_tests::{eventually, fixture_path, spawn_partner_stack, Receiver, TestApp, ATS_BOT};
use serde_json::{json, Value};

/// The example organization's secret for the partner client.
const OLD: &str = "whsec_YWNtZS1ncmVlbmhvdXNlLWRldi1zaWduaW5nLWtleSEh";
/// The one a later seed file gives it (32 bytes of 5).
const FROM_FILE: &str = "whsec_BQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU=";

fn admin(db_url: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_i9-admin"))
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("APP_ENV", "development")
        // The test's partner listens on http://127.0.0.1.
        .env("ALLOW_PRIVATE_CALLBACKS", "true")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Hire a candidate through the partner operation and wait for its creation
/// callback; returns the signatures of that callback's header, each checked
/// against `valid` (must verify) and `invalid` (must not).
async fn hire(
    app: &TestApp,
    receiver: &Receiver,
    candidate: &str,
    valid: &[&str],
    invalid: &[&str],
) -> usize {
    let token = app
        .sign_in_with(("greenhouse-ats", "ats-secret-change-me"), ATS_BOT, None)
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = receiver.received().len();
    let body = json!({"integrationCandidateId": candidate, "onboardingType": "on-site", "firstName": "Ana",
                      "lastName": "Diaz", "emailAddress": "ana@mail.example", "startDate": "2026-12-01", "locationId": 3});
    assert_eq!(
        app.post_json("/v1/partners/i9s/section1", &token, &body)
            .await
            .status(),
        201
    );
    eventually("the creation callback", || async {
        receiver.received().len() == before + 1
    })
    .await;
    let (headers, body) = receiver.received().pop().unwrap();
    let payload: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(payload["integrationCandidateId"], candidate);
    for secret in valid {
        standardwebhooks::Webhook::new(secret)
            .unwrap()
            .verify(&body, &headers)
            .unwrap_or_else(|e| panic!("verifies with {secret}: {e}"));
    }
    for secret in invalid {
        assert!(
            standardwebhooks::Webhook::new(secret)
                .unwrap()
                .verify(&body, &headers)
                .is_err(),
            "{secret} no longer signs"
        );
    }
    let header = headers["webhook-signature"].to_str().unwrap();
    assert!(header.split(' ').all(|s| s.starts_with("v1,")), "{header}");
    header.split(' ').count()
}

async fn previous_secrets(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM previous_signing_secrets")
        .fetch_one(app.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn callbacks_carry_both_signatures_during_the_overlap_and_one_after() {
    let (app, receiver) = spawn_partner_stack().await;
    assert_eq!(hire(&app, &receiver, "cand-0", &[OLD], &[]).await, 1);

    // rotate-secret: a new secret printed once; the old one signs on for a week.
    let (ok, out, err) = admin(
        &app.db.url,
        &["partners", "rotate-secret", "greenhouse-ats"],
    );
    assert!(ok, "{err}");
    let new = out
        .lines()
        .find(|l| l.starts_with("whsec_"))
        .unwrap_or_else(|| panic!("the new secret is printed: {out}"))
        .to_owned();
    assert!(
        i9_common::seed::decode_signing_secret(&new).is_some_and(|b| b.len() == 32),
        "{new}"
    );
    assert!(
        out.contains("the previous one also signs callbacks until"),
        "{out}"
    );
    assert_eq!(previous_secrets(&app).await, 1);
    // Encrypted at rest, old and new.
    for secret in [OLD, new.as_str()] {
        let in_clear: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM previous_signing_secrets WHERE position($1 IN secret_ciphertext) > 0)
                  + (SELECT count(*) FROM oauth_clients WHERE position($1 IN signing_secret_ciphertext) > 0)",
        )
        .bind(secret.as_bytes())
        .fetch_one(app.pool())
        .await
        .unwrap();
        assert_eq!(in_clear, 0);
    }

    assert_eq!(hire(&app, &receiver, "cand-1", &[OLD, &new], &[]).await, 2);

    // The operator ends the overlap early (the partner has switched).
    let (ok, out, err) = admin(&app.db.url, &["partners", "end-overlap", "greenhouse-ats"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("1 previous secret(s) of greenhouse-ats no longer sign"),
        "{out}"
    );
    assert_eq!(hire(&app, &receiver, "cand-2", &[&new], &[OLD]).await, 1);

    // A seed file with another secret starts the same overlap.
    let mut org: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_path()).unwrap()).unwrap();
    for client in org["clients"].as_array_mut().unwrap() {
        if client["clientId"] == "greenhouse-ats" {
            client["integration"]["signingSecret"] = json!(FROM_FILE);
            client["integration"]["hrUrl"] = json!(receiver.url);
        }
    }
    let file = std::env::temp_dir().join(format!("org-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&file, org.to_string()).unwrap();
    let file = file.to_str().unwrap();
    let (ok, out, err) = admin(&app.db.url, &["seed", file, "--overlap", "24h"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(
            "greenhouse-ats: new signing secret; the previous one also signs callbacks until"
        ),
        "{out}"
    );
    assert_eq!(
        hire(&app, &receiver, "cand-3", &[FROM_FILE, &new], &[OLD]).await,
        2
    );
    // Seeding the same file again changes nothing.
    let (ok, out, err) = admin(&app.db.url, &["seed", file]);
    assert!(ok, "{err}");
    assert!(!out.contains("new signing secret"), "{out}");
    assert_eq!(previous_secrets(&app).await, 1);

    // The overlap ends by itself: the old secret signs no more.
    sqlx::query("UPDATE previous_signing_secrets SET valid_until = now() - interval '1 second'")
        .execute(app.pool())
        .await
        .unwrap();
    assert_eq!(
        hire(&app, &receiver, "cand-4", &[FROM_FILE], &[&new, OLD]).await,
        1
    );
    let _ = std::fs::remove_file(file);

    // Without an overlap, the old secret stops at once; an unknown client is named.
    let (ok, out, _) = admin(
        &app.db.url,
        &[
            "partners",
            "rotate-secret",
            "greenhouse-ats",
            "--overlap",
            "0s",
        ],
    );
    assert!(
        ok && out.contains("the previous one no longer signs callbacks"),
        "{out}"
    );
    let (ok, _, err) = admin(&app.db.url, &["partners", "rotate-secret", "nobody"]);
    assert!(!ok && err.contains("no client \"nobody\""), "{err}");
    let (ok, _, err) = admin(
        &app.db.url,
        &["partners", "rotate-secret", "acme-hr-portal"],
    );
    assert!(!ok && err.contains("is not a partner"), "{err}");
}
