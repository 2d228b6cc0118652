//! Which key ids are in use, and by what (docs/operations.md, "Keys and
//! rotation"): the stored values of every encrypted column and of the SSN
//! hashes, counted by the key id their prefix names; the idempotency records
//! still replayable, by the hash key of their fingerprint; the keys recorded
//! in `key_ring`; and the live processes (`common/src/processes.rs`). What
//! `i9-admin keys status` prints, and what `i9-admin rekey` checks before it
//! marks an SSN hash key unused. Key ids and counts only, never a value.

use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres};

use crate::{
    config::IDEMPOTENCY_WINDOW,
    crypto::{DataCipher, PREFIX_LEN, VERSIONED_HASH_LEN},
    key_check::{Ring, RINGS},
    keys::KeyId,
    processes::{self, LiveProcess},
    rekey::{ENCRYPTED_COLUMNS, SSN_HASH_COLUMN},
};

/// The column of the idempotency records' request fingerprints.
pub const FINGERPRINT_COLUMN: &str = "idempotency_keys.request_hash";

/// One column's stored values, by the key id they name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnUsage {
    /// `table.column`.
    pub column: String,
    /// Values per key id, by id; `None`: values in no format that names a key.
    pub by_key: Vec<(Option<KeyId>, i64)>,
}

impl ColumnUsage {
    /// Values under key `id`.
    pub fn under(&self, id: KeyId) -> i64 {
        self.count(Some(id))
    }

    /// Values that name no key (not written by this service's formats).
    pub fn unreadable(&self) -> i64 {
        self.count(None)
    }

    fn count(&self, id: Option<KeyId>) -> i64 {
        self.by_key
            .iter()
            .filter(|(k, _)| *k == id)
            .map(|(_, n)| n)
            .sum()
    }

    pub fn key_ids(&self) -> impl Iterator<Item = KeyId> + '_ {
        self.by_key.iter().filter_map(|(k, _)| *k)
    }

    /// Counts of groups of values, summed per key id.
    fn of(column: String, groups: Vec<(Option<KeyId>, i64)>) -> Self {
        let mut by_key: Vec<(Option<KeyId>, i64)> = Vec::new();
        for (key, n) in groups {
            match by_key.iter_mut().find(|(k, _)| *k == key) {
                Some((_, total)) => *total += n,
                None => by_key.push((key, n)),
            }
        }
        by_key.sort_unstable();
        Self { column, by_key }
    }
}

/// Every encrypted column's values, by data key id ([`DataCipher::key_id_of`]).
pub async fn encrypted_columns(
    pool: &PgPool,
    cipher: &DataCipher,
) -> anyhow::Result<Vec<ColumnUsage>> {
    // A value written now begins with the version that carries a key id, then
    // the id; any other version names its key by its first byte.
    let keyed = cipher.current_prefix()[..1].to_vec();
    let mut all = Vec::new();
    for c in ENCRYPTED_COLUMNS {
        let groups: Vec<(Vec<u8>, i64)> = sqlx::query_as(&format!(
            "SELECT CASE WHEN substring({c} FROM 1 FOR 1) = $1 THEN substring({c} FROM 1 FOR $2)
                         ELSE substring({c} FROM 1 FOR 1) END AS head,
                    count(*)
             FROM {t} WHERE {c} IS NOT NULL GROUP BY 1",
            c = c.column,
            t = c.table
        ))
        .bind(&keyed)
        .bind(PREFIX_LEN as i32)
        .fetch_all(pool)
        .await
        .with_context(|| format!("counting {} by key", c.name()))?;
        all.push(ColumnUsage::of(
            c.name(),
            groups
                .into_iter()
                .map(|(head, n)| (DataCipher::key_id_of(&head), n))
                .collect(),
        ));
    }
    Ok(all)
}

/// SSN hashes of one length and (for the versioned length) one prefix.
struct HashShape {
    len: i32,
    head: Vec<u8>,
    n: i64,
}

/// Replayable fingerprints of one length and (for the versioned length) one
/// prefix, and when the youngest of them stops being replayable.
struct FingerprintShape {
    len: i32,
    head: Vec<u8>,
    records: i64,
    last_expires: DateTime<Utc>,
}

/// A `key_ring` row.
struct KeyRingRow {
    kind: String,
    key_id: i64,
    check_value: Vec<u8>,
    recorded_at: DateTime<Utc>,
    unused_since: Option<DateTime<Utc>>,
}

/// The SSN hashes, by hash key id ([`DataCipher::hash_key_id_of`]).
pub async fn ssn_hashes(pool: &PgPool) -> anyhow::Result<ColumnUsage> {
    // Grouped by length, and by the prefix of those of the versioned length.
    let groups = sqlx::query_as!(
        HashShape,
        r#"SELECT length(ssn_hash) AS "len!",
                  CASE WHEN length(ssn_hash) = $1 THEN substring(ssn_hash FROM 1 FOR $2)
                       ELSE ''::BYTEA END AS "head!",
                  count(*) AS "n!"
           FROM employees WHERE ssn_hash IS NOT NULL GROUP BY 1, 2"#,
        VERSIONED_HASH_LEN as i32,
        PREFIX_LEN as i32,
    )
    .fetch_all(pool)
    .await
    .context("counting employees.ssn_hash by key")?;
    Ok(ColumnUsage::of(
        SSN_HASH_COLUMN.to_owned(),
        groups
            .into_iter()
            .map(|g| {
                let len = usize::try_from(g.len).unwrap_or_default();
                (DataCipher::hash_key_id_from(len, &g.head), g.n)
            })
            .collect(),
    ))
}

/// Idempotency records still replayable (younger than the 24-hour window)
/// whose fingerprint was made under one hash key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprints {
    /// The hash key; `None`: fingerprints under no key (a bare SHA-256, made
    /// before fingerprints were keyed).
    pub key: Option<KeyId>,
    pub records: i64,
    /// When the youngest of them stops being replayable.
    pub last_expires: DateTime<Utc>,
}

/// The replayable idempotency records, by the hash key of their fingerprint
/// ([`DataCipher::fingerprint_key_id_from`]). A replay of one matches only
/// while the ring holds that key (api/src/idempotency.rs).
pub async fn replayable_fingerprints<'c>(
    db: impl sqlx::Acquire<'c, Database = Postgres>,
) -> anyhow::Result<Vec<Fingerprints>> {
    let mut conn = db.acquire().await?;
    // Grouped as the SSN hashes are ([`ssn_hashes`]).
    let groups = sqlx::query_as!(
        FingerprintShape,
        r#"SELECT length(request_hash) AS "len!",
                  CASE WHEN length(request_hash) = $1 THEN substring(request_hash FROM 1 FOR $2)
                       ELSE ''::BYTEA END AS "head!",
                  count(*) AS "records!",
                  max(created_at) + make_interval(secs => $3) AS "last_expires!"
           FROM idempotency_keys WHERE created_at >= now() - make_interval(secs => $3)
           GROUP BY 1, 2"#,
        VERSIONED_HASH_LEN as i32,
        PREFIX_LEN as i32,
        IDEMPOTENCY_WINDOW.as_secs_f64(),
    )
    .fetch_all(&mut *conn)
    .await
    .context("counting idempotency_keys.request_hash by key")?;
    let mut all: Vec<Fingerprints> = Vec::new();
    for g in groups {
        let (records, last_expires) = (g.records, g.last_expires);
        let len = usize::try_from(g.len).unwrap_or_default();
        let key = DataCipher::fingerprint_key_id_from(len, &g.head);
        match all.iter_mut().find(|f| f.key == key) {
            Some(f) => {
                f.records += records;
                f.last_expires = f.last_expires.max(last_expires);
            }
            None => all.push(Fingerprints {
                key,
                records,
                last_expires,
            }),
        }
    }
    all.sort_unstable_by_key(|f| f.key);
    Ok(all)
}

/// A key recorded in `key_ring`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedKey {
    pub ring: Ring,
    pub id: KeyId,
    pub recorded_at: DateTime<Utc>,
    /// Set by `rekey` once nothing uses the key.
    pub unused_since: Option<DateTime<Utc>>,
    /// Whether this environment's key of that id is the recorded one; `None`
    /// when its ring lacks the id.
    pub matches: Option<bool>,
}

/// What `i9-admin keys status` shows.
#[derive(Debug, Clone)]
pub struct Status {
    pub recorded: Vec<RecordedKey>,
    /// The encrypted columns (data keys).
    pub columns: Vec<ColumnUsage>,
    /// `employees.ssn_hash` (SSN hash keys).
    pub ssn_hashes: ColumnUsage,
    pub fingerprints: Vec<Fingerprints>,
    pub processes: Vec<LiveProcess>,
}

impl Status {
    /// The key ids to show for `ring`: those of `cipher`'s ring (the current
    /// first), then any other recorded or used, by id.
    pub fn key_ids(&self, ring: Ring, cipher: &DataCipher) -> Vec<KeyId> {
        let mut ids = ring.ids(cipher);
        let mut others: Vec<KeyId> = self
            .recorded
            .iter()
            .filter(|k| k.ring == ring)
            .map(|k| k.id)
            .chain(match ring {
                Ring::Data => self
                    .columns
                    .iter()
                    .flat_map(ColumnUsage::key_ids)
                    .collect::<Vec<_>>(),
                Ring::SsnHash => self
                    .ssn_hashes
                    .key_ids()
                    .chain(self.fingerprints.iter().filter_map(|f| f.key))
                    .collect(),
            })
            .chain(
                self.processes
                    .iter()
                    .flat_map(|p| p.keys.ring(ring).to_vec()),
            )
            .filter(|id| !ids.contains(id))
            .collect();
        others.sort_unstable();
        others.dedup();
        ids.extend(others);
        ids
    }

    pub fn recorded(&self, ring: Ring, id: KeyId) -> Option<&RecordedKey> {
        self.recorded.iter().find(|k| k.ring == ring && k.id == id)
    }

    /// The replayable idempotency records under hash key `id`.
    pub fn fingerprints_under(&self, id: KeyId) -> Option<&Fingerprints> {
        self.fingerprints.iter().find(|f| f.key == Some(id))
    }
}

/// Gather the [`Status`]; `cipher` is the environment's rings.
pub async fn status(pool: &PgPool, cipher: &DataCipher) -> anyhow::Result<Status> {
    let rows = sqlx::query_as!(
        KeyRingRow,
        "SELECT kind, key_id, check_value, recorded_at, unused_since
             FROM key_ring ORDER BY kind, key_id",
    )
    .fetch_all(pool)
    .await
    .context("reading key_ring (apply the migrations first: i9-admin migrate)")?;
    let recorded = rows
        .into_iter()
        .filter_map(|row| {
            let ring = RINGS.into_iter().find(|r| r.kind() == row.kind)?;
            let id = KeyId::try_from(row.key_id).ok()?;
            Some(RecordedKey {
                ring,
                id,
                recorded_at: row.recorded_at,
                unused_since: row.unused_since,
                matches: ring.matches(cipher, id, &row.check_value),
            })
        })
        .collect();
    Ok(Status {
        recorded,
        columns: encrypted_columns(pool, cipher).await?,
        ssn_hashes: ssn_hashes(pool).await?,
        fingerprints: replayable_fingerprints(pool).await?,
        processes: processes::live(pool).await?,
    })
}
