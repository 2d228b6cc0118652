//! The audit log: every write, every read of a full social security number,
//! and every search by one.

use sqlx::PgExecutor;

use crate::auth::Caller;

/// Record that `caller` read the full SSN of each of `resource_ids`.
pub async fn record_ssn_reads<'e>(
    db: impl PgExecutor<'e>,
    caller: &Caller,
    resource_type: &str,
    resource_ids: &[i64],
) -> Result<(), sqlx::Error> {
    if resource_ids.is_empty() {
        return Ok(());
    }
    let ids: Vec<String> = resource_ids.iter().map(i64::to_string).collect();
    sqlx::query(
        "INSERT INTO audit_log (user_id, client_id, action, resource_type, resource_id, request_id)
         SELECT $1, $2, 'ssn.read', $3, unnest($4::TEXT[]), $5",
    )
    .bind(caller.user_id)
    .bind(caller.client_id)
    .bind(resource_type)
    .bind(&ids)
    .bind(&caller.request_id)
    .execute(db)
    .await?;
    Ok(())
}

/// Record that `caller` searched employees by social security number and
/// found `matched` (never the number itself).
pub async fn record_ssn_search<'e>(
    db: impl PgExecutor<'e>,
    caller: &Caller,
    matched: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit_log (user_id, client_id, action, resource_type, request_id, detail)
         VALUES ($1, $2, 'ssn.search', 'employee', $3, jsonb_build_object('matched', $4::BIGINT))",
    )
    .bind(caller.user_id)
    .bind(caller.client_id)
    .bind(&caller.request_id)
    .bind(matched)
    .execute(db)
    .await?;
    Ok(())
}

/// Record that a write by `caller` was refused because `holder` already has
/// the SSN it carried (never the number itself). Written outside the write's
/// transaction, which rolls back.
pub async fn record_ssn_conflict<'e>(
    db: impl PgExecutor<'e>,
    caller: &Caller,
    holder: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit_log (user_id, client_id, action, resource_type, resource_id, request_id)
         VALUES ($1, $2, 'ssn.conflict', 'employee', $3, $4)",
    )
    .bind(caller.user_id)
    .bind(caller.client_id)
    .bind(holder.to_string())
    .bind(&caller.request_id)
    .execute(db)
    .await?;
    Ok(())
}
