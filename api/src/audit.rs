//! The audit entries of reads: every read of a full social security number,
//! and every search by one. Writes audit themselves in their operation
//! (`i9_common::models`), which also holds how an entry is written.

use i9_common::models::audit::{self, Entry};
use sqlx::PgExecutor;

use crate::auth::Caller;

/// Record that `caller` read the full SSN of each of `resource_ids`.
pub async fn record_ssn_reads<'e>(
    db: impl PgExecutor<'e>,
    caller: &Caller,
    resource_type: &str,
    resource_ids: &[i64],
) -> Result<(), sqlx::Error> {
    audit::record_each(db, &caller.actor(), "ssn.read", resource_type, resource_ids).await
}

/// Record that `caller` searched employees by social security number and
/// found `matched` (never the number itself).
pub async fn record_ssn_search<'e>(
    db: impl PgExecutor<'e>,
    caller: &Caller,
    matched: i64,
) -> Result<(), sqlx::Error> {
    let entry = Entry::about_none("ssn.search", "employee")
        .detail(serde_json::json!({ "matched": matched }));
    audit::record(db, &caller.actor(), entry).await
}

/// Record that a write by `caller` was refused because `holder` already has
/// the SSN it carried (never the number itself). Written outside the write's
/// transaction, which rolls back.
pub async fn record_ssn_conflict<'e>(
    db: impl PgExecutor<'e>,
    caller: &Caller,
    holder: i64,
) -> Result<(), sqlx::Error> {
    audit::record(
        db,
        &caller.actor(),
        Entry::new("ssn.conflict", "employee", holder),
    )
    .await
}
