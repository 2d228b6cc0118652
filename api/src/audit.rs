//! The audit log: every write, and every read of a full social security number.

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
