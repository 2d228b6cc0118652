//! What the key tests share: rings of the development keys (key 1) and of
//! keys 2, `i9-admin` run with them, and processes started with them.

#![allow(dead_code)] // each test file uses some

use std::process::Command;

use i9_common::{
    crypto::{DataCipher, Purpose},
    domain::Ssn,
    keys::{self, KeyRing},
    processes::Registration,
    startup, Config,
};
use i9_tests::TestApp;
use sqlx::PgPool;

/// Key 1 of each ring: the development keys the tests' data is written with.
pub const DEV_DATA_KEY: &str = "ZGV2LW9ubHktZGF0YS1lbmNyeXB0aW9uLWtleS0zMmI=";
pub const DEV_HASH_KEY: &str = "ZGV2LW9ubHktc3NuLXNlYXJjaC1oYXNoLWtleS0zMmJ5dGU=";
/// Key 2 of each ring: 32 bytes of 2, and of 3.
pub const DATA_KEY_2: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=";
pub const HASH_KEY_2: &str = "AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=";

/// The test's configuration with the given key ids in each ring (1: the
/// development key, 2: the keys above), the first current.
pub fn config_with(app: &TestApp, data: &[u32], hash: &[u32]) -> Config {
    let dev = Config::for_tests("");
    let mut c = (*app.config).clone();
    c.data_keys = KeyRing::new(
        data.iter()
            .map(|&id| {
                (
                    id,
                    if id == 1 {
                        dev.data_keys.current().1.clone()
                    } else {
                        keys::data_key([2; 32])
                    },
                )
            })
            .collect(),
    )
    .unwrap();
    c.ssn_hash_keys = KeyRing::new(
        hash.iter()
            .map(|&id| {
                let key = if id == 1 {
                    dev.ssn_hash_keys.current().1.clone()
                } else {
                    keys::hash_key(vec![3; 32])
                };
                (id, key)
            })
            .collect(),
    )
    .unwrap();
    c
}

/// `i9-admin` with the given rings (`ID:BASE64` lists).
pub fn admin(db_url: &str, data: &str, hash: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_i9-admin"))
        .args(args)
        .env("DATABASE_URL", db_url)
        // Key 1 is the development key: allowed in development only.
        .env("APP_ENV", "development")
        .env("DATA_ENCRYPTION_KEYS", data)
        .env("SSN_HASH_KEYS", hash)
        .env_remove("DATA_ENCRYPTION_KEY")
        .env_remove("SSN_HASH_KEY")
        .env_remove("DATA_ENCRYPTION_KEY_FILE")
        .env_remove("SSN_HASH_KEY_FILE")
        .output()
        .unwrap();
    i9_tests::logs::keep_stderr("i9-admin", &out.stderr);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Start another API process on the test's database with `config`, as a
/// restart with other keys does: the key check, the registration in
/// `processes` (its heartbeat every `processes::HEARTBEAT`), then the API;
/// returns its address and registration (ended, or dropped, by the test).
pub async fn start_api(
    pool: &PgPool,
    mut config: Config,
) -> anyhow::Result<(String, Registration)> {
    let registration = register(pool, &config, "i9-api").await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    config.public_base_url.clone_from(&base);
    let app = i9_api::Application::with_listener(listener, config, pool.clone());
    tokio::spawn(app.run(std::future::pending()));
    Ok((base, registration))
}

/// What a binary does at start once its dependencies answer: check the keys
/// of `config`, then register as `binary`.
pub async fn register(
    pool: &PgPool,
    config: &Config,
    binary: &'static str,
) -> anyhow::Result<Registration> {
    startup::check_keys_and_register(
        pool,
        &DataCipher::from_config(config),
        binary,
        &config.host_name,
        i9_common::processes::HEARTBEAT,
    )
    .await
}

/// The count `rekey` printed for `column`.
pub fn rekeyed(out: &str, column: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(column))
        .unwrap_or_else(|| panic!("no line for {column} in:\n{out}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Insert an employee with an SSN as a writer with `cipher` does, in `conn`.
pub async fn insert_with(
    conn: &mut sqlx::PgConnection,
    cipher: &DataCipher,
    location: i64,
    ssn: &str,
) -> Result<i64, sqlx::Error> {
    let ssn = Ssn::parse(ssn).unwrap();
    sqlx::query_scalar(
        "INSERT INTO employees (first_name, last_name, location_id, ssn_ciphertext, ssn_hash,
                                ssn_hash_check, ssn_last4)
         VALUES ('Same', 'Number', $1, $2, $3, $4, $5) RETURNING id",
    )
    .bind(location)
    .bind(cipher.encrypt_ssn(Purpose::EmployeeSsn, &ssn))
    .bind(cipher.ssn_search_hash(&ssn))
    .bind(cipher.ssn_search_hashes(&ssn))
    .bind(ssn.last4())
    .fetch_one(&mut *conn)
    .await
}
