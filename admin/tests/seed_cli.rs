//! `i9-admin seed` refuses a partner callback URL that the deployment would
//! never post to (finding 12 of issue 8): http, or a private address, while
//! `ALLOW_PRIVATE_CALLBACKS` is off. The error names the entry, the field
//! and the setting, and nothing is loaded. Outside `APP_ENV=development` it
//! also refuses the example organization's published passwords and secrets,
//! and passwords the set-password page would refuse (docs/operations.md,
//! "Production checklist").

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::process::Command;

use i9_tests::{fixture_path, TestDb};

fn seed(db_url: &str, file: &std::path::Path, allow_private: Option<&str>) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_i9-admin"));
    cmd.arg("seed")
        .arg(file)
        .env("DATABASE_URL", db_url)
        .env("APP_ENV", "development")
        .env_remove("DATA_ENCRYPTION_KEY")
        .env_remove("SSN_HASH_KEY");
    match allow_private {
        Some(v) => cmd.env("ALLOW_PRIVATE_CALLBACKS", v),
        None => cmd.env_remove("ALLOW_PRIVATE_CALLBACKS"),
    };
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The example organization with the partner's callback URL replaced.
fn org_with_hr_url(url: &str) -> std::path::PathBuf {
    org_with(url, |_| {})
}

/// The example organization with the partner's callback URL replaced, and
/// then whatever `change` does.
fn org_with(url: &str, change: impl FnOnce(&mut serde_json::Value)) -> std::path::PathBuf {
    let text = std::fs::read_to_string(fixture_path()).unwrap();
    let mut org: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut replaced = 0;
    for client in org["clients"].as_array_mut().unwrap() {
        if let Some(int) = client.get_mut("integration") {
            int["hrUrl"] = url.into();
            replaced += 1;
        }
    }
    assert_eq!(replaced, 1, "the example organization has one partner");
    change(&mut org);
    let path = std::env::temp_dir().join(format!("i9-org-{}.json", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, org.to_string()).unwrap();
    path
}

async fn clients(db: &TestDb) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM oauth_clients")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_partner_callback_url_the_worker_would_refuse_is_refused_at_seed() {
    let db = TestDb::new().await;
    let http = org_with_hr_url("http://ats.example/hooks/i9");
    let (ok, err) = seed(&db.url, &http, None);
    assert!(!ok, "refused");
    assert!(
        err.contains("clients[2].integration.hrUrl: must be an https URL")
            && err.contains("ALLOW_PRIVATE_CALLBACKS=true"),
        "{err}"
    );
    let private = org_with_hr_url("https://169.254.169.254/latest/meta-data");
    let (ok, err) = seed(&db.url, &private, Some("false"));
    assert!(!ok, "refused");
    assert!(
        err.contains("clients[2].integration.hrUrl: must not be a link-local (cloud metadata services) (169.254.0.0/16) address"),
        "{err}"
    );
    assert_eq!(clients(&db).await, 0, "nothing was loaded");

    // Allowed for local runs; and https to a public name always.
    let (ok, err) = seed(&db.url, &http, Some("true"));
    assert!(ok, "{err}");
    let loaded = clients(&db).await;
    assert!(loaded > 0);
    let public = org_with_hr_url("https://ats.example/hooks/i9");
    let (ok, err) = seed(&db.url, &public, None);
    assert!(ok, "{err}");
    assert_eq!(clients(&db).await, loaded, "the same clients, updated");
    let url: String = sqlx::query_scalar(
        "SELECT integration_hr_url FROM oauth_clients WHERE integration_hr_url IS NOT NULL",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(url, "https://ats.example/hooks/i9");
    for f in [http, private, public] {
        let _ = std::fs::remove_file(f);
    }
}

/// Valid keys of 32 bytes, not the development ones: what a production run needs.
const DATA_KEY: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
const HASH_KEY: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=";

/// `i9-admin seed FILE` with `APP_ENV` set to `app_env` (None: unset), and
/// keys of its own outside development; (success, stdout, stderr).
fn seed_in(app_env: Option<&str>, db_url: &str, file: &std::path::Path) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_i9-admin"));
    cmd.arg("seed")
        .arg(file)
        .env("DATABASE_URL", db_url)
        .env_remove("ALLOW_PRIVATE_CALLBACKS");
    for name in [
        "DATA_ENCRYPTION_KEYS",
        "SSN_HASH_KEYS",
        "DATA_ENCRYPTION_KEY_FILE",
        "SSN_HASH_KEY_FILE",
    ] {
        cmd.env_remove(name);
    }
    match app_env {
        Some(v) if i9_common::keys::is_development(Some(v)) => cmd
            .env("APP_ENV", v)
            .env_remove("DATA_ENCRYPTION_KEY")
            .env_remove("SSN_HASH_KEY"),
        _ => {
            match app_env {
                Some(v) => cmd.env("APP_ENV", v),
                None => cmd.env_remove("APP_ENV"),
            };
            cmd.env("DATA_ENCRYPTION_KEY", DATA_KEY)
                .env("SSN_HASH_KEY", HASH_KEY)
        }
    };
    let out = cmd.output().unwrap();
    i9_tests::logs::keep_stderr("i9-admin", &out.stderr);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn count(db: &TestDb, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

/// Every password and secret of the example organization.
fn published() -> Vec<String> {
    let org = i9_tests::fixture();
    org.users
        .iter()
        .map(|u| u.password.clone())
        .chain(org.clients.iter().flat_map(|c| {
            std::iter::once(c.client_secret.clone())
                .chain(c.integration.as_ref().map(|i| i.signing_secret.clone()))
        }))
        .collect()
}

/// Lines of `err` that name a problem (the first line is the heading).
fn problems(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.starts_with("  ")).collect()
}

const PUBLISHED: &str = "published in fixtures/org.json, the example organization: choose another";
const SHORT: &str = "The password needs at least 12 characters.";
const GUESSABLE: &str = "This password is too easy to guess.";

#[tokio::test]
async fn outside_development_published_credentials_and_weak_passwords_are_refused() {
    let db = TestDb::new().await;
    let nothing_loaded = || async {
        for table in ["users", "oauth_clients", "employees", "key_ring"] {
            assert_eq!(count(&db, table).await, 0, "{table}: nothing loaded");
        }
    };
    let published_values = published();
    assert_eq!(published_values.len(), 4 + 3 + 1);

    // The example organization: every published value named by its entry.
    let example = org_with_hr_url("https://ats.example/hooks/i9");
    for app_env in [None, Some("production"), Some("dev")] {
        let (ok, out, err) = seed_in(app_env, &db.url, &example);
        assert!(!ok, "{app_env:?}: refused: {out}");
        let lines = problems(&err);
        for needle in [
            "users[0].password (user \"admin\")",
            "users[1].password (user \"west.hr\")",
            "users[2].password (user \"boston.viewer\")",
            "users[3].password (user \"ats.bot\")",
            "clients[0].clientSecret (client \"acme-hr-portal\")",
            "clients[1].clientSecret (client \"acme-reporting\")",
            "clients[2].clientSecret (client \"greenhouse-ats\")",
            "clients[2].integration.signingSecret (client \"greenhouse-ats\")",
        ] {
            assert!(
                lines
                    .iter()
                    .any(|l| l.contains(needle) && l.ends_with(PUBLISHED)),
                "{needle} in {err}"
            );
        }
        assert_eq!(lines.len(), 8, "one line per entry: {err}");
        for value in &published_values {
            assert!(
                !err.contains(value.as_str()) && !out.contains(value.as_str()),
                "no value printed"
            );
        }
        nothing_loaded().await;
    }

    // Credentials of one's own; two passwords the set-password page refuses.
    let own = |passwords: [&str; 4]| {
        org_with("https://ats.example/hooks/i9", |org| {
            for (user, password) in org["users"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .zip(passwords)
            {
                user["password"] = password.into();
            }
            for (i, client) in org["clients"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .enumerate()
            {
                client["clientSecret"] = format!("our-own-client-secret-{i}-Xk29fQ").into();
            }
            org["clients"][2]["integration"]["signingSecret"] =
                "whsec_CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg=".into();
        })
    };
    let weak = own([
        "short-pw-9",
        "password1234",
        "correct horse battery staple",
        "Tb7#qLm2!vXe",
    ]);
    let (ok, out, err) = seed_in(None, &db.url, &weak);
    assert!(!ok, "refused: {out}");
    let lines = problems(&err);
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].contains("users[0].password (user \"admin\"): ") && lines[0].ends_with(SHORT),
        "{err}"
    );
    assert!(
        lines[1].contains("users[1].password (user \"west.hr\"): ") && lines[1].contains(GUESSABLE),
        "{err}"
    );
    for value in ["short-pw-9", "password1234"] {
        assert!(
            !err.contains(value) && !out.contains(value),
            "no value printed"
        );
    }
    nothing_loaded().await;
    // The person's own details count against a password, as on the page.
    let personal = own([
        "a long pass phrase",
        "wes.turner@acme.example",
        "correct horse battery staple",
        "Tb7#qLm2!vXe",
    ]);
    let (ok, _, err) = seed_in(None, &db.url, &personal);
    assert!(!ok);
    let lines = problems(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("users[1].password (user \"west.hr\"): ") && lines[0].contains(GUESSABLE),
        "{err}"
    );
    nothing_loaded().await;

    // All of them good: it loads.
    let good = own([
        "a long pass phrase",
        "a-long-new-passw0rd",
        "correct horse battery staple",
        "Tb7#qLm2!vXe",
    ]);
    let (ok, out, err) = seed_in(None, &db.url, &good);
    assert!(ok, "{err}");
    assert!(out.contains("keys recorded in key_ring"), "{out}");
    assert_eq!(count(&db, "users").await, 4);
    assert_eq!(count(&db, "oauth_clients").await, 3);
    for f in [example, weak, personal, good] {
        let _ = std::fs::remove_file(f);
    }
}

#[tokio::test]
async fn in_development_however_spelled_the_example_organization_loads() {
    let db = TestDb::new().await;
    let example = org_with_hr_url("https://ats.example/hooks/i9");
    let (ok, out, err) = seed_in(Some(" Development "), &db.url, &example);
    assert!(ok, "{err}");
    assert!(!out.is_empty());
    assert_eq!(count(&db, "users").await, 4);
    assert_eq!(count(&db, "oauth_clients").await, 3);
    let _ = std::fs::remove_file(example);
}
