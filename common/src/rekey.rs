//! `i9-admin rekey`: rewrite every value encrypted under the data key, and
//! every SSN hash, under the current keys of the rings, so the older keys can
//! be removed (docs/operations.md, "Keys and rotation").
//!
//! Safe while the API and workers run, and restartable: each column is walked
//! in id order in batches, each batch its own short transaction; a row is
//! rewritten only if it still holds the value read (a concurrent write wins,
//! and is under the current key anyway), and values already under the
//! current key are skipped, so a second run changes nothing. Once a run finds
//! no value left under an older key, that key is marked unused in `key_ring`
//! and a ring without it may start (`common/src/key_check.rs`), unless
//! something still writes or reads under it: a live process that has it as
//! its current key (`common/src/processes.rs`), or, for an SSN hash key,
//! idempotency records still replayable whose fingerprints it made
//! (`common/src/key_usage.rs`). Those are reported ([`Held`]) instead.

use anyhow::Context;
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use crate::{
    crypto::{DataCipher, DecryptError, Purpose},
    key_check::{Ring, RINGS},
    key_usage::{self, Fingerprints},
    keys::KeyId,
    processes::{self, LiveProcess},
};

/// One column encrypted under the data key.
#[derive(Debug, Clone, Copy)]
pub struct EncryptedColumn {
    pub table: &'static str,
    pub column: &'static str,
    pub purpose: Purpose,
    /// The SQL type of the table's `id`.
    pub id_type: &'static str,
}

impl EncryptedColumn {
    pub fn name(&self) -> String {
        format!("{}.{}", self.table, self.column)
    }
}

/// Every column encrypted under the data key. A new one is added here, and
/// both the start-up check and `rekey` cover it.
pub const ENCRYPTED_COLUMNS: [EncryptedColumn; 5] = [
    EncryptedColumn {
        table: "employees",
        column: "ssn_ciphertext",
        purpose: Purpose::EmployeeSsn,
        id_type: "BIGINT",
    },
    EncryptedColumn {
        table: "i9s",
        column: "ssn_ciphertext",
        purpose: Purpose::I9Ssn,
        id_type: "BIGINT",
    },
    EncryptedColumn {
        table: "oauth_clients",
        column: "signing_secret_ciphertext",
        purpose: Purpose::SigningSecret,
        id_type: "BIGINT",
    },
    EncryptedColumn {
        table: "previous_signing_secrets",
        column: "secret_ciphertext",
        purpose: Purpose::SigningSecret,
        id_type: "BIGINT",
    },
    EncryptedColumn {
        table: "i9_requests",
        column: "section1_token_ciphertext",
        purpose: Purpose::Section1Token,
        id_type: "UUID",
    },
];

/// The SSN hash column, re-hashed under the current hash key.
pub const SSN_HASH_COLUMN: &str = "employees.ssn_hash";

pub const DEFAULT_BATCH: i64 = 500;

/// What one column's pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnReport {
    /// `table.column`.
    pub name: String,
    /// Values rewritten under the current key.
    pub changed: u64,
    /// Rows that could not be rewritten (`table id: why`): a value that does
    /// not decrypt with any key of the ring, or an SSN another employee holds.
    pub failed: Vec<String>,
}

/// What a run did, and what it found left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub columns: Vec<ColumnReport>,
    /// Values still not under the current key after the run (written
    /// meanwhile by a process with an older current key, or failed), by column.
    pub remaining: Vec<(String, i64)>,
    /// Data key ids that no stored value uses any more (now or before).
    pub unused_data_keys: Vec<KeyId>,
    pub unused_hash_keys: Vec<KeyId>,
    /// Older keys not marked unused because something still uses them.
    pub held: Vec<Held>,
}

/// An older key still in use other than by a stored value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub ring: Ring,
    pub key: KeyId,
    pub by: HeldBy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeldBy {
    /// Live processes have it as their current key: they write under it.
    Processes(Vec<LiveProcess>),
    /// Idempotency records still replayable have fingerprints under it (an
    /// SSN hash key): a retry matches its record only while the ring has it.
    Idempotency(Fingerprints),
}

impl Report {
    pub fn changed(&self, name: &str) -> Option<u64> {
        self.columns
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.changed)
    }

    pub fn complete(&self) -> bool {
        self.remaining.is_empty()
    }

    /// Whether every older key is unused: nothing left under it, no live
    /// process writing under it, no replayable record needing it.
    pub fn finished(&self) -> bool {
        self.complete() && self.held.is_empty()
    }
}

/// Rewrite every value under the current keys, `batch` rows per transaction.
/// `progress` hears about each column as it is done.
pub async fn run(
    pool: &PgPool,
    cipher: &DataCipher,
    batch: i64,
    mut progress: impl FnMut(&ColumnReport),
) -> anyhow::Result<Report> {
    let mut columns = Vec::new();
    for column in ENCRYPTED_COLUMNS {
        let report = reencrypt_column(pool, cipher, column, batch).await?;
        progress(&report);
        columns.push(report);
    }
    let report = rehash_ssns(pool, cipher, batch).await?;
    progress(&report);
    columns.push(report);

    let remaining = remaining(pool, cipher).await?;
    let (unused, held) = mark_unused(pool, cipher, &remaining).await?;
    let [unused_data_keys, unused_hash_keys] = unused;
    Ok(Report {
        columns,
        remaining,
        unused_data_keys,
        unused_hash_keys,
        held,
    })
}

/// One row's rewrite: the statement's binds are `$1` id, `$2` old value, `$3`
/// new value, and for SSN hashes `$4` the SSN's hashes under every key.
struct Rewrite {
    id: String,
    old: Vec<u8>,
    new: Vec<u8>,
    check: Option<Vec<Vec<u8>>>,
}

async fn reencrypt_column(
    pool: &PgPool,
    cipher: &DataCipher,
    column: EncryptedColumn,
    batch: i64,
) -> anyhow::Result<ColumnReport> {
    let EncryptedColumn {
        table,
        column: col,
        id_type,
        purpose,
    } = column;
    let select = format!(
        "SELECT id::TEXT, {col} FROM {table}
         WHERE {col} IS NOT NULL AND substring({col} FROM 1 FOR 5) <> $1
           AND ($2::TEXT IS NULL OR id > $2::{id_type})
         ORDER BY id LIMIT $3"
    );
    let update = format!("UPDATE {table} SET {col} = $3 WHERE id = $1::{id_type} AND {col} = $2");
    let mut report = ColumnReport {
        name: column.name(),
        changed: 0,
        failed: Vec::new(),
    };
    let mut after: Option<String> = None;
    loop {
        let rows: Vec<(String, Vec<u8>)> = sqlx::query_as(&select)
            .bind(cipher.current_prefix().to_vec())
            .bind(&after)
            .bind(batch)
            .fetch_all(pool)
            .await
            .with_context(|| format!("reading {}", report.name))?;
        let Some((last, _)) = rows.last() else { break };
        after = Some(last.clone());
        let mut rewrites = Vec::with_capacity(rows.len());
        for (id, old) in rows {
            match cipher.reencrypt(purpose, &old) {
                Ok(Some(new)) => rewrites.push(Rewrite {
                    id,
                    old,
                    new,
                    check: None,
                }),
                Ok(None) => {}
                Err(e) => report.failed.push(format!("{table} {id}: {}", why(e))),
            }
        }
        apply(pool, &update, rewrites, &mut report).await?;
    }
    Ok(report)
}

/// An employee's SSN hash not under the current hash key, and the SSN it
/// hashes (encrypted).
struct SsnHashRow {
    id: i64,
    ssn_hash: Vec<u8>,
    ssn_ciphertext: Option<Vec<u8>>,
}

async fn rehash_ssns(
    pool: &PgPool,
    cipher: &DataCipher,
    batch: i64,
) -> anyhow::Result<ColumnReport> {
    let mut report = ColumnReport {
        name: SSN_HASH_COLUMN.to_owned(),
        changed: 0,
        failed: Vec::new(),
    };
    let mut after: Option<i64> = None;
    loop {
        let rows = sqlx::query_as!(
            SsnHashRow,
            r#"SELECT id, ssn_hash AS "ssn_hash!", ssn_ciphertext FROM employees
             WHERE ssn_hash IS NOT NULL AND substring(ssn_hash FROM 1 FOR 5) <> $1
               AND ($2::BIGINT IS NULL OR id > $2)
             ORDER BY id LIMIT $3"#,
            cipher.current_hash_prefix().to_vec(),
            after,
            batch,
        )
        .fetch_all(pool)
        .await
        .context("reading employees.ssn_hash")?;
        let Some(last) = rows.last() else {
            break;
        };
        after = Some(last.id);
        let mut rewrites = Vec::with_capacity(rows.len());
        for SsnHashRow {
            id,
            ssn_hash: old,
            ssn_ciphertext: ct,
        } in rows
        {
            let ssn = ct
                .ok_or(DecryptError::Invalid)
                .and_then(|ct| cipher.decrypt_ssn(Purpose::EmployeeSsn, &ct));
            match ssn {
                Ok(ssn) => rewrites.push(Rewrite {
                    id: id.to_string(),
                    old,
                    new: cipher.ssn_search_hash(&ssn),
                    check: Some(cipher.ssn_search_hashes(&ssn)),
                }),
                Err(e) => report
                    .failed
                    .push(format!("employees {id}: the SSN {}", why(e))),
            }
        }
        apply(
            pool,
            "UPDATE employees SET ssn_hash = $3, ssn_hash_check = $4
             WHERE id = $1::BIGINT AND ssn_hash = $2",
            rewrites,
            &mut report,
        )
        .await?;
    }
    Ok(report)
}

fn why(e: DecryptError) -> String {
    match e {
        DecryptError::UnknownKey(id) => format!("is under data key {id}, which the ring lacks"),
        DecryptError::Invalid => "does not decrypt with any key of the ring".to_owned(),
    }
}

/// One batch in one transaction. If a row fails (an SSN another employee
/// holds), the batch is rolled back and done row by row, the failures reported.
async fn apply(
    pool: &PgPool,
    sql: &str,
    rewrites: Vec<Rewrite>,
    report: &mut ColumnReport,
) -> anyhow::Result<()> {
    if rewrites.is_empty() {
        return Ok(());
    }
    let mut tx = pool.begin().await?;
    let mut changed = 0;
    let mut failed = false;
    for r in &rewrites {
        match execute(&mut tx, sql, r).await {
            Ok(n) => changed += n,
            Err(sqlx::Error::Database(_)) => {
                failed = true;
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    if !failed {
        tx.commit().await?;
        report.changed += changed;
        return Ok(());
    }
    tx.rollback().await?;
    for r in &rewrites {
        let mut tx = pool.begin().await?;
        match execute(&mut tx, sql, r).await {
            Ok(n) => {
                tx.commit().await?;
                report.changed += n;
            }
            Err(sqlx::Error::Database(db)) => {
                let table = report.name.split('.').next().unwrap_or_default();
                let why = match db.constraint() {
                    Some("employees_ssn_hash_key") => other_holders(pool, r).await?,
                    _ => db.message().to_owned(),
                };
                report.failed.push(format!("{table} {}: {why}", r.id));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Why `r`, an SSN hash, failed on the uniqueness check: the other employees
/// holding the same SSN, by id (never the SSN).
async fn other_holders(pool: &PgPool, r: &Rewrite) -> anyhow::Result<String> {
    let others = sqlx::query_scalar!(
        "SELECT id FROM employees WHERE ssn_hash = ANY ($1) AND id <> $2::TEXT::BIGINT ORDER BY id",
        r.check.as_deref().unwrap_or_default(),
        &r.id,
    )
    .fetch_all(pool)
    .await
    .context("finding the other holder of an SSN")?;
    let advice = "resolve the duplicate by hand";
    Ok(match others.as_slice() {
        [] => format!("another employee holds the same SSN: {advice}"),
        [one] => format!("employee {one} holds the same SSN: {advice}"),
        many => {
            let ids: Vec<String> = many.iter().map(ToString::to_string).collect();
            format!("employees {} hold the same SSN: {advice}", ids.join(", "))
        }
    })
}

async fn execute(
    tx: &mut Transaction<'_, Postgres>,
    sql: &str,
    r: &Rewrite,
) -> Result<u64, sqlx::Error> {
    let mut q = sqlx::query(sql).bind(&r.id).bind(&r.old).bind(&r.new);
    if let Some(check) = &r.check {
        q = q.bind(check);
    }
    Ok(q.execute(&mut **tx).await?.rows_affected())
}

/// Values not under the current keys, by column (only columns with some).
pub async fn remaining(pool: &PgPool, cipher: &DataCipher) -> anyhow::Result<Vec<(String, i64)>> {
    let mut left = Vec::new();
    for c in ENCRYPTED_COLUMNS {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM {t} WHERE {c} IS NOT NULL AND substring({c} FROM 1 FOR 5) <> $1",
            t = c.table,
            c = c.column
        ))
        .bind(cipher.current_prefix().to_vec())
        .fetch_one(pool)
        .await?;
        if n > 0 {
            left.push((c.name(), n));
        }
    }
    let n = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM employees
         WHERE ssn_hash IS NOT NULL AND substring(ssn_hash FROM 1 FOR 5) <> $1"#,
        cipher.current_hash_prefix().to_vec(),
    )
    .fetch_one(pool)
    .await?;
    if n > 0 {
        left.push((SSN_HASH_COLUMN.to_owned(), n));
    }
    Ok(left)
}

/// Mark every older key of each ring unused that nothing uses: for the data
/// ring once no encrypted column has a value left under it, for the SSN hash
/// ring once no SSN hash has; and in either ring only if no live process has
/// it as its current key, and for the hash ring only if no replayable
/// idempotency record has a fingerprint under it. Returns the ids unused now
/// (marked by this run or before) of each ring, and the keys held.
async fn mark_unused(
    pool: &PgPool,
    cipher: &DataCipher,
    remaining: &[(String, i64)],
) -> anyhow::Result<([Vec<KeyId>; 2], Vec<Held>)> {
    let mut tx = pool.begin().await?;
    // A process registering now waits, or is seen (common/src/processes.rs).
    processes::lock_keys(&mut tx).await?;
    let live = processes::live(&mut *tx).await?;
    let fingerprints = key_usage::replayable_fingerprints(&mut *tx).await?;
    let mut held = Vec::new();
    let mut unused = [Vec::new(), Vec::new()];
    for (ring, unused) in RINGS.into_iter().zip(&mut unused) {
        let current = ring.ids(cipher)[0];
        let mut writers: Vec<KeyId> = live
            .iter()
            .map(|p| p.keys.current(ring))
            .filter(|&id| id != current)
            .collect();
        writers.sort_unstable();
        writers.dedup();
        for &key in &writers {
            let by = live
                .iter()
                .filter(|p| p.keys.current(ring) == key)
                .cloned()
                .collect();
            held.push(Held {
                ring,
                key,
                by: HeldBy::Processes(by),
            });
        }
        if ring == Ring::SsnHash {
            for f in &fingerprints {
                if let Some(key) = f.key.filter(|&k| k != current) {
                    held.push(Held {
                        ring,
                        key,
                        by: HeldBy::Idempotency(f.clone()),
                    });
                }
            }
        }
        let keep: Vec<i64> = held
            .iter()
            .filter(|h| h.ring == ring)
            .map(|h| h.key)
            .chain([current])
            .map(i64::from)
            .collect();
        let done = match ring {
            Ring::Data => remaining.iter().all(|(name, _)| name == SSN_HASH_COLUMN),
            Ring::SsnHash => !remaining.iter().any(|(name, _)| name == SSN_HASH_COLUMN),
        };
        if done {
            *unused = mark(&mut tx, ring, &keep).await?;
        }
    }
    tx.commit().await?;
    Ok((unused, held))
}

/// Mark every recorded key of `ring` but `keep` unused; returns the ids
/// unused now (marked here or before).
async fn mark(tx: &mut PgConnection, ring: Ring, keep: &[i64]) -> anyhow::Result<Vec<KeyId>> {
    let ids = sqlx::query_scalar!(
        "WITH m AS (UPDATE key_ring SET unused_since = now()
                    WHERE kind = $1 AND key_id <> ALL ($2) AND unused_since IS NULL
                    RETURNING key_id)
         SELECT key_id FROM key_ring
         WHERE kind = $1 AND key_id <> ALL ($2)
           AND (unused_since IS NOT NULL OR key_id IN (SELECT key_id FROM m))
         ORDER BY key_id",
        ring.kind(),
        keep,
    )
    .fetch_all(tx)
    .await
    .context("marking unused keys")?;
    Ok(ids
        .into_iter()
        .filter_map(|id| KeyId::try_from(id).ok())
        .collect())
}
