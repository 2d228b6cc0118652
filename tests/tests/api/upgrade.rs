//! Migrations that convert data: a database as the previous version left it
//! keeps working after the upgrade.

use std::borrow::Cow;

use i9_api::Application;
use i9_common::{
    crypto::{new_token, token_hash, Purpose},
    db::MIGRATOR,
    domain::Ssn,
    seed, Config,
};
use i9_tests::{fixture, TestDb, ADMIN, PORTAL};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use sqlx::migrate::Migrator;
use uuid::Uuid;

/// The migration that dropped the stored response bodies of idempotency records.
const WITHOUT_BODIES: i64 = 20261124003001;

#[tokio::test]
async fn idempotency_records_of_the_previous_version_replay_without_their_bodies() {
    // Every migration but the conversion, and the example organization.
    let db = TestDb::unmigrated().await;
    let before = Migrator {
        migrations: Cow::Owned(
            MIGRATOR
                .migrations
                .iter()
                .filter(|m| m.version != WITHOUT_BODIES)
                .cloned()
                .collect(),
        ),
        ..Migrator::DEFAULT
    };
    before.run(&db.pool).await.unwrap();
    let config = Config::for_tests(&db.url);
    let cipher = i9_common::crypto::DataCipher::from_config(&config);
    seed::load(&db.pool, &cipher, &fixture()).await.unwrap();

    // An employee created with an Idempotency-Key by the previous version:
    // its I-9 request, and the record holding the whole response in clear.
    let ssn = Ssn::parse("456-78-9012").unwrap();
    let employee: i64 = sqlx::query_scalar(
        "INSERT INTO employees (first_name, last_name, location_id, ssn_ciphertext, ssn_hash, ssn_last4)
         SELECT 'Ana', 'Diaz', id, $1, $2, '9012' FROM groups WHERE name = 'Portland Warehouse' RETURNING id",
    )
    .bind(cipher.encrypt_ssn(Purpose::EmployeeSsn, &ssn))
    .bind(cipher.ssn_search_hash(&ssn))
    .fetch_one(&db.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO employment_periods (employee_id, start_date) VALUES ($1, DATE '2026-11-05')",
    )
    .bind(employee)
    .execute(&db.pool)
    .await
    .unwrap();
    let token = new_token("s1_");
    let request = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO i9_requests (id, employee_id, remote, onboarding_type, section1_token_hash,
                                  section1_token_ciphertext, section1_expires_at)
         VALUES ($1, $2, FALSE, 'on-site', $3, $4, now() + interval '14 days')",
    )
    .bind(request)
    .bind(employee)
    .bind(token_hash(&token))
    .bind(cipher.encrypt(Purpose::Section1Token, token.as_bytes()))
    .execute(&db.pool)
    .await
    .unwrap();
    let request_body = br#"{"firstName":"Ana","lastName":"Diaz","locationId":3,"socialSecurityNumber":"456-78-9012","createI9":"yes"}"#;
    let stored = json!({"id": employee, "fullName": "Diaz, Ana", "socialSecurityNumber": "456-78-9012",
                        "i9FormSection1Link": format!("http://127.0.0.1:1/i9/section1/{token}")});
    let hash = Sha256::new()
        .chain_update(b"POST /v1/employees\n")
        .chain_update(request_body)
        .finalize()
        .to_vec();
    sqlx::query(
        "INSERT INTO idempotency_keys (user_id, idempotency_key, request_path, request_hash,
                                       response_status, response_headers, response_body)
         SELECT id, 'old-key', 'POST /v1/employees', $1, 201, $2, $3 FROM users WHERE login = 'admin'",
    )
    .bind(&hash)
    .bind(json!({"location": format!("/v1/employees/{employee}")}))
    .bind(serde_json::to_vec(&stored).unwrap())
    .execute(&db.pool)
    .await
    .unwrap();

    // The upgrade.
    MIGRATOR.run(&db.pool).await.unwrap();
    let kept: (Option<i64>, Option<Uuid>, String) = sqlx::query_as(
        "SELECT resource_id, section1_request_id, row_to_json(k)::TEXT FROM idempotency_keys k",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((kept.0, kept.1), (Some(employee), Some(request)));
    for secret in ["456-78-9012", token.as_str()] {
        assert!(!kept.2.contains(secret), "{}", kept.2);
    }
    let columns: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.columns
         WHERE table_name = 'idempotency_keys' AND column_name = 'response_body'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(columns, 0, "the bodies are gone");

    // The same request again, to the new version: the first answer, rendered now.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let mut config = config;
    config.public_base_url.clone_from(&base);
    let app = Application::with_listener(listener, config, db.pool.clone());
    tokio::spawn(app.run(std::future::pending()));
    let http = reqwest::Client::new();
    let tokens: Value = http
        .post(format!("{base}/oauth2/access_token"))
        .form(&[
            ("grant_type", "password"),
            ("client_id", PORTAL.0),
            ("client_secret", PORTAL.1),
            ("username", ADMIN.0),
            ("password", ADMIN.1),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let r = http
        .post(format!("{base}/v1/employees"))
        .bearer_auth(tokens["access_token"].as_str().unwrap())
        .header("idempotency-key", "old-key")
        .header("content-type", "application/json")
        .body(request_body.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["idempotent-replayed"], "true");
    assert_eq!(
        r.headers()["location"],
        format!("/v1/employees/{employee}").as_str()
    );
    let replayed: Value = r.json().await.unwrap();
    assert_eq!(replayed["id"], employee);
    assert_eq!(replayed["socialSecurityNumber"], "456-78-9012");
    assert_eq!(
        replayed["i9FormSection1Link"],
        format!("{base}/i9/section1/{token}").as_str()
    );
    let employees: i64 = sqlx::query_scalar("SELECT count(*) FROM employees")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(employees, 4, "nothing written again");
}

/// The migration that keeps `IntegrationTransactionId` per I-9 request and I-9.
const I9_TRANSACTION_ID: i64 = 20261124100101;

/// The previous version kept only the employee's latest push id: the upgrade
/// gives it to the request (and I-9) that push made, found by the time of the
/// push's audit entry, and leaves the earlier push's request unknown (NULL).
#[tokio::test]
async fn the_latest_push_of_the_previous_version_gives_its_i9_its_transaction_id() {
    let db = TestDb::unmigrated().await;
    let before = Migrator {
        migrations: Cow::Owned(
            MIGRATOR
                .migrations
                .iter()
                .filter(|m| m.version < I9_TRANSACTION_ID)
                .cloned()
                .collect(),
        ),
        ..Migrator::DEFAULT
    };
    before.run(&db.pool).await.unwrap();
    let config = Config::for_tests(&db.url);
    let cipher = i9_common::crypto::DataCipher::from_config(&config);
    seed::load(&db.pool, &cipher, &fixture()).await.unwrap();
    let employee: i64 = sqlx::query_scalar(
        "INSERT INTO employees (first_name, last_name, location_id, integration_client_id,
                                integration_candidate_id, integration_transaction_id)
         SELECT 'Ana', 'Diaz', g.id, c.id, 'cand-old', 'tx-second'
         FROM groups g, oauth_clients c WHERE g.name = 'Portland Warehouse' AND c.client_id = 'greenhouse-ats'
         RETURNING id",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    // Two pushes, each its audit entry, request and I-9 in one transaction,
    // as the previous version wrote them.
    let mut i9s = Vec::new();
    for action in ["partner.create", "partner.rehire"] {
        let mut tx = db.pool.begin().await.unwrap();
        sqlx::query(
            "INSERT INTO audit_log (action, resource_type, resource_id) VALUES ($1, 'employee', $2::TEXT)",
        )
        .bind(action)
        .bind(employee)
        .execute(&mut *tx)
        .await
        .unwrap();
        let i9: i64 = sqlx::query_scalar(
            "INSERT INTO i9s (employee_id, status, form_version, first_name, last_name)
             VALUES ($1, 'Parked', '01/20/25', 'Ana', 'Diaz') RETURNING id",
        )
        .bind(employee)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
        let token = new_token("s1_");
        sqlx::query(
            "INSERT INTO i9_requests (id, employee_id, remote, onboarding_type, section1_token_hash,
                                      section1_token_ciphertext, section1_expires_at, i9_id)
             VALUES ($1, $2, FALSE, 'on-site', $3, $4, now() + interval '14 days', $5)",
        )
        .bind(Uuid::new_v4())
        .bind(employee)
        .bind(token_hash(&token))
        .bind(cipher.encrypt(Purpose::Section1Token, token.as_bytes()))
        .bind(i9)
        .execute(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
        i9s.push(i9);
    }

    MIGRATOR.run(&db.pool).await.unwrap();
    let kept: Vec<(i64, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT i.id, i.integration_transaction_id, r.integration_transaction_id
         FROM i9s i JOIN i9_requests r ON r.i9_id = i.id ORDER BY i.id",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        kept,
        [
            (i9s[0], None, None),
            (i9s[1], Some("tx-second".into()), Some("tx-second".into())),
        ]
    );
}
