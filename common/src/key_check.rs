//! The keys check: a binary started with a valid `DATA_ENCRYPTION_KEY` or
//! `SSN_HASH_KEY` that is not the one the data was written with is refused at
//! start, naming the variable, instead of answering 500 at the first read of
//! an SSN or missing every SSN search.
//!
//! The one-row table `key_check` holds a ciphertext of a fixed value under the
//! data key and an HMAC of a fixed value under the hash key
//! ([`DataCipher::key_check_ciphertext`], [`DataCipher::key_check_mac`]). The
//! first process that starts writes it; every later start compares. A database
//! that already holds data but no row yet (written before the check existed)
//! is checked against its data first: one stored ciphertext of each kind must
//! decrypt, and one employee's SSN hash must be the hash of its SSN.

use anyhow::{bail, Context};
use sqlx::PgPool;

use crate::crypto::{DataCipher, Purpose};

/// What [`verify_or_record`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCheck {
    /// The row was there and both keys match it.
    Verified,
    /// There was no row: the keys matched the existing data (if any), and the
    /// row is now written.
    Recorded,
}

/// Columns encrypted under the data key, and a query for one stored value of
/// each: tried when the database has data but no `key_check` row.
const ENCRYPTED_COLUMNS: [(&str, &str, Purpose); 4] = [
    (
        "employees.ssn_ciphertext",
        "SELECT ssn_ciphertext FROM employees WHERE ssn_ciphertext IS NOT NULL LIMIT 1",
        Purpose::EmployeeSsn,
    ),
    (
        "i9s.ssn_ciphertext",
        "SELECT ssn_ciphertext FROM i9s WHERE ssn_ciphertext IS NOT NULL LIMIT 1",
        Purpose::I9Ssn,
    ),
    (
        "oauth_clients.signing_secret_ciphertext",
        "SELECT signing_secret_ciphertext FROM oauth_clients
         WHERE signing_secret_ciphertext IS NOT NULL LIMIT 1",
        Purpose::SigningSecret,
    ),
    (
        "i9_requests.section1_token_ciphertext",
        "SELECT section1_token_ciphertext FROM i9_requests LIMIT 1",
        Purpose::Section1Token,
    ),
];

const WRONG_DATA_KEY: &str =
    "DATA_ENCRYPTION_KEY is not the key this database's data was written with";
const WRONG_HASH_KEY: &str =
    "SSN_HASH_KEY is not the key this database's SSN hashes were written with";
const ADVICE: &str = "start with the keys the data was written with";

/// Compare the keys with the `key_check` row, or, when there is none, with
/// the stored data, then write the row. An error names the variable whose key
/// does not match.
pub async fn verify_or_record(pool: &PgPool, cipher: &DataCipher) -> anyhow::Result<KeyCheck> {
    if let Some(row) = read(pool).await? {
        verify_row(cipher, &row)?;
        return Ok(KeyCheck::Verified);
    }
    verify_against_data(pool, cipher).await?;
    sqlx::query(
        "INSERT INTO key_check (data_key_ciphertext, ssn_hash_key_mac) VALUES ($1, $2)
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(cipher.key_check_ciphertext())
    .bind(cipher.key_check_mac())
    .execute(pool)
    .await
    .context("writing the key check")?;
    // Another process may have written it first, with other keys.
    let row = read(pool).await?.context("the key check row vanished")?;
    verify_row(cipher, &row)?;
    Ok(KeyCheck::Recorded)
}

async fn read(pool: &PgPool) -> anyhow::Result<Option<(Vec<u8>, Vec<u8>)>> {
    sqlx::query_as("SELECT data_key_ciphertext, ssn_hash_key_mac FROM key_check")
        .fetch_optional(pool)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.code().as_deref() == Some("42P01") => anyhow::anyhow!(
                "the database has no key_check table: apply the migrations first (i9-admin migrate)"
            ),
            _ => anyhow::Error::new(e).context("reading the key check"),
        })
}

fn verify_row(cipher: &DataCipher, (ciphertext, mac): &(Vec<u8>, Vec<u8>)) -> anyhow::Result<()> {
    let data_ok = cipher.data_key_matches(ciphertext);
    let hash_ok = cipher.hash_key_matches(mac);
    match (data_ok, hash_ok) {
        (true, true) => Ok(()),
        (false, true) => bail!("{WRONG_DATA_KEY}; {ADVICE}"),
        (true, false) => bail!("{WRONG_HASH_KEY}; {ADVICE}"),
        (false, false) => bail!("{WRONG_DATA_KEY}, and {WRONG_HASH_KEY}; {ADVICE}"),
    }
}

/// For a database written before the key check existed.
async fn verify_against_data(pool: &PgPool, cipher: &DataCipher) -> anyhow::Result<()> {
    for (column, sql, purpose) in ENCRYPTED_COLUMNS {
        let stored: Option<Vec<u8>> = sqlx::query_scalar(sql)
            .fetch_optional(pool)
            .await
            .with_context(|| format!("reading {column} for the key check"))?;
        if let Some(ct) = stored {
            if cipher.decrypt(purpose, &ct).is_err() {
                bail!("{WRONG_DATA_KEY} (it cannot decrypt {column}); {ADVICE}");
            }
        }
    }
    let employee: Option<(Vec<u8>, Vec<u8>)> = sqlx::query_as(
        "SELECT ssn_ciphertext, ssn_hash FROM employees WHERE ssn_ciphertext IS NOT NULL LIMIT 1",
    )
    .fetch_optional(pool)
    .await
    .context("reading employees.ssn_hash for the key check")?;
    if let Some((ct, hash)) = employee {
        let ssn = cipher.decrypt_ssn(Purpose::EmployeeSsn, &ct).map_err(|_| {
            anyhow::anyhow!(
                "{WRONG_DATA_KEY} (it cannot decrypt employees.ssn_ciphertext); {ADVICE}"
            )
        })?;
        if cipher.ssn_search_hash(&ssn) != hash {
            bail!("{WRONG_HASH_KEY} (employees.ssn_hash differs); {ADVICE}");
        }
    }
    Ok(())
}
