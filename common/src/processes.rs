//! The process registry (docs/operations.md, "Keys and rotation"): every
//! running `i9-api` and `i9-worker` has a row in `processes`, with the key ids
//! of its two rings (never a key), so that what depends on which keys are in
//! use can see the processes that write:
//!
//! - `i9-admin rekey` does not mark a key unused while a live process has it
//!   as its current key (`common/src/rekey.rs`);
//! - a start whose ring lacks a live process's current key is refused
//!   (`common/src/key_check.rs`): it could not read what that process writes;
//! - `i9-admin keys status` lists them (`common/src/key_usage.rs`).
//!
//! A process registers after its key check ([`Registration::start`]), renews
//! its heartbeat every [`HEARTBEAT`] in a background task, and deletes its row
//! at a clean shutdown ([`Registration::end`]). A row without a heartbeat for
//! [`STALE_AFTER`] counts as gone (a crash, a lost host): whoever reads the
//! table deletes it ([`live`]), and so does the worker's purge. A process
//! whose row was deleted so (a pause, a long database outage) registers again
//! at its next heartbeat.

use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres};
use tokio::task::JoinHandle;

use crate::{crypto::DataCipher, key_check::Ring, keys::KeyId};

/// How often a process renews its heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(30);
/// A process without a heartbeat for this long counts as gone.
pub const STALE_AFTER: Duration = Duration::from_secs(90);
/// The transaction advisory lock a registration and `rekey`'s marking of
/// unused keys take, so that neither misses the other: a process that
/// registers while `rekey` decides is either seen by it, or marks its current
/// keys in use again after it.
const KEYS_LOCK: i64 = 0x0069_396b_6579_7321; // "i9keys!"

/// The key ids a process runs with, each ring's current first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyIds {
    pub data: Vec<KeyId>,
    pub hash: Vec<KeyId>,
}

impl KeyIds {
    pub fn of(cipher: &DataCipher) -> Self {
        Self {
            data: cipher.data_key_ids(),
            hash: cipher.hash_key_ids(),
        }
    }

    /// The ring's ids, the current first.
    pub fn ring(&self, ring: Ring) -> &[KeyId] {
        match ring {
            Ring::Data => &self.data,
            Ring::SsnHash => &self.hash,
        }
    }

    /// The key the process writes with.
    pub fn current(&self, ring: Ring) -> KeyId {
        self.ring(ring).first().copied().unwrap_or_default()
    }
}

/// A registered process with a recent heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveProcess {
    pub id: i64,
    /// `i9-api`, `i9-worker`.
    pub binary: String,
    pub host: String,
    pub pid: i64,
    pub started_at: DateTime<Utc>,
    /// How long ago its last heartbeat was.
    pub heartbeat_age: Duration,
    pub keys: KeyIds,
}

impl std::fmt::Display for LiveProcess {
    /// `i9-api on web-1 (pid 4242, last heartbeat 3 s ago)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} on {} (pid {}, last heartbeat {} s ago)",
            self.binary,
            self.host,
            self.pid,
            self.heartbeat_age.as_secs()
        )
    }
}

/// The processes with a heartbeat within [`STALE_AFTER`], after deleting the
/// rows of those without.
pub async fn live<'c>(
    db: impl sqlx::Acquire<'c, Database = Postgres>,
) -> anyhow::Result<Vec<LiveProcess>> {
    let mut conn = db.acquire().await?;
    sqlx::query!(
        "DELETE FROM processes WHERE heartbeat_at < now() - make_interval(secs => $1)",
        STALE_AFTER.as_secs_f64(),
    )
    .execute(&mut *conn)
    .await
    .map_err(|e| missing_table(e, "deleting the rows of stopped processes"))?;
    let rows = sqlx::query_as!(
        ProcessRow,
        r#"SELECT id, binary_name, host, pid, started_at,
                greatest(EXTRACT(EPOCH FROM now() - heartbeat_at), 0)::FLOAT8 AS "heartbeat_age_secs!",
                data_key_ids, hash_key_ids
         FROM processes ORDER BY binary_name, host, pid, id"#,
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| missing_table(e, "reading the live processes"))?;
    let ids = |v: Vec<i64>| {
        v.into_iter()
            .filter_map(|id| KeyId::try_from(id).ok())
            .collect()
    };
    Ok(rows
        .into_iter()
        .map(|row| LiveProcess {
            id: row.id,
            binary: row.binary_name,
            host: row.host,
            pid: row.pid,
            started_at: row.started_at,
            heartbeat_age: Duration::try_from_secs_f64(row.heartbeat_age_secs).unwrap_or_default(),
            keys: KeyIds {
                data: ids(row.data_key_ids),
                hash: ids(row.hash_key_ids),
            },
        })
        .collect())
}

/// A `processes` row, as [`live`] reads it.
struct ProcessRow {
    id: i64,
    binary_name: String,
    host: String,
    pid: i64,
    started_at: DateTime<Utc>,
    heartbeat_age_secs: f64,
    data_key_ids: Vec<i64>,
    hash_key_ids: Vec<i64>,
}

fn missing_table(e: sqlx::Error, doing: &'static str) -> anyhow::Error {
    match &e {
        sqlx::Error::Database(db) if db.code().as_deref() == Some("42P01") => anyhow::anyhow!(
            "the database has no processes table: apply the migrations first (i9-admin migrate)"
        ),
        _ => anyhow::Error::new(e).context(doing),
    }
}

/// Take the lock that orders registrations and `rekey`'s marking of unused
/// keys, until the end of the transaction.
pub async fn lock_keys(tx: &mut sqlx::PgConnection) -> anyhow::Result<()> {
    sqlx::query!("SELECT pg_advisory_xact_lock($1)", KEYS_LOCK)
        .execute(tx)
        .await
        .context("taking the key ring lock")?;
    Ok(())
}

/// This process's row, as registered.
#[derive(Debug, Clone)]
struct Row {
    binary: &'static str,
    host: String,
    pid: i64,
    keys: KeyIds,
}

/// Insert (or, with `id`, insert again) the row, and mark the process's
/// current keys in use: `rekey` may have marked one unused before seeing it.
async fn insert(pool: &PgPool, row: &Row, id: Option<i64>) -> anyhow::Result<i64> {
    let as_i64 = |ids: &[KeyId]| ids.iter().map(|&id| i64::from(id)).collect::<Vec<_>>();
    let mut tx = pool.begin().await?;
    lock_keys(&mut tx).await?;
    let id = sqlx::query_scalar!(
        "INSERT INTO processes (id, binary_name, host, pid, data_key_id, data_key_ids,
                                hash_key_id, hash_key_ids)
         VALUES (COALESCE($1, nextval(pg_get_serial_sequence('processes', 'id'))),
                 $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
         RETURNING id",
        id,
        row.binary,
        &row.host,
        row.pid,
        i64::from(row.keys.current(Ring::Data)),
        &as_i64(&row.keys.data),
        i64::from(row.keys.current(Ring::SsnHash)),
        &as_i64(&row.keys.hash),
    )
    .fetch_one(&mut *tx)
    .await
    .map_err(|e| missing_table(e, "registering the process"))?;
    for ring in [Ring::Data, Ring::SsnHash] {
        sqlx::query!(
            "UPDATE key_ring SET unused_since = NULL
             WHERE kind = $1 AND key_id = $2 AND unused_since IS NOT NULL",
            ring.kind(),
            i64::from(row.keys.current(ring)),
        )
        .execute(&mut *tx)
        .await
        .context("marking the current keys in use")?;
    }
    tx.commit().await?;
    Ok(id)
}

/// This process's registration: its row, and the task renewing its heartbeat.
#[derive(Debug)]
pub struct Registration {
    id: i64,
    pool: PgPool,
    heartbeat: JoinHandle<()>,
}

impl Registration {
    /// Register this process as `binary`, with the keys of `cipher`, and renew
    /// its heartbeat every `every` ([`HEARTBEAT`]; tests go faster).
    pub async fn start(
        pool: &PgPool,
        binary: &'static str,
        host: &str,
        cipher: &DataCipher,
        every: Duration,
    ) -> anyhow::Result<Self> {
        let row = Row {
            binary,
            host: host.to_owned(),
            pid: i64::from(std::process::id()),
            keys: KeyIds::of(cipher),
        };
        let id = insert(pool, &row, None).await?;
        let heartbeat = tokio::spawn(beat(pool.clone(), id, row, every));
        Ok(Self {
            id,
            pool: pool.clone(),
            heartbeat,
        })
    }

    /// The row's id in `processes`.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// Stop the heartbeat and delete the row: at a clean shutdown, once the
    /// process writes nothing more.
    pub async fn end(self) {
        self.heartbeat.abort();
        let deleted = sqlx::query!("DELETE FROM processes WHERE id = $1", self.id)
            .execute(&self.pool)
            .await;
        if let Err(e) = deleted {
            tracing::warn!(
                error = %e,
                "deleting this process's row from the registry failed; it counts as gone {} s \
                 after its last heartbeat",
                STALE_AFTER.as_secs()
            );
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

async fn beat(pool: PgPool, id: i64, row: Row, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let renewed = sqlx::query!(
            "UPDATE processes SET heartbeat_at = now() WHERE id = $1",
            id
        )
        .execute(&pool)
        .await;
        match renewed {
            Ok(r) if r.rows_affected() == 1 => {}
            Ok(_) => {
                tracing::warn!(
                    "this process's row in the process registry was gone (no heartbeat for {} s): \
                     registering again",
                    STALE_AFTER.as_secs()
                );
                if let Err(e) = insert(&pool, &row, Some(id)).await {
                    tracing::warn!(error = %e, "registering this process again failed; trying again");
                }
            }
            Err(e) => tracing::warn!(error = %e, "the process heartbeat failed; trying again"),
        }
    }
}
