//! Key rotation as an operator runs it (docs/operations.md, "Keys and
//! rotation"): data written under key 1; the service restarted with the rings
//! [2, 1] writes under key 2 and reads both; `i9-admin rekey` rewrites every
//! encrypted column and every SSN hash (counted per column; a second run
//! changes nothing); then the rings [2] alone read everything. A ring without
//! a key the data still uses is refused at start, naming the key. While the
//! SSN hash key rotates, a search and the duplicate check see records hashed
//! under either key, also between two writers at once.

#![allow(clippy::unwrap_used)] // a test: panics are failures

mod support;

use i9_common::{
    crypto::{DataCipher, Purpose, PREFIX_LEN},
    key_check::{self, KeyCheck},
    rekey::{self, ENCRYPTED_COLUMNS, SSN_HASH_COLUMN},
    signing_secrets,
};
use i9_tests::{eventually, spawn, spawn_app, Stack, TestApp, ADMIN};
use serde_json::{json, Value};
use sqlx::PgPool;
use support::{
    admin, config_with, insert_with, rekeyed, start_api, DATA_KEY_2, DEV_DATA_KEY, DEV_HASH_KEY,
    HASH_KEY_2,
};

/// Non-null values of every encrypted column and of the SSN hash.
async fn stored(pool: &PgPool) -> Vec<(String, u64)> {
    let mut all = Vec::new();
    for c in ENCRYPTED_COLUMNS {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM {} WHERE {} IS NOT NULL",
            c.table, c.column
        ))
        .fetch_one(pool)
        .await
        .unwrap();
        all.push((c.name(), u64::try_from(n).unwrap()));
    }
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM employees WHERE ssn_hash IS NOT NULL")
        .fetch_one(pool)
        .await
        .unwrap();
    all.push((SSN_HASH_COLUMN.to_owned(), u64::try_from(n).unwrap()));
    all
}

async fn get(app: &TestApp, base: &str, path: &str, token: &str) -> Value {
    let r = app
        .http
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.unwrap()
}

async fn post_employee(app: &TestApp, base: &str, token: &str, body: &Value) -> (u16, Value) {
    let r = app
        .http
        .post(format!("{base}/v1/employees"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// What the service shows of the data, through the API at `base`: the whole
/// SSNs of three employees and of an I-9, and an SSN search.
async fn reads_everything(app: &TestApp, base: &str, token: &str, ids: (i64, i64, i64, i64)) {
    let (maria, added, new, i9) = ids;
    for (id, ssn) in [
        (maria, "123-45-6789"),
        (added, "456-78-9012"),
        (new, "567-89-0123"),
    ] {
        let e = get(app, base, &format!("/v1/employees/{id}"), token).await;
        assert_eq!(e["socialSecurityNumber"], ssn, "employee {id}");
    }
    let record = get(app, base, &format!("/v1/i9s/{i9}"), token).await;
    assert_eq!(record["ssn"], "123-45-6789");
    for (ssn, id) in [
        ("234-56-7890", None),
        ("456-78-9012", Some(added)),
        ("567-89-0123", Some(new)),
    ] {
        let found = get(
            app,
            base,
            &format!("/v1/employees?socialSecurityNumber={ssn}"),
            token,
        )
        .await;
        let results = found["searchResult"].as_array().unwrap();
        assert_eq!(results.len(), 1, "one match for {ssn}: {found}");
        if let Some(id) = id {
            assert_eq!(results[0]["id"], id);
        }
    }
}

#[tokio::test]
async fn the_keys_rotate_and_rekey_rewrites_every_column_under_the_new_ones() {
    let app = spawn(Stack::default(), |_| {}).await;
    let pool = app.pool().clone();
    // What the service's first start did: key 1 of each ring recorded.
    assert_eq!(
        key_check::verify_or_record(&pool, &app.cipher)
            .await
            .unwrap(),
        KeyCheck::Recorded
    );
    let token = app.token(ADMIN).await;
    let portland = app.group_id("Portland Warehouse").await;

    // Under key 1 (the seeded organization, plus): an I-9 with an SSN, an
    // employee with an I-9 request (its Section 1 link token), and a partner
    // secret replaced but still in its overlap.
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let (status, body) = post_employee(
        &app,
        &app.address,
        &token,
        &json!({"firstName": "Old", "lastName": "Key", "locationId": portland,
                "socialSecurityNumber": "456-78-9012", "startDate": "2026-12-01", "createI9": "yes"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let added = body["id"].as_i64().unwrap();
    let partner: i64 =
        sqlx::query_scalar("SELECT id FROM oauth_clients WHERE client_id = 'greenhouse-ats'")
            .fetch_one(&pool)
            .await
            .unwrap();
    let new_secret = signing_secrets::generate();
    let mut conn = pool.acquire().await.unwrap();
    signing_secrets::replace(
        &mut conn,
        &app.cipher,
        partner,
        &app.cipher
            .encrypt(Purpose::SigningSecret, new_secret.as_bytes()),
        signing_secrets::DEFAULT_OVERLAP,
    )
    .await
    .unwrap();
    drop(conn);
    let under_key_1 = stored(&pool).await;
    assert!(
        under_key_1.iter().all(|(_, n)| *n > 0),
        "every column holds something: {under_key_1:?}"
    );

    // The rings [2] alone are refused: the data still uses key 1 of each.
    let e = key_check::verify_or_record(
        &pool,
        &DataCipher::from_config(&config_with(&app, &[2], &[2])),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("this database's data may still use key 1, which DATA_ENCRYPTION_KEYS lacks")
            && e.contains(
                "this database's SSN hashes may still use key 1, which SSN_HASH_KEYS lacks"
            ),
        "{e}"
    );
    let (ok, out, err) = admin(
        &app.db.url,
        &format!("2:{DATA_KEY_2}"),
        &format!("2:{HASH_KEY_2}"),
        &["rekey"],
    );
    assert!(!ok && out.is_empty(), "refused before anything: {out}");
    assert!(
        err.contains("may still use key 1, which DATA_ENCRYPTION_KEYS lacks"),
        "{err}"
    );
    assert!(
        !err.contains(DATA_KEY_2) && !err.contains(HASH_KEY_2),
        "no key printed"
    );
    let recorded: i64 = sqlx::query_scalar("SELECT count(*) FROM key_ring")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(recorded, 2, "a refused start records nothing");

    // Restarted with the rings [2, 1]: writes under key 2, reads both.
    let both = config_with(&app, &[2, 1], &[2, 1]);
    let cipher = DataCipher::from_config(&both);
    let (api, _api) = start_api(&pool, both.clone()).await.unwrap();
    let (status, body) = post_employee(
        &app,
        &api,
        &token,
        &json!({"firstName": "New", "lastName": "Key", "locationId": portland,
                "socialSecurityNumber": "567-89-0123"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let new = body["id"].as_i64().unwrap();
    let (ct, hash): (Vec<u8>, Vec<u8>) =
        sqlx::query_as("SELECT ssn_ciphertext, ssn_hash FROM employees WHERE id = $1")
            .bind(new)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(&ct[..PREFIX_LEN], [2, 0, 0, 0, 2], "version 2, data key 2");
    assert_eq!(
        &hash[..PREFIX_LEN],
        [2, 0, 0, 0, 2],
        "version 2, hash key 2"
    );
    reads_everything(&app, &api, &token, (maria, added, new, i9)).await;

    // The SSN hash key during the rotation: a number hashed under key 1 is
    // found and taken, through the API and the partner operation alike.
    let employees = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM employees")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let before = employees().await;
    let (status, body) = post_employee(
        &app,
        &api,
        &token,
        &json!({"firstName": "Dup", "lastName": "Licate", "locationId": portland,
                "socialSecurityNumber": "234-56-7890"}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    let r = app
        .http
        .patch(format!("{api}/v1/employees/{new}"))
        .bearer_auth(&token)
        .json(
            &json!({"firstName": "New", "lastName": "Key", "locationId": portland,
                      "socialSecurityNumber": "456-78-9012"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409, "an update to a number held under key 1");
    assert_eq!(employees().await, before, "nothing written");
    let secrets = signing_secrets::valid(
        &pool,
        &cipher,
        partner,
        &current_secret(&pool, partner).await,
    )
    .await
    .unwrap();
    assert_eq!(
        secrets.len(),
        2,
        "the partner's secrets decrypt under either key"
    );

    // rekey: every value under key 1 is rewritten, counted per column.
    let rings = (
        format!("2:{DATA_KEY_2},1:{DEV_DATA_KEY}"),
        format!("2:{HASH_KEY_2},1:{DEV_HASH_KEY}"),
    );
    let (ok, out, err) = admin(
        &app.db.url,
        &rings.0,
        &rings.1,
        &["rekey", "--batch-size", "2"],
    );
    assert!(ok, "{out}{err}");
    for (column, n) in &under_key_1 {
        assert_eq!(rekeyed(&out, column), *n, "{column}:\n{out}");
    }
    assert!(
        out.contains("every value is under data key 2 and SSN hash key 2"),
        "{out}"
    );
    assert!(
        out.contains("no stored value uses key(s) 1 of DATA_ENCRYPTION_KEYS any more")
            && out.contains("no stored value uses key(s) 1 of SSN_HASH_KEYS any more"),
        "{out}"
    );
    assert!(rekey::remaining(&pool, &cipher).await.unwrap().is_empty());
    let (ok, again, err) = admin(&app.db.url, &rings.0, &rings.1, &["rekey"]);
    assert!(ok, "{err}");
    for (column, _) in &under_key_1 {
        assert_eq!(
            rekeyed(&again, column),
            0,
            "a second run changes nothing:\n{again}"
        );
    }
    reads_everything(&app, &api, &token, (maria, added, new, i9)).await;

    // The rings [2] alone now start and read everything.
    let only_2 = config_with(&app, &[2], &[2]);
    let cipher_2 = DataCipher::from_config(&only_2);
    assert_eq!(
        key_check::verify_or_record(&pool, &cipher_2).await.unwrap(),
        KeyCheck::Verified
    );
    let (api_2, _api_2) = start_api(&pool, only_2).await.unwrap();
    reads_everything(&app, &api_2, &token, (maria, added, new, i9)).await;
    let (status, _) = post_employee(
        &app,
        &api_2,
        &token,
        &json!({"firstName": "Dup", "lastName": "Licate", "locationId": portland,
                "socialSecurityNumber": "123-45-6789"}),
    )
    .await;
    assert_eq!(status, 409);
    let secrets = signing_secrets::valid(
        &pool,
        &cipher_2,
        partner,
        &current_secret(&pool, partner).await,
    )
    .await
    .unwrap();
    assert_eq!(
        secrets,
        [
            new_secret,
            "whsec_YWNtZS1ncmVlbmhvdXNlLWRldi1zaWduaW5nLWtleSEh".to_owned()
        ]
    );
    let token_ct: Vec<u8> = sqlx::query_scalar(
        "SELECT section1_token_ciphertext FROM i9_requests WHERE employee_id = $1",
    )
    .bind(added)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(cipher_2.decrypt(Purpose::Section1Token, &token_ct).is_ok());
    let (ok, _, err) = admin(
        &app.db.url,
        &format!("2:{DATA_KEY_2}"),
        &format!("2:{HASH_KEY_2}"),
        &["rekey"],
    );
    assert!(ok, "the rings [2] pass the start-up check: {err}");
}

async fn current_secret(pool: &PgPool, client: i64) -> Vec<u8> {
    sqlx::query_scalar("SELECT signing_secret_ciphertext FROM oauth_clients WHERE id = $1")
        .bind(client)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn two_writers_of_one_ssn_under_different_hash_keys_cannot_both_succeed() {
    let app = spawn_app().await;
    let pool = app.pool().clone();
    let location = app.group_id("Portland Warehouse").await;
    // A process not restarted yet (hash key 1 current, knows 2) and one
    // restarted (key 2 current, knows 1), as during a rolling restart.
    let old = DataCipher::from_config(&config_with(&app, &[1], &[1, 2]));
    let new = DataCipher::from_config(&config_with(&app, &[1], &[2, 1]));

    let mut first = pool.begin().await.unwrap();
    insert_with(&mut first, &old, location, "678-90-1234")
        .await
        .unwrap();
    // The second writer's check waits for the first writer's transaction...
    let second = tokio::spawn({
        let pool = pool.clone();
        let new = new.clone();
        async move {
            let mut conn = pool.acquire().await.unwrap();
            insert_with(&mut conn, &new, location, "678-90-1234").await
        }
    });
    eventually("the second writer waits for the first", || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .fetch_one(&pool)
        .await
        .unwrap()
            == 1
    })
    .await;
    first.commit().await.unwrap();
    // ...and then sees its row: the same error as the unique index gives.
    let e = second.await.unwrap().unwrap_err();
    assert_eq!(
        e.as_database_error().and_then(|d| d.constraint()),
        Some("employees_ssn_hash_key"),
        "{e}"
    );
    let holders: i64 =
        sqlx::query_scalar("SELECT count(*) FROM employees WHERE ssn_last4 = '1234'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(holders, 1);

    // Committed one after the other, in either order, the same.
    let mut conn = pool.acquire().await.unwrap();
    insert_with(&mut conn, &new, location, "789-01-2345")
        .await
        .unwrap();
    let e = insert_with(&mut conn, &old, location, "789-01-2345")
        .await
        .unwrap_err();
    assert_eq!(
        e.as_database_error().and_then(|d| d.constraint()),
        Some("employees_ssn_hash_key")
    );
    // The hashes to check are never stored.
    let kept: i64 =
        sqlx::query_scalar("SELECT count(*) FROM employees WHERE ssn_hash_check IS NOT NULL")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(kept, 0);
}
