//! `POST /v1/employees` and `PATCH /v1/employees/{id}`.
//!
//! One transaction per request: the employee, its period of employment, the
//! I-9 request and its Section 1 link token, the employee's sign-in, the jobs
//! (outbox), the audit entry and the idempotency record commit together or
//! not at all. A rejected request writes nothing.

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use chrono::{NaiveDate, Utc};
use i9_common::{
    crypto::{new_token, token_hash, Purpose},
    domain::{Permission, Scope},
    jobs::Job,
    outbox,
};
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

use super::{
    fetch,
    input::{self, ColumnValue, EmployeeInput, Operation},
    EmployeeRecord,
};
use crate::{
    auth::{Caller, Visibility},
    error::{ApiError, ApiResult, FieldError, Problem},
    idempotency::{self, Outcome, Replay},
    routes::Id,
    ssn_writes,
    state::AppState,
};

/// The writable fields of an employee and the request flags (see the
/// specification's parameter table; docs/api.md explains each flag).
#[derive(utoipa::ToSchema)]
#[schema(example = json!({
    "firstName": "Ana", "lastName": "Diaz", "locationId": 3, "startDate": "2026-12-01",
    "emailAddress": "ana.diaz@mail.example", "socialSecurityNumber": "123-45-6789", "createI9": "yes"
}))]
#[allow(non_snake_case, dead_code)]
pub struct EmployeeWrite {
    /// Max 40. Required.
    firstName: String,
    /// Max 40. Required.
    lastName: String,
    /// Group id. Required.
    locationId: i64,
    middleName: Option<String>,
    /// `###-##-####`.
    socialSecurityNumber: Option<String>,
    /// `YYYY-MM-DD` or `MM/DD/YYYY`.
    dateOfBirth: Option<String>,
    startDate: Option<String>,
    terminatedDate: Option<String>,
    profileId: Option<String>,
    otherName: Option<String>,
    jobTitle: Option<String>,
    emailAddress: Option<String>,
    legalEntity: Option<i64>,
    /// 1 English, 2 Spanish.
    languagePreference: Option<i32>,
    custom1: Option<String>,
    notificationEmail1: Option<String>,
    addressStreet: Option<String>,
    addressCity: Option<String>,
    addressState: Option<String>,
    addressZip: Option<String>,
    cellNumber: Option<String>,
    /// Create a sign-in for the employee (login = emailAddress).
    createLogin: Option<bool>,
    /// Email the sign-in a one-time link to set a password.
    sendLoginEmail: Option<bool>,
    /// `yes` or `if allowed` (case-sensitive).
    createI9: Option<String>,
    /// `yes` or `if allowed`; also spelt `createRemoteHireI9`. Needs `emailAddress`.
    createRemotehireI9: Option<String>,
    /// PATCH only: `yes`, with `startDate`, re-hires a terminated employee.
    rehire: Option<String>,
}

const SELF_SERVICE_ROLE: &str = "employee self-service";

#[utoipa::path(
    post, path = "/v1/employees", tag = "employees",
    request_body(content = EmployeeWrite, content_type = "application/json"),
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first response for 24 hours")),
    responses(
        (status = 201, description = "Created; `Location` names the record", body = EmployeeRecord),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission, or a group the caller cannot see", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "profileId or SSN held by another employee (named only when the caller may see it)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Writes of SSNs ending in the same four digits by a caller without permission 12 wait; see Retry-After (docs/api.md, \"Social security numbers\")", body = Problem, content_type = "application/problem+json"),
        (status = 413, body = Problem, content_type = "application/problem+json"),
        (status = 415, body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    caller.require(Scope::Write, Permission::EditEmployees)?;
    let key = idempotency::key(&headers)?;
    let input = parse_body(&headers, &body, Operation::Create)?;
    let visibility = caller.visibility(&state.pool).await?;

    // A plain create is one statement, atomic on its own; an idempotency key
    // or a sign-in needs a transaction around several.
    let mut tx = if key.is_some() || input.create_login || input.send_login_email {
        Some(state.pool.begin().await?)
    } else {
        None
    };
    if let (Some(key), Some(conn)) = (&key, tx.as_mut()) {
        if let Some(replay) = idempotency::claim(
            conn,
            &state.cipher,
            caller.user_id,
            key,
            "POST /v1/employees",
            &body,
        )
        .await?
        {
            drop(tx);
            return replay_create(&state, &caller, &visibility, replay).await;
        }
    }
    ssn_writes::admit(&state, &caller, input.ssn.as_ref().and_then(Option::as_ref)).await?;
    // A group outside the caller's own: 422 if it does not exist, else 403.
    // Groups the caller sees exist, so the happy path needs no query here.
    if let Some(Some(group)) = input.int("location_id") {
        if !visibility.may_place_in(group) {
            let mut conn = state.pool.acquire().await?;
            check_references(&mut conn, &input, &visibility).await?;
        }
    }
    let email = input.text("email_address").flatten().map(str::to_owned);
    let mut errors = Vec::new();
    require_email(&input, email.is_some(), false, &mut errors);
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    // Before the insert, whose unique index answers for the SSN: a request
    // refused anyway must not tell whether its number is taken (ssn_writes.rs).
    if let (true, Some(conn), Some(email)) = (input.create_login, tx.as_mut(), email.as_deref()) {
        check_login_free(conn, email).await?;
    }

    // One statement writes the employee, its period of employment, the audit
    // entries and, when asked, the I-9 request and its job. The database's
    // constraints catch a missing reference or a duplicate; the error path
    // then finds out which (see `insert_error`).
    let request = input.i9.map(|wish| I9Request::new(&state, wish.remote));
    let mut q = QueryBuilder::<Postgres>::new("WITH e AS (");
    push_insert(&mut q, &state, &input);
    q.push(" RETURNING *), p AS (INSERT INTO employment_periods (employee_id, start_date, terminated_date) SELECT id, ");
    q.push_bind(input.start_date.flatten())
        .push(", ")
        .push_bind(input.terminated_date.flatten());
    q.push(" FROM e), a AS (INSERT INTO audit_log (user_id, client_id, action, resource_type, resource_id, request_id, detail) SELECT ");
    q.push_bind(caller.user_id)
        .push(", ")
        .push_bind(caller.client_id);
    q.push(", 'employee.create', 'employee', e.id::TEXT, ")
        .push_bind(caller.request_id.clone());
    q.push(", ")
        .push_bind(audit_detail(&input))
        .push(" FROM e)");
    if caller.has(Permission::FullSsn) && matches!(input.ssn, Some(Some(_))) {
        // The response shows the whole number: that read is audited too.
        q.push(", s AS (INSERT INTO audit_log (user_id, client_id, action, resource_type, resource_id, request_id) SELECT ");
        q.push_bind(caller.user_id)
            .push(", ")
            .push_bind(caller.client_id);
        q.push(", 'ssn.read', 'employee', e.id::TEXT, ")
            .push_bind(caller.request_id.clone())
            .push(" FROM e)");
    }
    if let Some(r) = &request {
        r.push_ctes(&mut q);
    }
    q.push(
        " SELECT e.*, e.last_name || ', ' || e.first_name AS full_name, d.start_date, d.terminated_date,
                 'Not Started' AS i9_status, NULL::DATE AS i9_expiration, NULL::BIGINT AS section2_i9_id",
    );
    if request.is_some() {
        q.push(", (SELECT count(*) FROM n) AS notified");
    }
    q.push(" FROM e, (SELECT ")
        .push_bind(input.start_date.flatten());
    q.push("::DATE AS start_date, ")
        .push_bind(input.terminated_date.flatten());
    q.push("::DATE AS terminated_date) d");
    let inserted: Result<EmployeeRecord, sqlx::Error> = match tx.as_mut() {
        Some(tx) => q.build_query_as().fetch_one(&mut **tx).await,
        None => q.build_query_as().fetch_one(&state.pool).await,
    };
    let mut rec = match inserted {
        Ok(rec) => rec,
        Err(e) => {
            drop(tx);
            return Err(insert_error(e, &state, &caller, &visibility, &input).await);
        }
    };
    let id = rec.id;
    if let Some(tx) = tx.as_mut() {
        login(tx, &input, id, email.as_deref(), None).await?;
    }
    rec.social_security_number = super::super::reveal_ssn(
        &state,
        &caller,
        Purpose::EmployeeSsn,
        rec.ssn_ciphertext.as_deref(),
        rec.ssn_last4.as_deref(),
    )?;
    rec.links = vec![crate::list::Link::new(
        "self",
        format!("/v1/employees/{id}"),
    )];
    let outcome = Outcome {
        resource_id: id,
        section1_request: request.as_ref().map(|r| r.id),
    };
    rec.i9_form_section1_link = request.map(|r| r.link);
    idempotency::created(
        tx,
        caller.user_id,
        key.as_deref(),
        outcome,
        format!("/v1/employees/{id}"),
        &rec,
    )
    .await
}

/// The answer to a repeated create: the employee as GET shows it to the
/// caller now (404 if it no longer may see it), with the Section 1 link that
/// the first answer carried.
async fn replay_create(
    state: &AppState,
    caller: &Caller,
    visibility: &Visibility,
    replay: Replay,
) -> ApiResult<Response> {
    let mut conn = state.pool.acquire().await?;
    let mut rec = fetch(
        &mut conn,
        state,
        caller,
        visibility,
        replay.outcome.resource_id,
    )
    .await?
    .ok_or(ApiError::NotFound)?;
    if let Some(request) = replay.outcome.section1_request {
        rec.i9_form_section1_link = Some(section1_link(&mut conn, state, request).await?);
    }
    replay.respond(&rec)
}

#[utoipa::path(
    patch, path = "/v1/employees/{id}", tag = "employees",
    params(("id" = i64, Path, description = "Employee id")),
    request_body(content = EmployeeWrite, content_type = "application/json"),
    responses(
        (status = 200, description = "Updated", body = EmployeeRecord),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Open I-9 with createI9 yes; re-hire of an active employee; profileId or SSN held by another", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Writes of SSNs ending in the same four digits by a caller without permission 12 wait; see Retry-After (docs/api.md, \"Social security numbers\")", body = Problem, content_type = "application/problem+json"),
        (status = 415, body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    caller.require(Scope::Write, Permission::EditEmployees)?;
    let id = id.get()?;
    let input = parse_body(&headers, &body, Operation::Update)?;
    if input.id.is_some_and(|body_id| body_id != id) {
        return Err(ApiError::Validation(vec![FieldError::new(
            "id",
            "mismatch",
            "Must match the id in the path.",
        )]));
    }
    let visibility = caller.visibility(&state.pool).await?;

    let mut tx = state.pool.begin().await?;
    // Lock the employee: concurrent writes to one employee take turns, so two
    // `createI9: "yes"` cannot both find it without an open I-9.
    let current: Option<(i64, Option<i64>, Option<String>, Option<i64>)> = sqlx::query_as(
        "SELECT location_id, integration_client_id, email_address,
                (SELECT id FROM users WHERE employee_id = e.id)
         FROM employees e WHERE id = $1 FOR UPDATE",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((_, _, current_email, login_id)) =
        current.filter(|(loc, client, _, _)| visibility.sees(*loc, *client))
    else {
        return Err(ApiError::NotFound);
    };
    ssn_writes::admit(&state, &caller, input.ssn.as_ref().and_then(Option::as_ref)).await?;
    check_references(&mut tx, &input, &visibility).await?;
    let period: Option<(i64, Option<NaiveDate>, Option<NaiveDate>)> = sqlx::query_as(
        "SELECT id, start_date, terminated_date FROM employment_periods WHERE employee_id = $1 ORDER BY id DESC LIMIT 1",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;

    let email = match input.text("email_address") {
        Some(v) => v.map(str::to_owned),
        None => current_email,
    };
    let mut errors = Vec::new();
    require_email(&input, email.is_some(), login_id.is_some(), &mut errors);
    let (start, end) = if input.rehire {
        (input.start_date.flatten(), input.terminated_date.flatten())
    } else {
        let (s, t) = period.map(|p| (p.1, p.2)).unwrap_or_default();
        (
            input.start_date.unwrap_or(s),
            input.terminated_date.unwrap_or(t),
        )
    };
    if let (Some(s), Some(t)) = (start, end) {
        if t < s && !errors.iter().any(|e| e.field == "terminatedDate") {
            errors.push(FieldError::new(
                "terminatedDate",
                "before_start",
                "Must not be before the startDate of the period.",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    if input.rehire && period.is_none_or(|p| p.2.is_none()) {
        return Err(ApiError::Conflict(
            "Only a terminated employee can be re-hired; this one is active.".into(),
        ));
    }
    let i9_allowed = match input.i9 {
        Some(wish) => {
            let open = has_open_i9(&mut tx, id).await?;
            if open && !wish.if_allowed {
                return Err(ApiError::Conflict(
                    "The employee has an open I-9 (or one being created); finish or park it first."
                        .into(),
                ));
            }
            !open
        }
        None => false,
    };
    if let (true, None, Some(email)) = (input.create_login, login_id, email.as_deref()) {
        check_login_free(&mut tx, email).await?;
    }
    // Last of the checks: a request refused anyway must not tell whether its
    // SSN is taken (api/src/ssn_writes.rs).
    check_unique(&mut tx, &state, &caller, &visibility, &input, Some(id)).await?;

    set_columns(&mut tx, &state, &input, id).await?;
    match period {
        Some((pid, _, _)) if !input.rehire => {
            if input.start_date.is_some() || input.terminated_date.is_some() {
                sqlx::query("UPDATE employment_periods SET start_date = $2, terminated_date = $3 WHERE id = $1")
                    .bind(pid)
                    .bind(start)
                    .bind(end)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        _ => {
            sqlx::query("INSERT INTO employment_periods (employee_id, start_date, terminated_date) VALUES ($1, $2, $3)")
                .bind(id)
                .bind(start)
                .bind(end)
                .execute(&mut *tx)
                .await?;
        }
    }
    let link = match input.i9 {
        Some(wish) if i9_allowed => Some(request_i9(&mut tx, &state, id, wish.remote).await?.1),
        _ => None,
    };
    login(&mut tx, &input, id, email.as_deref(), login_id).await?;
    audit(&mut tx, &caller, "employee.update", id, &input).await?;

    let mut rec = fetch(&mut tx, &state, &caller, &visibility, id)
        .await?
        .ok_or(ApiError::NotFound)?;
    rec.i9_form_section1_link = link;
    tx.commit().await?;
    Ok((StatusCode::OK, axum::Json(rec)).into_response())
}

/// Write the body's columns (and SSN) to an existing employee.
pub async fn set_columns(
    tx: &mut PgConnection,
    state: &AppState,
    input: &EmployeeInput,
    id: i64,
) -> ApiResult<()> {
    if !input.columns.is_empty() || input.ssn.is_some() {
        let mut update = QueryBuilder::<Postgres>::new("UPDATE employees SET updated_at = now()");
        for (c, v) in &input.columns {
            update.push(format_args!(", {c} = "));
            push_column(&mut update, v);
        }
        if let Some(ssn) = &input.ssn {
            update.push(", ssn_ciphertext = ").push_bind(
                ssn.as_ref()
                    .map(|s| state.cipher.encrypt_ssn(Purpose::EmployeeSsn, s)),
            );
            update
                .push(", ssn_hash = ")
                .push_bind(ssn.as_ref().map(|s| state.cipher.ssn_search_hash(s)));
            update
                .push(", ssn_hash_check = ")
                .push_bind(ssn.as_ref().map(|s| state.cipher.ssn_search_hashes(s)));
            update
                .push(", ssn_last4 = ")
                .push_bind(ssn.as_ref().map(|s| s.last4().to_owned()));
        }
        update.push(" WHERE id = ").push_bind(id);
        update
            .build()
            .execute(&mut *tx)
            .await
            .map_err(unique_violation)?;
    }
    Ok(())
}

pub fn parse_body(headers: &HeaderMap, body: &[u8], op: Operation) -> ApiResult<EmployeeInput> {
    let object = crate::body::json_object(headers, body)?;
    input::parse(&serde_json::Value::Object(object), op).map_err(ApiError::Validation)
}

/// `locationId` and `legalEntity` must exist (422); the caller must see the group (403).
pub async fn check_references(
    tx: &mut PgConnection,
    input: &EmployeeInput,
    visibility: &Visibility,
) -> ApiResult<()> {
    let mut errors = Vec::new();
    let mut hidden = false;
    if let Some(Some(group)) = input.int("location_id") {
        let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM groups WHERE id = $1)")
            .bind(group)
            .fetch_one(&mut *tx)
            .await?;
        if !exists {
            errors.push(FieldError::new(
                "locationId",
                "not_found",
                "No group has this id.",
            ));
        } else if !visibility.may_place_in(group) {
            hidden = true;
        }
    }
    if let Some(Some(entity)) = input.int("legal_entity_id") {
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM legal_entities WHERE id = $1)")
                .bind(entity)
                .fetch_one(&mut *tx)
                .await?;
        if !exists {
            errors.push(FieldError::new(
                "legalEntity",
                "not_found",
                "No legal entity has this id.",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    if hidden {
        return Err(ApiError::Forbidden(
            "You cannot place employees in a group outside your own.".into(),
        ));
    }
    Ok(())
}

fn require_email(
    input: &EmployeeInput,
    has_email: bool,
    has_login: bool,
    errors: &mut Vec<FieldError>,
) {
    if !has_email {
        if input.i9.is_some_and(|w| w.remote) {
            errors.push(FieldError::new(
                "emailAddress",
                "required",
                "A remote-hire I-9 needs the employee's emailAddress.",
            ));
        } else if input.create_login || input.send_login_email {
            errors.push(FieldError::new(
                "emailAddress",
                "required",
                "A sign-in needs the employee's emailAddress.",
            ));
        }
    }
    if input.send_login_email && !input.create_login && !has_login {
        errors.push(FieldError::new(
            "sendLoginEmail",
            "no_login",
            "The employee has no sign-in; send createLogin: true as well.",
        ));
    }
}

/// 409 when `profileId` or the SSN already belongs to another employee. The
/// answer names the holder only when the caller sees that employee and, for
/// an SSN, may see its full number (permission 12): otherwise naming it would
/// confirm a record outside the caller's groups, or reveal a masked number by
/// trial. Unnamed, it reads exactly as for any other holder, wherever it is
/// (docs/api.md, "Writing employees").
pub async fn check_unique(
    tx: &mut PgConnection,
    state: &AppState,
    caller: &Caller,
    visibility: &Visibility,
    input: &EmployeeInput,
    me: Option<i64>,
) -> ApiResult<()> {
    if let Some(Some(profile)) = input.text("profile_id") {
        let holder: Option<(i64, i64, Option<i64>)> = sqlx::query_as(
            "SELECT id, location_id, integration_client_id FROM employees
             WHERE lower(profile_id) = lower($1) AND id IS DISTINCT FROM $2",
        )
        .bind(profile)
        .bind(me)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((id, location, client)) = holder {
            let named = visibility.sees(location, client);
            return Err(duplicate("profileId", named.then_some(id)));
        }
    }
    if let Some(Some(ssn)) = &input.ssn {
        let holder: Option<(i64, i64, Option<i64>)> = sqlx::query_as(
            "SELECT id, location_id, integration_client_id FROM employees
             WHERE ssn_hash = ANY($1) AND id IS DISTINCT FROM $2",
        )
        // Under every key of the ring: a record hashed under an older key is taken too.
        .bind(state.cipher.ssn_search_hashes(ssn))
        .bind(me)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((id, location, client)) = holder {
            ssn_writes::conflict(state, caller, id).await?;
            let named = visibility.sees(location, client) && caller.has(Permission::FullSsn);
            return Err(duplicate("socialSecurityNumber", named.then_some(id)));
        }
    }
    Ok(())
}

/// The 409 of a taken `field`, naming `holder` when given.
fn duplicate(field: &str, holder: Option<i64>) -> ApiError {
    ApiError::Conflict(match holder {
        Some(id) => format!(
            "{field} already belongs to employee {id}; re-hire with PATCH /v1/employees/{id}."
        ),
        None => format!("{field} already belongs to another employee."),
    })
}

/// A unique index caught what the checks above missed (a concurrent write).
pub fn unique_violation(e: sqlx::Error) -> ApiError {
    match &e {
        sqlx::Error::Database(db) => match db.constraint() {
            Some("employees_profile_id_key") => duplicate("profileId", None),
            Some("employees_ssn_hash_key") => duplicate("socialSecurityNumber", None),
            Some("i9_requests_one_pending" | "i9s_one_open_per_employee") => {
                ApiError::Conflict("The employee has an open I-9 (or one being created).".into())
            }
            Some("users_login_key") => {
                ApiError::Conflict("emailAddress is already the login of another user.".into())
            }
            // Two partner pushes of one new candidate at once: the other won.
            Some("employees_integration_candidate_key") => ApiError::Conflict(
                "Another request created this candidate a moment ago, and its answer carried \
                 the Section 1 link. Send each push with an Idempotency-Key: a repeated push then \
                 gets the first answer again."
                    .into(),
            ),
            _ => e.into(),
        },
        _ => e.into(),
    }
}

pub async fn has_open_i9(tx: &mut PgConnection, employee: i64) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM i9s WHERE employee_id = $1
                          AND status IN ('Section 1 Incomplete', 'Signed Sec 1', 'Signed Sec 2'))
             OR EXISTS (SELECT 1 FROM i9_requests WHERE employee_id = $1 AND i9_id IS NULL)",
    )
    .bind(employee)
    .fetch_one(&mut *tx)
    .await
}

/// Request an I-9 for `employee`: its Section 1 link token is issued now (the
/// response carries the link); a worker creates the I-9. Returns the
/// request's id and the link.
pub async fn request_i9(
    tx: &mut PgConnection,
    state: &AppState,
    employee: i64,
    remote: bool,
) -> ApiResult<(Uuid, String)> {
    let token = new_token("s1_");
    let request_id = Uuid::new_v4();
    let expires = Utc::now()
        + chrono::Duration::from_std(state.config.section1_link_ttl)
            .unwrap_or(chrono::Duration::days(14));
    sqlx::query(
        "INSERT INTO i9_requests (id, employee_id, remote, onboarding_type, section1_token_hash,
                                  section1_token_ciphertext, section1_expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(request_id)
    .bind(employee)
    .bind(remote)
    .bind(if remote { "remote" } else { "on-site" })
    .bind(token_hash(&token))
    .bind(
        state
            .cipher
            .encrypt(Purpose::Section1Token, token.as_bytes()),
    )
    .bind(expires)
    .execute(&mut *tx)
    .await
    .map_err(unique_violation)?;
    outbox::enqueue(tx, Job::CreateI9 { request_id }).await?;
    Ok((
        request_id,
        i9_common::links::section1(&state.config.public_base_url, &token),
    ))
}

/// The Section 1 link of the I-9 request `request`, as the write that issued
/// it answered (for a replay; the token is kept encrypted).
pub async fn section1_link(
    conn: &mut PgConnection,
    state: &AppState,
    request: Uuid,
) -> ApiResult<String> {
    let ciphertext: Vec<u8> =
        sqlx::query_scalar("SELECT section1_token_ciphertext FROM i9_requests WHERE id = $1")
            .bind(request)
            .fetch_one(&mut *conn)
            .await?;
    let token = state
        .cipher
        .decrypt(Purpose::Section1Token, &ciphertext)
        .ok()
        .and_then(|t| String::from_utf8(t).ok())
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("a Section 1 token does not decrypt")))?;
    Ok(i9_common::links::section1(
        &state.config.public_base_url,
        &token,
    ))
}

/// An I-9 requested by a write: its id, its Section 1 link token (issued
/// now, so the response can carry the link) and the job that creates it.
struct I9Request {
    id: Uuid,
    remote: bool,
    token: String,
    link: String,
    ciphertext: Vec<u8>,
    expires: chrono::DateTime<Utc>,
    envelope: i9_common::jobs::Envelope,
}

impl I9Request {
    fn new(state: &AppState, remote: bool) -> Self {
        let token = new_token("s1_");
        let id = Uuid::new_v4();
        Self {
            id,
            remote,
            link: i9_common::links::section1(&state.config.public_base_url, &token),
            ciphertext: state
                .cipher
                .encrypt(Purpose::Section1Token, token.as_bytes()),
            expires: Utc::now()
                + chrono::Duration::from_std(state.config.section1_link_ttl)
                    .unwrap_or(chrono::Duration::days(14)),
            envelope: outbox::envelope(Job::CreateI9 { request_id: id }),
            token,
        }
    }

    /// `r`: the request, `o`: its job in the outbox, `n`: the relays' wake-up.
    fn push_ctes(&self, q: &mut QueryBuilder<'_, Postgres>) {
        q.push(
            ", r AS (INSERT INTO i9_requests (id, employee_id, remote, onboarding_type, section1_token_hash,
                                              section1_token_ciphertext, section1_expires_at) SELECT ",
        );
        q.push_bind(self.id)
            .push(", e.id, ")
            .push_bind(self.remote)
            .push(", ");
        q.push_bind(if self.remote { "remote" } else { "on-site" })
            .push(", ");
        q.push_bind(token_hash(&self.token))
            .push(", ")
            .push_bind(self.ciphertext.clone());
        q.push(", ").push_bind(self.expires).push(" FROM e)");
        q.push(", o AS (INSERT INTO job_outbox (job_id, kind, payload) SELECT ");
        q.push_bind(self.envelope.job_id).push(", ");
        q.push_bind(self.envelope.job.kind().name()).push(", ");
        q.push_bind(sqlx::types::Json(self.envelope.clone()))
            .push(" FROM e)");
        q.push(", n AS (SELECT pg_notify(")
            .push_bind(outbox::NOTIFY_CHANNEL)
            .push(", ''))");
    }
}

/// Why the insert failed, in the caller's terms: a missing reference (422),
/// a group outside the caller's (403), or a duplicate (409, see [`check_unique`]).
async fn insert_error(
    e: sqlx::Error,
    state: &AppState,
    caller: &Caller,
    visibility: &Visibility,
    input: &EmployeeInput,
) -> ApiError {
    let constraint = match &e {
        sqlx::Error::Database(db) => db.constraint().map(str::to_owned),
        _ => None,
    };
    match constraint.as_deref() {
        Some("employees_location_id_fkey" | "employees_legal_entity_id_fkey") => {
            match state.pool.begin().await {
                Ok(mut conn) => match check_references(&mut conn, input, visibility).await {
                    Err(err) => err,
                    Ok(()) => e.into(),
                },
                Err(err) => err.into(),
            }
        }
        // The unique index fires before the foreign keys are checked: a
        // request with a missing reference is refused for that, so that it
        // does not tell whether its SSN is taken (api/src/ssn_writes.rs).
        Some("employees_profile_id_key" | "employees_ssn_hash_key") => {
            match state.pool.begin().await {
                Ok(mut conn) => match check_references(&mut conn, input, visibility).await {
                    Err(err) => err,
                    Ok(()) => {
                        match check_unique(&mut conn, state, caller, visibility, input, None).await
                        {
                            Err(err) => err,
                            Ok(()) => unique_violation(e),
                        }
                    }
                },
                Err(err) => err.into(),
            }
        }
        _ => unique_violation(e),
    }
}

/// 409 when `email`, the login a `createLogin` would create, is taken.
async fn check_login_free(tx: &mut PgConnection, email: &str) -> ApiResult<()> {
    let taken: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM users WHERE lower(login) = lower($1))")
            .bind(email)
            .fetch_one(&mut *tx)
            .await?;
    if taken {
        return Err(ApiError::Conflict(
            "emailAddress is already the login of another user.".into(),
        ));
    }
    Ok(())
}

/// `createLogin` creates the employee's sign-in (login = email address, no
/// password until the employee sets one); `sendLoginEmail` emails the link.
async fn login(
    tx: &mut PgConnection,
    input: &EmployeeInput,
    employee: i64,
    email: Option<&str>,
    mut user: Option<i64>,
) -> ApiResult<()> {
    if !input.create_login && !input.send_login_email {
        return Ok(());
    }
    if input.create_login && user.is_none() {
        let Some(email) = email else { return Ok(()) };
        check_login_free(tx, email).await?;
        user = Some(
            sqlx::query_scalar(
                "INSERT INTO users (login, first_name, last_name, email_address, role_id, employee_id)
                 SELECT $1, e.first_name, e.last_name, $1, r.id, e.id
                 FROM employees e, roles r WHERE e.id = $2 AND lower(r.name) = $3
                 RETURNING id",
            )
            .bind(email)
            .bind(employee)
            .bind(SELF_SERVICE_ROLE)
            .fetch_one(&mut *tx)
            .await
            .map_err(unique_violation)?,
        );
    }
    if input.send_login_email {
        if let Some(user_id) = user {
            outbox::enqueue(tx, Job::SendLoginEmail { user_id }).await?;
        }
    }
    Ok(())
}

fn audit_detail(input: &EmployeeInput) -> serde_json::Value {
    serde_json::json!({
        "fields": input.field_names(),
        "i9": input.i9.map(|w| if w.remote { "remote" } else { "on-site" }),
        "createLogin": input.create_login,
        "sendLoginEmail": input.send_login_email,
        "rehire": input.rehire,
    })
}

async fn audit(
    tx: &mut PgConnection,
    caller: &Caller,
    action: &str,
    id: i64,
    input: &EmployeeInput,
) -> ApiResult<()> {
    sqlx::query(
        "INSERT INTO audit_log (user_id, client_id, action, resource_type, resource_id, request_id, detail)
         VALUES ($1, $2, $3, 'employee', $4, $5, $6)",
    )
    .bind(caller.user_id)
    .bind(caller.client_id)
    .bind(action)
    .bind(id.to_string())
    .bind(&caller.request_id)
    .bind(audit_detail(input))
    .execute(&mut *tx)
    .await?;
    Ok(())
}

fn push_column(qb: &mut QueryBuilder<'_, Postgres>, v: &ColumnValue) {
    match v {
        ColumnValue::Text(t) => qb.push_bind(t.clone()),
        ColumnValue::Date(d) => qb.push_bind(*d),
        ColumnValue::Int(i) => qb.push_bind(*i),
        ColumnValue::SmallInt(i) => qb.push_bind(*i),
    };
}

/// `INSERT INTO employees (<the body's columns and SSN>) VALUES (...)`.
pub fn push_insert(q: &mut QueryBuilder<'_, Postgres>, state: &AppState, input: &EmployeeInput) {
    q.push("INSERT INTO employees (");
    let mut cols = q.separated(", ");
    for (c, _) in &input.columns {
        cols.push(*c);
    }
    if input.ssn.is_some() {
        cols.push("ssn_ciphertext")
            .push("ssn_hash")
            .push("ssn_hash_check")
            .push("ssn_last4");
    }
    q.push(") VALUES (");
    push_values(q, state, input);
    q.push(")");
}

fn push_values(qb: &mut QueryBuilder<'_, Postgres>, state: &AppState, input: &EmployeeInput) {
    let mut first = true;
    let mut sep = |qb: &mut QueryBuilder<'_, Postgres>| {
        if !first {
            qb.push(", ");
        }
        first = false;
    };
    for (_, v) in &input.columns {
        sep(qb);
        push_column(qb, v);
    }
    if let Some(ssn) = &input.ssn {
        sep(qb);
        qb.push_bind(
            ssn.as_ref()
                .map(|s| state.cipher.encrypt_ssn(Purpose::EmployeeSsn, s)),
        );
        sep(qb);
        qb.push_bind(ssn.as_ref().map(|s| state.cipher.ssn_search_hash(s)));
        // The uniqueness trigger looks for these (migrations, ..._ssn_unique_across_hash_keys).
        sep(qb);
        qb.push_bind(ssn.as_ref().map(|s| state.cipher.ssn_search_hashes(s)));
        sep(qb);
        qb.push_bind(ssn.as_ref().map(|s| s.last4().to_owned()));
    }
}
