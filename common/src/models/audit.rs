//! The audit log: who did what to which record, when. Every write, every
//! read of a full social security number and every search by one is
//! recorded here, in the transaction of what it records. Entries name
//! fields, never their values.

use serde_json::Value;
use sqlx::PgExecutor;

/// Who acted: a user through an OAuth client, a user on a page (no client),
/// the employee on the Section 1 page (neither), or `i9-admin` (neither).
#[derive(Debug, Clone, Default)]
pub struct Actor {
    pub user_id: Option<i64>,
    pub client_id: Option<i64>,
    /// The request's id (`x-request-id`), when there is a request.
    pub request_id: Option<String>,
}

/// One audit entry: `action` (e.g. `employee.create`, `i9.section2`) on the
/// record `resource_type` `resource_id`, with `detail` (field names, choices;
/// never personal data).
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub action: &'a str,
    pub resource_type: &'a str,
    pub resource_id: Option<String>,
    pub detail: Option<Value>,
}

impl<'a> Entry<'a> {
    pub fn new(action: &'a str, resource_type: &'a str, resource_id: impl ToString) -> Self {
        Self {
            action,
            resource_type,
            resource_id: Some(resource_id.to_string()),
            detail: None,
        }
    }

    /// An entry about no single record (a seed run, a search).
    pub fn about_none(action: &'a str, resource_type: &'a str) -> Self {
        Self {
            action,
            resource_type,
            resource_id: None,
            detail: None,
        }
    }

    pub fn detail(mut self, detail: Value) -> Self {
        self.detail = Some(detail);
        self
    }
}

/// Write `entry` by `actor`.
pub async fn record<'e>(
    db: impl PgExecutor<'e>,
    actor: &Actor,
    entry: Entry<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO audit_log (user_id, client_id, action, resource_type, resource_id, request_id, detail)
         VALUES ($1, $2, $3, $4, $5, $6, COALESCE($7, '{}'::JSONB))",
        actor.user_id,
        actor.client_id,
        entry.action,
        entry.resource_type,
        entry.resource_id,
        actor.request_id,
        entry.detail,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// [`record`] as a part of a larger statement: `, name AS (INSERT ...
/// SELECT ... FROM from)` audits `action` on the record whose id the CTE
/// `from` returns (a create of one statement).
#[allow(clippy::too_many_arguments)]
pub fn push_cte(
    q: &mut sqlx::QueryBuilder<'_, sqlx::Postgres>,
    name: &str,
    actor: &Actor,
    action: &str,
    resource_type: &str,
    from: &str,
    detail: Option<Value>,
) {
    q.push(", ").push(name).push(" AS (INSERT INTO audit_log (user_id, client_id, action, resource_type, resource_id, request_id, detail) SELECT ");
    q.push_bind(actor.user_id).push(", ");
    q.push_bind(actor.client_id).push(", ");
    q.push_bind(action.to_owned()).push(", ");
    q.push_bind(resource_type.to_owned()).push(", ");
    q.push(from).push(".id::TEXT, ");
    q.push_bind(actor.request_id.clone()).push(", COALESCE(");
    q.push_bind(detail)
        .push(", '{}'::JSONB) FROM ")
        .push(from)
        .push(")");
}

/// Write one entry `action` for each of `resource_ids` (e.g. the full SSNs a
/// list showed), in one statement.
pub async fn record_each<'e>(
    db: impl PgExecutor<'e>,
    actor: &Actor,
    action: &str,
    resource_type: &str,
    resource_ids: &[i64],
) -> Result<(), sqlx::Error> {
    if resource_ids.is_empty() {
        return Ok(());
    }
    let ids: Vec<String> = resource_ids.iter().map(i64::to_string).collect();
    sqlx::query!(
        "INSERT INTO audit_log (user_id, client_id, action, resource_type, resource_id, request_id)
         SELECT $1, $2, $3, $4, unnest($5::TEXT[]), $6",
        actor.user_id,
        actor.client_id,
        action,
        resource_type,
        &ids[..],
        actor.request_id,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The API's name of a column an audit entry names (`detail.fields`): the
/// history of a record (api/src/routes/history.rs) and the inspection PDF
/// (common/src/inspection/) name fields alike.
pub fn api_field(column: &str) -> String {
    match column {
        "ssn" => return "socialSecurityNumber".into(),
        "legal_entity_id" => return "legalEntity".into(),
        _ => {}
    }
    let mut out = String::with_capacity(column.len());
    let mut upper = false;
    for c in column.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}
