//! The audit history of one record: `GET /v1/employees/{id}/history` and
//! `GET /v1/i9s/{id}/history` (docs/api.md, "History of a record"). The
//! record's audit log entries, newest first, paged: when, what, who, the
//! request id, the names of the fields written, and for a legal hold's
//! entries the hold (its id and what it is on). An I-9's history holds the
//! entries of its E-Verify cases too (`everify.*`, written on the case:
//! docs/everify.md, "Audit"), each naming its case; an employee's holds its
//! own entries only, not its I-9s' (nor so their cases'). Never a value: the entries'
//! other details (a park reason, an attestation, a partner's candidate id, a
//! hold's reason) are not shown.
//!
//! Who may read it: besides the record's own read permission (1 or 3) and
//! its visibility, permission 12 (see full social security numbers). The
//! history says who read a record's full number and when; it is for the
//! people trusted with those numbers. A partner client's token never
//! reaches it (`auth::partner_reaches`).

use axum::{
    extract::{RawQuery, State},
    response::Response,
};
use chrono::{DateTime, Utc};
use i9_common::{
    domain::{Permission, Scope},
    models::audit::api_field,
};
use serde::Serialize;
use utoipa::ToSchema;

use super::{employees::periods::Paging, i9s, Id};
use crate::{
    auth::Caller,
    error::{ApiResult, Problem},
    format,
    list::{Format, ListQuery, ListResponse},
    state::AppState,
};

/// One audit entry of the record.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// When it happened (UTC).
    #[serde(serialize_with = "format::timestamp")]
    #[schema(value_type = String, example = "2026-11-22T14:03:07.123456")]
    pub at: Option<DateTime<Utc>>,
    /// What happened, e.g. `employee.update`, `ssn.read`, `i9.section2`
    /// (docs/api.md, "History of a record", lists them).
    pub action: String,
    pub actor: HistoryActor,
    /// The `x-request-id` of the request that did it; `null` for the system.
    pub request_id: Option<String>,
    /// The names of the fields written, as the API names them; never their
    /// values. `[]` when the entry names none (a read, a step).
    pub fields: Vec<String>,
    /// For `legal_hold.set` and `legal_hold.lift`: the hold set or lifted
    /// (`GET /v1/legal-holds/{id}`); `null` for every other action.
    pub legal_hold: Option<HistoryHold>,
    /// For the entries of an E-Verify case of the I-9 (`everify.*`): the
    /// case's id (`GET /v1/everify-cases/{id}`); `null` for every other entry.
    pub everify_case_id: Option<i64>,
}

/// The legal hold a `legal_hold.set` or `legal_hold.lift` entry is about
/// (docs/retention.md, "Legal holds"): ids only, never the reason.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryHold {
    /// The hold's id.
    pub id: i64,
    /// What the hold is on: `employee` or `legalEntity`.
    #[schema(example = "employee")]
    pub on: String,
}

/// Who acted.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryActor {
    /// `user` (a user, through an API client), `section1Link` (the
    /// employee, through the Section 1 link: no account), or `system` (the
    /// service itself or its operator's `i9-admin`).
    #[schema(value_type = String, example = "user")]
    pub kind: &'static str,
    /// The user's id (`/v1/users/{id}`), for `user`.
    pub user_id: Option<i64>,
    /// The user's login, for `user`.
    pub login: Option<String>,
    /// The OAuth client's `client_id` the user came through, for `user`.
    pub client_id: Option<String>,
}

/// An audit entry as read.
struct Row {
    occurred_at: DateTime<Utc>,
    action: String,
    user_id: Option<i64>,
    login: Option<String>,
    client: Option<String>,
    request_id: Option<String>,
    fields: Vec<String>,
    legal_hold_id: Option<i64>,
    resource_type: String,
    resource_id: String,
}

impl From<Row> for HistoryEntry {
    fn from(r: Row) -> Self {
        // The employee on the Section 1 page acts through a request, without
        // an account; `i9-admin` and the workers act without a request.
        let kind = match (r.user_id, &r.request_id) {
            (Some(_), _) => "user",
            (None, Some(_)) => "section1Link",
            (None, None) => "system",
        };
        let everify_case_id = match r.resource_type.as_str() {
            "everify_case" => r.resource_id.parse().ok(),
            _ => None,
        };
        Self {
            everify_case_id,
            at: Some(r.occurred_at),
            action: r.action,
            actor: HistoryActor {
                kind,
                user_id: r.user_id,
                login: r.login,
                client_id: r.client,
            },
            request_id: r.request_id,
            fields: r.fields.iter().map(|f| api_field(f)).collect(),
            // What the hold is on is the record the entry is on (an entry of
            // a hold is written on what it holds).
            legal_hold: r.legal_hold_id.map(|id| HistoryHold {
                id,
                on: match r.resource_type.as_str() {
                    "legal_entity" => "legalEntity".into(),
                    other => other.into(),
                },
            }),
        }
    }
}

/// The page `q` of the history of `resource_type` `id`, at `path`: the
/// entries on the record and, for an I-9, those on its E-Verify cases
/// (docs/api.md, "History of a record"). Every entry of an I-9's case is on
/// the I-9's history, whoever wrote it: the history's permissions (read the
/// I-9, and 12) cover them as they cover the I-9's own.
async fn page(
    state: &AppState,
    q: &ListQuery,
    resource_type: &str,
    id: i64,
    path: &str,
) -> ApiResult<ListResponse<HistoryEntry>> {
    let resource = id.to_string();
    // The records whose entries are shown: the record, and an I-9's cases
    // (few: the keys join `audit_log_resource_idx`).
    let total = sqlx::query_scalar!(
        r#"WITH keys (t, r) AS (
               SELECT $1::TEXT, $2::TEXT
               UNION ALL
               SELECT 'everify_case', c.id::TEXT FROM everify_cases c
               WHERE $1 = 'i9' AND c.i9_id = $3)
           SELECT count(*) AS "n!" FROM audit_log a
           JOIN keys k ON a.resource_type = k.t AND a.resource_id = k.r"#,
        resource_type,
        resource,
        id,
    )
    .fetch_one(&state.pool)
    .await?;
    let rows = sqlx::query_as!(
        Row,
        r#"WITH keys (t, r) AS (
               SELECT $1::TEXT, $2::TEXT
               UNION ALL
               SELECT 'everify_case', c.id::TEXT FROM everify_cases c
               WHERE $1 = 'i9' AND c.i9_id = $3)
           SELECT a.occurred_at, a.action, a.user_id, u.login AS "login?", c.client_id AS "client?",
                  a.request_id,
                  ARRAY(SELECT jsonb_array_elements_text(
                            CASE WHEN jsonb_typeof(a.detail -> 'fields') = 'array'
                                 THEN a.detail -> 'fields' ELSE '[]'::JSONB END)) AS "fields!",
                  CASE WHEN a.action LIKE 'legal\_hold.%'
                            AND jsonb_typeof(a.detail -> 'legalHoldId') = 'number'
                       THEN (a.detail ->> 'legalHoldId')::BIGINT END AS legal_hold_id,
                  a.resource_type, a.resource_id AS "resource_id!"
           FROM audit_log a
           JOIN keys k ON a.resource_type = k.t AND a.resource_id = k.r
           LEFT JOIN users u ON u.id = a.user_id
           LEFT JOIN oauth_clients c ON c.id = a.client_id
           ORDER BY a.occurred_at DESC, a.id DESC LIMIT $4 OFFSET $5"#,
        resource_type,
        resource,
        id,
        q.page_size,
        q.offset(),
    )
    .fetch_all(&state.pool)
    .await?;
    Ok(ListResponse {
        total,
        links: q.links(path, total),
        search_result: rows.into_iter().map(HistoryEntry::from).collect(),
    })
}

#[utoipa::path(
    get, path = "/v1/employees/{id}/history", operation_id = "getEmployeeHistory", tag = "employees",
    params(("id" = i64, Path, description = "Employee id"), Paging),
    responses(
        (status = 200, description = "The employee's audit history, newest first", content((ListResponse<HistoryEntry> = "application/json"), (String = "text/csv"))),
        (status = 406, description = "The Accept allows neither application/json nor text/csv", body = Problem, content_type = "application/problem+json"),
        (status = 400, description = "Unknown parameter or bad paging", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope, permission 1 or permission 12", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such employee, or not in the caller's groups", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn employee(
    State(state): State<AppState>,
    caller: Caller,
    format: Format,
    id: Id,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    caller.require(Scope::Read, Permission::ViewEmployees)?;
    caller.require(Scope::Read, Permission::FullSsn)?;
    let q = ListQuery::parse_as(raw.as_deref(), &[], format)?;
    let id = id.get()?;
    super::employees::check_visible(&state, &caller, id).await?;
    let path = format!("/v1/employees/{id}/history");
    Ok(page(&state, &q, "employee", id, &path)
        .await?
        .answer(format))
}

#[utoipa::path(
    get, path = "/v1/i9s/{id}/history", operation_id = "getI9History", tag = "i9s",
    params(("id" = i64, Path, description = "I-9 id"), Paging),
    responses(
        (status = 200, description = "The I-9's audit history, newest first", content((ListResponse<HistoryEntry> = "application/json"), (String = "text/csv"))),
        (status = 406, description = "The Accept allows neither application/json nor text/csv", body = Problem, content_type = "application/problem+json"),
        (status = 400, description = "Unknown parameter or bad paging", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope, permission 3 or permission 12", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such I-9, or its employee is not in the caller's groups", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn i9(
    State(state): State<AppState>,
    caller: Caller,
    format: Format,
    id: Id,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    caller.require(Scope::Read, Permission::ViewI9s)?;
    caller.require(Scope::Read, Permission::FullSsn)?;
    let q = ListQuery::parse_as(raw.as_deref(), &[], format)?;
    let id = id.get()?;
    i9s::check_visible(&state, &caller, id).await?;
    let path = format!("/v1/i9s/{id}/history");
    Ok(page(&state, &q, "i9", id, &path).await?.answer(format))
}

/// `actor`, `fields` and `legalHold` are cells of JSON text (docs/api.md,
/// "CSV").
impl crate::list::CsvColumns for HistoryEntry {
    const COLUMNS: &'static [&'static str] = &[
        "at",
        "action",
        "actor",
        "requestId",
        "fields",
        "legalHold",
        "everifyCaseId",
    ];
}

#[cfg(test)]
mod tests {
    use i9_common::models::audit::api_field;

    #[test]
    fn columns_are_named_as_the_api_names_them() {
        for (column, field) in [
            ("first_name", "firstName"),
            ("ssn", "socialSecurityNumber"),
            ("legal_entity_id", "legalEntity"),
            ("location_id", "locationId"),
            ("language_preference", "languagePreference"),
            ("address_street2", "addressStreet2"),
            ("custom3", "custom3"),
            ("start_date", "startDate"),
        ] {
            assert_eq!(api_field(column), field);
        }
    }
}
