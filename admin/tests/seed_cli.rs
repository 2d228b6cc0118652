//! `i9-admin seed` refuses a partner callback URL that the deployment would
//! never post to (finding 12 of issue 8): http, or a private address, while
//! `ALLOW_PRIVATE_CALLBACKS` is off. The error names the entry, the field
//! and the setting, and nothing is loaded.

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
