//! A partner's signing secret rotates with an overlap (docs/partners.md,
//! "Signing secret rotation"): after `i9-admin partners rotate-secret` (or
//! `i9-admin seed --rotate-secrets` with another `signingSecret`) each
//! callback carries two signatures in its `webhook-signature` header, one
//! verifying with the old secret and one with the new; once the overlap ends,
//! one signature, with the new secret only. A rotation ends every earlier
//! overlap, so never more than two sign. A seed keeps the stored secret unless
//! told to rotate, and never brings back a replaced one: an old copy of the
//! file loads, keeping the current secret, and a rotation to a replaced
//! secret is refused. Verified at a real
//! HTTP endpoint with the `standardwebhooks` library.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::process::Command;

use chrono::{DateTime, Utc};
use i9_common::crypto::{DataCipher, Purpose};
use i9_tests::{eventually, fixture_path, spawn_partner_stack, Receiver, TestApp, ATS_BOT};
use serde_json::{json, Value};

/// The example organization's secret for the partner client.
const OLD: &str = "whsec_YWNtZS1ncmVlbmhvdXNlLWRldi1zaWduaW5nLWtleSEh";
/// Secrets later seed files give it (32 bytes of 5, of 6).
const FROM_FILE: &str = "whsec_BQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU=";
const FROM_FILE_2: &str = "whsec_BgYGBgYGBgYGBgYGBgYGBgYGBgYGBgYGBgYGBgYGBgY=";
/// A new partner's (32 bytes of 7).
const NEW_PARTNER: &str = "whsec_BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

const KEPT: &str = "greenhouse-ats: kept its current signing secret (the file's differs; \
                    rotate with --rotate-secrets or i9-admin partners rotate-secret)";
const KEPT_REPLACED: &str = "greenhouse-ats: kept its current signing secret (the file's is one \
                             it replaced, which never becomes current again: write the current \
                             one into the file)";

fn admin(db_url: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_i9-admin"))
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("APP_ENV", "development")
        // The test's partner listens on http://127.0.0.1.
        .env("ALLOW_PRIVATE_CALLBACKS", "true")
        .output()
        .unwrap();
    i9_tests::logs::keep_stderr("i9-admin", &out.stderr);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `partners rotate-secret greenhouse-ats` with `extra` arguments: the new
/// secret (printed on a line of its own) and the whole output.
fn rotate(app: &TestApp, extra: &[&str]) -> (String, String) {
    let mut args = vec!["partners", "rotate-secret", "greenhouse-ats"];
    args.extend_from_slice(extra);
    let (ok, out, err) = admin(&app.db.url, &args);
    assert!(ok, "{err}");
    let secrets: Vec<&str> = out.lines().filter(|l| l.starts_with("whsec_")).collect();
    assert_eq!(secrets.len(), 1, "the new secret, once: {out}");
    let new = secrets[0].to_owned();
    assert!(
        i9_common::seed::decode_signing_secret(&new).is_some_and(|b| b.len() == 32),
        "{new}"
    );
    (new, out)
}

/// Hire a candidate through the partner operation and wait for its creation
/// callback; returns the number of `v1,` signatures in that callback's header,
/// each secret of `valid` verifying it and none of `invalid`.
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

/// How the commands write a date: UTC, to the second.
fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// When the partner's current secret was set, as the commands name it.
async fn set_at(app: &TestApp) -> String {
    let t: DateTime<Utc> = sqlx::query_scalar(
        "SELECT signing_secret_set_at FROM oauth_clients WHERE client_id = 'greenhouse-ats'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    when(t)
}

/// Lines of `out` saying a secret stops signing, now or later.
fn stop_lines(out: &str) -> usize {
    out.lines()
        .filter(|l| l.contains("signs callbacks"))
        .count()
}

#[tokio::test]
async fn a_rotation_keeps_at_most_one_replaced_secret_signing() {
    let (app, receiver) = spawn_partner_stack().await;
    assert_eq!(hire(&app, &receiver, "cand-0", &[OLD], &[]).await, 1);
    assert_eq!(previous_secrets(&app).await, 0);

    // The first rotation: the old secret signs on for the week.
    let t0 = set_at(&app).await;
    let (new1, out) = rotate(&app, &[]);
    assert!(
        out.contains(&format!(
            "the secret set on {t0} also signs callbacks until "
        )),
        "{out}"
    );
    assert_eq!(stop_lines(&out), 1, "{out}");
    assert!(!out.contains(OLD), "only the new secret is printed");
    assert_eq!(previous_secrets(&app).await, 1);
    // Encrypted at rest, old and new.
    for secret in [OLD, new1.as_str()] {
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
    assert_eq!(hire(&app, &receiver, "cand-1", &[OLD, &new1], &[]).await, 2);

    // A second rotation within the overlap: the oldest stops now, the one it
    // replaces signs on. Still two signatures, never three.
    let t1 = set_at(&app).await;
    let (new2, out) = rotate(&app, &[]);
    assert!(
        out.contains(&format!(
            "the secret set on {t1} also signs callbacks until "
        )) && out.contains(&format!("the secret set on {t0} no longer signs callbacks")),
        "{out}"
    );
    assert_eq!(stop_lines(&out), 2, "{out}");
    assert!(!out.contains(OLD) && !out.contains(&new1), "{out}");
    assert_eq!(previous_secrets(&app).await, 1);
    assert_eq!(
        hire(&app, &receiver, "cand-2", &[&new2, &new1], &[OLD]).await,
        2
    );

    // Without an overlap only the new secret signs.
    let t2 = set_at(&app).await;
    let (new3, out) = rotate(&app, &["--overlap", "0s"]);
    assert!(
        out.contains(&format!("the secret set on {t2} no longer signs callbacks"))
            && out.contains(&format!("the secret set on {t1} no longer signs callbacks")),
        "{out}"
    );
    assert_eq!(stop_lines(&out), 2, "{out}");
    assert_eq!(previous_secrets(&app).await, 0);
    // Not stored, yet recorded for good: each of the three rotations so far.
    assert_eq!(retired(&app).await, 3);
    assert_eq!(
        hire(&app, &receiver, "cand-3", &[&new3], &[&new2, &new1, OLD]).await,
        1
    );

    // The operator ends an overlap early (the partner has switched).
    let t3 = set_at(&app).await;
    let (new4, _) = rotate(&app, &[]);
    assert_eq!(previous_secrets(&app).await, 1);
    let (ok, out, err) = admin(&app.db.url, &["partners", "end-overlap", "greenhouse-ats"]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        format!("greenhouse-ats: the secret set on {t3} no longer signs callbacks\n")
    );
    assert_eq!(previous_secrets(&app).await, 0);
    assert_eq!(hire(&app, &receiver, "cand-4", &[&new4], &[&new3]).await, 1);
    let (ok, out, _) = admin(&app.db.url, &["partners", "end-overlap", "greenhouse-ats"]);
    assert!(ok);
    assert_eq!(
        out,
        "greenhouse-ats: no replaced secret was signing callbacks\n"
    );

    // An overlap that ended by itself signs nothing, and the next rotation
    // does not name it again.
    let (new5, _) = rotate(&app, &[]);
    sqlx::query("UPDATE previous_signing_secrets SET valid_until = now() - interval '1 second'")
        .execute(app.pool())
        .await
        .unwrap();
    assert_eq!(hire(&app, &receiver, "cand-5", &[&new5], &[&new4]).await, 1);
    let t5 = set_at(&app).await;
    let (_, out) = rotate(&app, &[]);
    assert!(
        out.contains(&format!(
            "the secret set on {t5} also signs callbacks until "
        )),
        "{out}"
    );
    assert_eq!(stop_lines(&out), 1, "{out}");
    assert_eq!(previous_secrets(&app).await, 1);

    // An unknown client, or one that is not a partner, is named.
    let (ok, _, err) = admin(&app.db.url, &["partners", "rotate-secret", "nobody"]);
    assert!(!ok && err.contains("no client \"nobody\""), "{err}");
    let (ok, _, err) = admin(
        &app.db.url,
        &["partners", "rotate-secret", "acme-hr-portal"],
    );
    assert!(!ok && err.contains("is not a partner"), "{err}");
}

/// The example organization with the partner's `signingSecret` and callback
/// URL replaced, the Administrator role's description set to `description`,
/// and `extra` clients added; written to a temporary file.
fn org_file(receiver: &Receiver, secret: &str, description: &str, extra: &[Value]) -> String {
    let mut org: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_path()).unwrap()).unwrap();
    for client in org["clients"].as_array_mut().unwrap() {
        if client["clientId"] == "greenhouse-ats" {
            client["integration"]["signingSecret"] = json!(secret);
            client["integration"]["hrUrl"] = json!(receiver.url);
        }
    }
    org["clients"]
        .as_array_mut()
        .unwrap()
        .extend_from_slice(extra);
    org["roles"][0]["description"] = json!(description);
    let file = std::env::temp_dir().join(format!("org-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&file, org.to_string()).unwrap();
    file.to_str().unwrap().to_owned()
}

const DESCRIPTION: &str = "Full access to every record";

async fn description(app: &TestApp) -> String {
    sqlx::query_scalar("SELECT description FROM roles WHERE name = 'Administrator'")
        .fetch_one(app.pool())
        .await
        .unwrap()
}

/// How many secrets greenhouse-ats has replaced, as retired_signing_secrets keeps them.
async fn retired(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM retired_signing_secrets r JOIN oauth_clients c
         ON c.id = r.oauth_client_id WHERE c.client_id = 'greenhouse-ats'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap()
}

/// When the partner's one replaced secret stops signing, as the commands write it.
async fn valid_until(app: &TestApp) -> String {
    when(
        sqlx::query_scalar("SELECT valid_until FROM previous_signing_secrets")
            .fetch_one(app.pool())
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn a_seed_keeps_the_stored_secret_unless_told_and_never_brings_back_a_replaced_one() {
    let (app, receiver) = spawn_partner_stack().await;
    let file_a = org_file(&receiver, FROM_FILE, DESCRIPTION, &[]);

    // A file with another secret: the stored one is kept, and said so.
    let (ok, out, err) = admin(&app.db.url, &["seed", &file_a]);
    assert!(ok, "{err}");
    assert!(out.contains(KEPT), "{out}");
    assert!(!out.contains(FROM_FILE) && !out.contains(OLD), "{out}");
    assert_eq!(previous_secrets(&app).await, 0);
    assert_eq!(
        hire(&app, &receiver, "cand-0", &[OLD], &[FROM_FILE]).await,
        1
    );

    // --rotate-secrets makes the file's current, with the overlap.
    let t0 = set_at(&app).await;
    let (ok, out, err) = admin(
        &app.db.url,
        &["seed", &file_a, "--rotate-secrets", "--overlap", "24h"],
    );
    assert!(ok, "{err}");
    let until = valid_until(&app).await;
    assert!(
        out.contains(&format!(
            "greenhouse-ats: new signing secret (the file's)\n  the secret set on {t0} also signs \
             callbacks until {until}, then stops\n"
        )),
        "{out}"
    );
    assert!(!out.contains(KEPT), "{out}");
    assert_eq!(previous_secrets(&app).await, 1);
    assert_eq!(
        hire(&app, &receiver, "cand-1", &[FROM_FILE, OLD], &[]).await,
        2
    );
    // The same file again changes nothing, and says nothing of the secret.
    let (ok, out, err) = admin(&app.db.url, &["seed", &file_a, "--rotate-secrets"]);
    assert!(ok, "{err}");
    assert!(!out.contains("signing secret"), "{out}");
    assert_eq!(previous_secrets(&app).await, 1);

    // Another file secret within the overlap: at most one replaced secret signs.
    let t1 = set_at(&app).await;
    let file_b = org_file(&receiver, FROM_FILE_2, DESCRIPTION, &[]);
    let (ok, out, err) = admin(&app.db.url, &["seed", &file_b, "--rotate-secrets"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!(
            "  the secret set on {t1} also signs callbacks until "
        )) && out.contains(&format!(
            "  the secret set on {t0} no longer signs callbacks\n"
        )),
        "{out}"
    );
    assert_eq!(previous_secrets(&app).await, 1);
    assert_eq!(
        hire(&app, &receiver, "cand-2", &[FROM_FILE_2, FROM_FILE], &[OLD]).await,
        2
    );

    // Back to the secret just replaced, with --rotate-secrets: refused
    // whole, naming the client; nothing else in the file loads.
    let back = org_file(&receiver, FROM_FILE, "changed by a refused seed", &[]);
    let set_before = set_at(&app).await;
    let (ok, out, err) = admin(&app.db.url, &["seed", &back, "--rotate-secrets"]);
    assert!(!ok, "refused: {out}");
    assert!(
        err.contains("clients[2].integration.signingSecret: greenhouse-ats replaced this secret"),
        "{err}"
    );
    assert!(
        !err.contains(FROM_FILE) && !out.contains(FROM_FILE),
        "{err}"
    );
    assert!(out.is_empty(), "nothing loaded: {out}");
    assert_eq!(description(&app).await, DESCRIPTION);
    assert_eq!(set_at(&app).await, set_before);
    assert_eq!(previous_secrets(&app).await, 1);
    assert_eq!(
        hire(&app, &receiver, "cand-3", &[FROM_FILE_2, FROM_FILE], &[OLD]).await,
        2
    );
    // Without it (an old copy of the file seeded again): the current secret
    // is kept and said so in one line, and the rest of the file loads.
    let (ok, out, err) = admin(&app.db.url, &["seed", &back]);
    assert!(ok, "{err}");
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("signing secret"))
            .collect::<Vec<_>>(),
        [KEPT_REPLACED],
        "{out}"
    );
    assert!(
        !out.contains("whsec_") && !err.contains("whsec_"),
        "{out}{err}"
    );
    assert_eq!(description(&app).await, "changed by a refused seed");
    assert_eq!(set_at(&app).await, set_before);
    assert_eq!(previous_secrets(&app).await, 1);
    assert_eq!(retired(&app).await, 2);
    assert_eq!(
        hire(&app, &receiver, "cand-4", &[FROM_FILE_2, FROM_FILE], &[OLD]).await,
        2
    );
    let restore = org_file(&receiver, FROM_FILE_2, DESCRIPTION, &[]);
    let (ok, _, err) = admin(&app.db.url, &["seed", &restore]);
    assert!(ok, "{err}");
    assert_eq!(description(&app).await, DESCRIPTION);

    // The first secret, replaced two rotations ago: its stored copy is gone
    // (at most one replaced secret is kept), yet it is refused all the same,
    // by its SHA-256 in retired_signing_secrets.
    assert_eq!(
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM previous_signing_secrets p JOIN oauth_clients c
             ON c.id = p.oauth_client_id WHERE c.client_id = 'greenhouse-ats'"
        )
        .fetch_one(app.pool())
        .await
        .unwrap(),
        1,
        "only the last replaced secret is stored"
    );
    assert_eq!(retired(&app).await, 2, "both replaced secrets are retired");
    let first = org_file(&receiver, OLD, "changed by a refused seed", &[]);
    let (ok, out, err) = admin(&app.db.url, &["seed", &first, "--rotate-secrets"]);
    assert!(!ok && out.is_empty(), "refused, nothing loaded: {out}");
    assert!(
        err.contains("clients[2].integration.signingSecret: greenhouse-ats replaced this secret")
            && !err.contains(OLD),
        "{err}"
    );
    assert_eq!(description(&app).await, DESCRIPTION);
    // The example organization itself, as docker-compose's `migrate` seeds it
    // at every `up`: it loads, keeping the current secret.
    let (ok, out, err) = admin(&app.db.url, &["seed", fixture_path().to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains(KEPT_REPLACED) && !out.contains(OLD), "{out}");
    assert_eq!(set_at(&app).await, set_before);
    assert_eq!(retired(&app).await, 2);
    let _ = std::fs::remove_file(first);

    // A new partner client gets the file's secret, no flag needed.
    let lever = json!({"clientId": "lever-ats", "clientSecret": "lever-secret-change-me", "scopes": ["read"],
                       "integration": {"clientSystem": "Lever", "hrUrl": receiver.url, "signingSecret": NEW_PARTNER}});
    let file_c = org_file(&receiver, FROM_FILE_2, DESCRIPTION, &[lever]);
    let (ok, out, err) = admin(&app.db.url, &["seed", &file_c]);
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("client ") && l.contains("lever-ats") && l.ends_with("created")),
        "{out}"
    );
    assert!(!out.contains("signing secret"), "{out}");
    let stored: Vec<u8> = sqlx::query_scalar(
        "SELECT signing_secret_ciphertext FROM oauth_clients WHERE client_id = 'lever-ats'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    let cipher = DataCipher::from_config(&i9_common::Config::for_tests(""));
    assert_eq!(
        cipher.decrypt(Purpose::SigningSecret, &stored).unwrap(),
        NEW_PARTNER.as_bytes()
    );
    assert_eq!(previous_secrets(&app).await, 1);

    // --overlap means nothing without --rotate-secrets.
    let (ok, _, err) = admin(&app.db.url, &["seed", &file_b, "--overlap", "1h"]);
    assert!(!ok && err.contains("--rotate-secrets"), "{err}");

    for f in [file_a, file_b, back, file_c, restore] {
        let _ = std::fs::remove_file(f);
    }
}
