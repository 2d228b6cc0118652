//! The keys check: a binary started with a valid key that is not the one the
//! data was written with under its id, or without a key the data still uses,
//! is refused at start, naming the variable and the key id, instead of
//! answering 500 at the first read of an SSN or missing every SSN search.
//!
//! The table `key_ring` holds one row per key id of each ring: a ciphertext
//! of a fixed value under that data key, or an HMAC of a fixed value under
//! that SSN hash key ([`DataCipher::key_check_ciphertext`],
//! [`DataCipher::key_check_mac`]). The first process that starts with a key
//! records it; every later start compares each of its keys with the row of
//! the same id. A recorded key missing from the ring is refused unless
//! `i9-admin rekey` found that no stored value uses it any more
//! (`unused_since`, `common/src/rekey.rs`).
//!
//! A ring that lacks the current key of a live process (`processes`,
//! `common/src/processes.rs`) is refused too, naming the key and the
//! processes: this process could not read what they write. So is a current
//! key that a live process lacks (they could not read what this one writes),
//! and a current key that `rekey` retired (docs/operations.md, "Keys and
//! rotation": the start-up check).
//!
//! A database that already holds data but no row yet (written before the
//! check existed) is checked against its data first: one stored ciphertext of
//! each kind must decrypt, and one employee's SSN hash must be the hash of
//! its SSN.

use anyhow::{bail, Context};
use sqlx::PgPool;

use crate::{
    crypto::{DataCipher, DecryptError, Purpose},
    keys::KeyId,
    processes::{self, LiveProcess, STALE_AFTER},
    rekey::ENCRYPTED_COLUMNS,
};

/// What [`verify_or_record`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCheck {
    /// Every key of both rings was recorded and matches.
    Verified,
    /// Some key was new: the keys matched the existing data (if any), and the
    /// new ones are now recorded.
    Recorded,
}

/// The two rings, as `key_ring.kind` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ring {
    Data,
    SsnHash,
}

impl Ring {
    pub fn kind(self) -> &'static str {
        match self {
            Ring::Data => "data",
            Ring::SsnHash => "ssn_hash",
        }
    }

    /// The setting an operator changes.
    pub fn variable(self) -> &'static str {
        match self {
            Ring::Data => "DATA_ENCRYPTION_KEYS",
            Ring::SsnHash => "SSN_HASH_KEYS",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Ring::Data => "data",
            Ring::SsnHash => "SSN hashes",
        }
    }

    pub fn ids(self, cipher: &DataCipher) -> Vec<KeyId> {
        match self {
            Ring::Data => cipher.data_key_ids(),
            Ring::SsnHash => cipher.hash_key_ids(),
        }
    }

    fn check_value(self, cipher: &DataCipher, id: KeyId) -> Option<Vec<u8>> {
        match self {
            Ring::Data => cipher.key_check_ciphertext(id),
            Ring::SsnHash => cipher.key_check_mac(id),
        }
    }

    pub fn matches(self, cipher: &DataCipher, id: KeyId, value: &[u8]) -> Option<bool> {
        match self {
            Ring::Data => cipher.data_key_matches(id, value),
            Ring::SsnHash => cipher.hash_key_matches(id, value),
        }
    }

    /// "key 2 of DATA_ENCRYPTION_KEYS", "key 1 of DATA_ENCRYPTION_KEYS (or
    /// DATA_ENCRYPTION_KEY)".
    pub fn key(self, id: KeyId) -> String {
        match (self, id) {
            (Ring::Data, 1) => "key 1 of DATA_ENCRYPTION_KEYS (or DATA_ENCRYPTION_KEY)".into(),
            (Ring::SsnHash, 1) => "key 1 of SSN_HASH_KEYS (or SSN_HASH_KEY)".into(),
            _ => format!("key {id} of {}", self.variable()),
        }
    }
}

/// Both rings, the data ring first.
pub const RINGS: [Ring; 2] = [Ring::Data, Ring::SsnHash];
const ADVICE: &str = "start with the keys the data was written with";

/// One `key_ring` row.
#[derive(Debug)]
struct Recorded {
    kind: String,
    key_id: i64,
    check_value: Vec<u8>,
    unused: bool,
}

/// Compare both key rings with the `key_ring` rows, or, when there are none,
/// with the stored data; then record the keys not recorded yet. An error
/// names every variable and key id that does not fit, and writes nothing.
pub async fn verify_or_record(pool: &PgPool, cipher: &DataCipher) -> anyhow::Result<KeyCheck> {
    let rows = read(pool).await?;
    if rows.is_empty() {
        verify_against_data(pool, cipher).await?;
    }
    let live = processes::live(pool).await?;
    refuse(cipher, &rows, &live)?;
    let mut recorded = false;
    for ring in RINGS {
        for id in ring.ids(cipher) {
            if find(&rows, ring, id).is_some() {
                continue;
            }
            let value = ring.check_value(cipher, id).context("a key of the ring")?;
            let inserted = sqlx::query!(
                "INSERT INTO key_ring (kind, key_id, check_value) VALUES ($1, $2, $3)
                 ON CONFLICT (kind, key_id) DO NOTHING",
                ring.kind(),
                i64::from(id),
                value,
            )
            .execute(pool)
            .await
            .context("recording a key in key_ring")?;
            recorded |= inserted.rows_affected() == 1;
        }
    }
    // Another process may have recorded the same ids first, with other keys.
    refuse(cipher, &read(pool).await?, &live)?;
    Ok(if recorded {
        KeyCheck::Recorded
    } else {
        KeyCheck::Verified
    })
}

fn refuse(cipher: &DataCipher, rows: &[Recorded], live: &[LiveProcess]) -> anyhow::Result<()> {
    let mut problems = Vec::new();
    let recorded = self::problems(cipher, rows, live);
    if !recorded.is_empty() {
        problems.push(format!("{}; {ADVICE}", recorded.join("; ")));
    }
    problems.extend(lacking_live_keys(cipher, live));
    problems.extend(retired_current_keys(cipher, rows));
    problems.extend(current_key_unknown_to_live(cipher, live));
    if problems.is_empty() {
        Ok(())
    } else {
        bail!("{}", problems.join("; "))
    }
}

fn find(rows: &[Recorded], ring: Ring, id: KeyId) -> Option<&Recorded> {
    rows.iter()
        .find(|r| r.kind == ring.kind() && r.key_id == i64::from(id))
}

/// Keys of the ring that are not the recorded key of their id, and recorded
/// keys still in use that the ring lacks (but those a live process writes
/// with: [`lacking_live_keys`] names them, with the processes).
fn problems(cipher: &DataCipher, rows: &[Recorded], live: &[LiveProcess]) -> Vec<String> {
    let mut problems = Vec::new();
    for ring in RINGS {
        let ids = ring.ids(cipher);
        for &id in &ids {
            if let Some(row) = find(rows, ring, id) {
                if ring.matches(cipher, id, &row.check_value) != Some(true) {
                    problems.push(format!(
                        "{} is not the key this database's {} were written with under id {id}",
                        ring.key(id),
                        ring.what()
                    ));
                }
            }
        }
        for row in rows.iter().filter(|r| r.kind == ring.kind() && !r.unused) {
            let Ok(id) = KeyId::try_from(row.key_id) else {
                continue;
            };
            if !ids.contains(&id) && !live.iter().any(|p| p.keys.current(ring) == id) {
                problems.push(format!(
                    "this database's {} may still use key {id}, which {} lacks: `i9-admin \
                     rekey` has not marked it unused (run it with the ring that has key {id}: it \
                     says what still uses it: values under it, a live process writing under it, \
                     or, for an SSN hash key, idempotency records younger than 24 hours); keep \
                     it in the ring until then",
                    ring.what(),
                    ring.variable()
                ));
            }
        }
    }
    problems
}

/// The current keys of live processes that the ring lacks: this process
/// could not read what they write (docs/operations.md, "Keys and rotation").
fn lacking_live_keys(cipher: &DataCipher, live: &[LiveProcess]) -> Vec<String> {
    let mut problems = Vec::new();
    for ring in RINGS {
        let ids = ring.ids(cipher);
        let mut lacking: Vec<KeyId> = live
            .iter()
            .map(|p| p.keys.current(ring))
            .filter(|id| !ids.contains(id))
            .collect();
        lacking.sort_unstable();
        lacking.dedup();
        for id in lacking {
            let holders: Vec<String> = live
                .iter()
                .filter(|p| p.keys.current(ring) == id)
                .map(ToString::to_string)
                .collect();
            problems.push(format!(
                "{} is the current key of live processes, which {} lacks: this process could not \
                 read what they write. Keep key {id} in the ring until they run with another \
                 current key (one without a heartbeat for {} s counts as gone): {}",
                ring.key(id),
                ring.variable(),
                STALE_AFTER.as_secs(),
                holders.join(", ")
            ));
        }
    }
    problems
}

/// A current key that `rekey` marked unused: a process writing under it again
/// would write what processes already rid of it cannot read (or, for the SSN
/// hash key, find), and would bring back a retired key.
fn retired_current_keys(cipher: &DataCipher, rows: &[Recorded]) -> Vec<String> {
    RINGS
        .into_iter()
        .filter_map(|ring| {
            let current = ring.ids(cipher)[0];
            find(rows, ring, current).filter(|row| row.unused).map(|_| {
                format!(
                    "{} is first in the ring, so this process would write under it, but \
                         `i9-admin rekey` retired it (marked it unused) after moving every value \
                         to a newer key: put the newest key first in {}, as the running \
                         processes have it",
                    ring.key(current),
                    ring.variable()
                )
            })
        })
        .collect()
}

/// This process's current keys that live processes lack: they could not read
/// (or, for the SSN hash key, find: duplicates would get in) what this process
/// writes. A new current key goes into every ring first (docs/operations.md,
/// "Rotating the data key, step by step", step 2).
fn current_key_unknown_to_live(cipher: &DataCipher, live: &[LiveProcess]) -> Vec<String> {
    let mut problems = Vec::new();
    for ring in RINGS {
        let current = ring.ids(cipher)[0];
        let without: Vec<String> = live
            .iter()
            .filter(|p| !p.keys.ring(ring).contains(&current))
            .map(ToString::to_string)
            .collect();
        if !without.is_empty() {
            problems.push(format!(
                "{} is first in the ring, so this process would write under it, but live \
                 processes do not have it in their ring and could not {} what it writes: first \
                 add key {current} to their {} (not first) and restart them, or stop them (one \
                 stopped without a clean shutdown counts as gone {} s after its last \
                 heartbeat): {}",
                ring.key(current),
                match ring {
                    Ring::Data => "read",
                    Ring::SsnHash => "find (an SSN search would miss, a duplicate get in)",
                },
                ring.variable(),
                STALE_AFTER.as_secs(),
                without.join(", ")
            ));
        }
    }
    problems
}

async fn read(pool: &PgPool) -> anyhow::Result<Vec<Recorded>> {
    sqlx::query_as!(
        Recorded,
        r#"SELECT kind, key_id, check_value, unused_since IS NOT NULL AS "unused!"
         FROM key_ring ORDER BY kind, key_id"#,
    )
    .fetch_all(pool)
    .await
    .map_err(|e| match &e {
        sqlx::Error::Database(db) if db.code().as_deref() == Some("42P01") => anyhow::anyhow!(
            "the database has no key_ring table: apply the migrations first (i9-admin migrate)"
        ),
        _ => anyhow::Error::new(e).context("reading the recorded keys"),
    })
}

/// For a database written before the key check existed.
async fn verify_against_data(pool: &PgPool, cipher: &DataCipher) -> anyhow::Result<()> {
    let wrong = |column: &str, e: DecryptError| {
        match e {
        DecryptError::UnknownKey(id) => anyhow::anyhow!(
            "{column} is encrypted under key {id}, which DATA_ENCRYPTION_KEYS lacks; {ADVICE}"
        ),
        DecryptError::Invalid => anyhow::anyhow!(
            "{} is not the key this database's data was written with (it cannot decrypt {column}); {ADVICE}",
            Ring::Data.key(1)
        ),
    }
    };
    for column in ENCRYPTED_COLUMNS {
        let sql = format!(
            "SELECT {c} FROM {t} WHERE {c} IS NOT NULL LIMIT 1",
            c = column.column,
            t = column.table
        );
        let stored: Option<Vec<u8>> = sqlx::query_scalar(&sql)
            .fetch_optional(pool)
            .await
            .with_context(|| format!("reading {} for the key check", column.name()))?;
        if let Some(ct) = stored {
            cipher
                .decrypt(column.purpose, &ct)
                .map_err(|e| wrong(&column.name(), e))?;
        }
    }
    let employee = sqlx::query!(
        r#"SELECT ssn_ciphertext AS "ssn_ciphertext!", ssn_hash AS "ssn_hash!"
         FROM employees WHERE ssn_ciphertext IS NOT NULL LIMIT 1"#,
    )
    .fetch_optional(pool)
    .await
    .context("reading employees.ssn_hash for the key check")?;
    if let Some(row) = employee {
        let (ct, hash) = (row.ssn_ciphertext, row.ssn_hash);
        let ssn = cipher
            .decrypt_ssn(Purpose::EmployeeSsn, &ct)
            .map_err(|e| wrong("employees.ssn_ciphertext", e))?;
        if !cipher.ssn_search_hashes(&ssn).contains(&hash) {
            bail!(
                "{} is not the key this database's SSN hashes were written with (employees.ssn_hash differs); {ADVICE}",
                Ring::SsnHash.key(1)
            );
        }
    }
    Ok(())
}
