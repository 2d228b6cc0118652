//! Nothing secret is stored in clear: after seeding, signing in and storing
//! employees with SSNs, no table holds a password, client secret, token,
//! signing secret or social security number as written.

use i9_tests::{fixture, spawn_app, PORTAL};

#[tokio::test]
async fn the_database_holds_no_secret_or_ssn_in_clear() {
    let app = spawn_app().await;
    let tokens = app.sign_in_with(PORTAL, i9_tests::ADMIN, None).await;
    let refreshed: serde_json::Value = app
        .token_request(&[
            ("grant_type", "refresh_token"),
            ("client_id", PORTAL.0),
            ("client_secret", PORTAL.1),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ("username", "admin"),
        ])
        .await
        .json()
        .await
        .unwrap();
    app.insert_employee("Extra", "Person", "Acme", Some("456-78-9012"))
        .await;
    // A failed sign-in with a password-looking value must not store it either.
    app.token_request(&[
        ("grant_type", "password"),
        ("client_id", PORTAL.0),
        ("client_secret", PORTAL.1),
        ("username", "admin"),
        ("password", "typo-admin-Passw0rd"),
    ])
    .await;

    let org = fixture();
    let mut secrets: Vec<String> = Vec::new();
    secrets.extend(org.users.iter().map(|u| u.password.clone()));
    secrets.extend(org.clients.iter().map(|c| c.client_secret.clone()));
    secrets.extend(
        org.clients
            .iter()
            .filter_map(|c| c.integration.as_ref())
            .map(|i| i.signing_secret.clone()),
    );
    secrets.extend(
        org.clients
            .iter()
            .filter_map(|c| c.integration.as_ref())
            .map(|i| i.signing_secret.trim_start_matches("whsec_").to_owned()),
    );
    for ssn in org
        .employees
        .iter()
        .filter_map(|e| e.social_security_number.clone())
        .chain(["456-78-9012".to_owned()])
    {
        secrets.push(ssn.replace('-', ""));
        secrets.push(ssn);
    }
    secrets.push("typo-admin-Passw0rd".to_owned());
    for t in [
        &tokens["access_token"],
        &tokens["refresh_token"],
        &refreshed["access_token"],
        &refreshed["refresh_token"],
    ] {
        let t = t.as_str().unwrap().to_owned();
        secrets.push(
            t.trim_start_matches("i9at_")
                .trim_start_matches("i9rt_")
                .to_owned(),
        );
        secrets.push(t);
    }
    assert!(secrets.len() > 20);

    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::TEXT FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert!(tables.iter().any(|t| t == "employees") && tables.iter().any(|t| t == "access_tokens"));
    let mut rows_scanned = 0;
    for table in &tables {
        // Every column as text; bytea columns appear as hex and as their raw bytes decoded leniently.
        let rows: Vec<String> =
            sqlx::query_scalar(&format!(r#"SELECT row_to_json(t)::TEXT FROM "{table}" t"#))
                .fetch_all(app.pool())
                .await
                .unwrap();
        for row in rows {
            rows_scanned += 1;
            let decoded = decode_hex_runs(&row);
            for s in &secrets {
                assert!(
                    !row.contains(s.as_str()) && !decoded.contains(s.as_str()),
                    "{table} holds a secret in clear"
                );
            }
        }
    }
    assert!(rows_scanned > 30, "scanned {rows_scanned} rows");
}

/// bytea values serialise as `\x...` hex: decode them so a plaintext stored
/// in a bytea column would be caught as well.
fn decode_hex_runs(row: &str) -> String {
    let mut out = String::new();
    for part in row.split("\\\\x").skip(1) {
        let hex: String = part.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
        let bytes: Vec<u8> = (0..hex.len() / 2)
            .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
            .collect();
        out.push_str(&String::from_utf8_lossy(&bytes));
        out.push('\n');
    }
    out
}
