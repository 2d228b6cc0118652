//! `POST /v1/employees` and `PATCH /v1/employees/{id}`: read the body,
//! authorize, call the employee's operations (`i9_common::models::employee`),
//! answer.
//!
//! One transaction per request: the employee, its period of employment, the
//! I-9 request and its Section 1 link token, the employee's sign-in, the jobs
//! (outbox), the audit entry and the idempotency record commit together or
//! not at all. A rejected request writes nothing.

use axum::{
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use i9_common::{
    crypto::Purpose,
    domain::{Permission, Scope},
    models::{
        employee::{self, EmployeeFields, Holder},
        i9_request::{self, I9Request},
        retention, supplement_b, WriteError,
    },
};
use sqlx::PgConnection;

use super::{
    fetch,
    input::{
        EmployeeChange, EmployeeCreate, EmployeeUpdate, NamesReferences, References, RehireI9,
    },
    EmployeeRecord,
};
use crate::{
    auth::{Caller, Visibility},
    body::{JsonBody, RequestBody},
    error::{ApiError, ApiResult, FieldError, Problem},
    idempotency::{self, Outcome, Replay},
    routes::Id,
    ssn_writes,
    state::AppState,
};

#[utoipa::path(
    post, path = "/v1/employees", operation_id = "createEmployee", tag = "employees",
    request_body(content = EmployeeCreate, content_type = "application/json"),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255, pattern = r"^[!-~]([\t -~]*[!-~])?$", description = "Replays the first response for 24 hours. 1 to 255 visible ASCII characters (spaces and tabs inside)")),
    responses(
        (status = 201, description = "Created; `Location` names the record", body = EmployeeRecord),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope or permission, or a group the caller cannot see", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "profileId or SSN held by another employee (named only when the caller may see it)", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "A replay (same `Idempotency-Key`) of a create whose employee was purged since (docs/retention.md)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Writes of SSNs ending in the same four digits by a caller without permission 12 wait; see Retry-After (docs/api.md, \"Social security numbers\")", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: JsonBody<EmployeeCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::Write, Permission::EditEmployees)?;
    let key = idempotency::key(&headers)?;
    // The email a remote hire or a sign-in needs is the body's alone here,
    // so its error joins the body's others (and a missing reference's).
    let change = read_body(&state, &body, |b: EmployeeCreate| {
        let change = b.check()?;
        let has_email = change.fields.email().flatten().is_some();
        let errors = require_email(&change, has_email, false);
        if errors.is_empty() {
            Ok(change)
        } else {
            Err(errors)
        }
    })
    .await?;
    let visibility = caller.visibility(&state).await?;

    // A plain create is one statement, atomic on its own; an idempotency key
    // or a sign-in needs a transaction around several.
    let mut tx = if key.is_some() || change.login.any() {
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
            &body.raw,
        )
        .await?
        {
            drop(tx);
            return replay_create(&state, &caller, &visibility, replay).await;
        }
    }
    let fields = &change.fields;
    ssn_writes::admit(&state, &caller, fields.new_ssn()).await?;
    // A group outside the caller's own: 422 if it does not exist, else 403.
    // Groups the caller sees exist, so the happy path needs no query here
    // (a legal entity that does not exist fails the insert: `create_error`).
    if let Some(group) = fields.location_id {
        if !visibility.may_place_in(group) {
            let mut conn = state.pool.acquire().await?;
            check_references(&mut conn, fields, &visibility).await?;
        }
    }
    let email = fields.email().flatten().map(str::to_owned);
    // Before the insert, whose unique index answers for the SSN: a request
    // refused anyway must not tell whether its number is taken (ssn_writes.rs).
    if let (true, Some(conn), Some(email)) = (change.login.create, tx.as_mut(), email.as_deref()) {
        employee::check_login_free(conn, email).await?;
    }

    let request = change.i9.map(|wish| {
        I9Request::new(
            wish.onboarding,
            &state.config.public_base_url,
            state.config.section1_link_ttl,
        )
    });
    let actor = caller.actor();
    let ssn_read = caller.has(Permission::FullSsn) && fields.new_ssn().is_some();
    let mut pooled;
    let conn: &mut PgConnection = match tx.as_mut() {
        Some(tx) => tx,
        None => {
            pooled = state.pool.acquire().await?;
            &mut pooled
        }
    };
    let inserted: Result<EmployeeRecord, sqlx::Error> = employee::create(
        conn,
        &state.cipher,
        &actor,
        fields,
        change.period(),
        "employee.create",
        change.audit_detail(),
        request.as_ref(),
        ssn_read,
    )
    .await;
    let mut rec = match inserted {
        Ok(rec) => rec,
        Err(e) => {
            drop(tx);
            return Err(create_error(e, &state, &caller, &visibility, fields).await);
        }
    };
    let id = rec.id;
    if let Some(tx) = tx.as_mut() {
        employee::login(tx, change.login, id, email.as_deref(), None).await?;
    }
    rec.social_security_number = super::super::reveal_ssn(
        &state,
        &caller,
        Purpose::EmployeeSsn,
        rec.ssn_ciphertext.as_deref(),
        rec.ssn_last4.as_deref(),
    )?;
    rec.links = super::record_links(id, &[], !caller.partner);
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
/// caller now (404 if it no longer may see it, 410 if it was purged since,
/// as `GET /v1/employees/{id}` answers: docs/retention.md), with the
/// Section 1 link that the first answer carried.
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
    // Purged since: its Section 1 link went with it (docs/retention.md).
    if let Some(d) = rec.destruction.take() {
        return Err(super::super::legal_holds::gone("employee", Some(d)));
    }
    if let Some(request) = replay.outcome.section1_request {
        rec.i9_form_section1_link = section1_link(&mut conn, state, request).await?;
    }
    replay.respond(&rec)
}

#[utoipa::path(
    patch, path = "/v1/employees/{id}", operation_id = "updateEmployee", tag = "employees",
    params(("id" = i64, Path, description = "Employee id")),
    request_body(content = EmployeeUpdate, content_type = "application/json"),
    responses(
        (status = 200, description = "Updated", body = EmployeeRecord),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`/problems/conflict`: an open I-9 with createI9 (or createRemotehireI9) yes; re-hire of an active employee; profileId or SSN held by another. `/problems/unresolved-verification`: createI9 (or createRemotehireI9) yes while an E-Verify case of the employee is not Closed, its id in the member `caseId` (`/v1/everify-cases/{caseId}`); nothing written (docs/api.md, \"Errors\")", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "The employee was purged (docs/retention.md)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Writes of SSNs ending in the same four digits by a caller without permission 12 wait; see Retry-After (docs/api.md, \"Social security numbers\")", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    id: Id,
    body: JsonBody<EmployeeUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::Write, Permission::EditEmployees)?;
    let id = id.get()?;
    let change = read_body(&state, &body, |b: EmployeeUpdate| {
        // The body's `id` against the path's, named with the other fields.
        let mismatch = b
            .fields
            .id
            .value()
            .is_some_and(|body_id| body_id.0 != id)
            .then(|| FieldError::new("id", "mismatch", "Must match the id in the path."));
        match (b.check(), mismatch) {
            (checked, None) => checked,
            (Ok(_), Some(m)) => Err(vec![m]),
            (Err(mut errors), Some(m)) => {
                errors.push(m);
                Err(errors)
            }
        }
    })
    .await?;
    let visibility = caller.visibility(&state).await?;
    let fields = &change.fields;

    let mut tx = state.pool.begin().await?;
    // Concurrent writes to one employee take turns, so two
    // `createI9: "yes"` cannot both find it without an open I-9.
    let Some(current) = employee::lock(&mut tx, id)
        .await?
        .filter(|c| visibility.sees(c.location_id, c.integration_client_id))
    else {
        return Err(ApiError::NotFound);
    };
    // A purged employee is gone: nothing is written to it; a re-hire is told
    // to hire the person as a new employee (docs/retention.md). Its
    // destruction record is read only then.
    let destruction = match current.purged {
        true => retention::employee_destruction(&mut *tx, id).await?,
        false => None,
    };
    if let Some(d) = destruction {
        return Err(if change.rehire {
            super::super::legal_holds::gone_rehire(d)
        } else {
            super::super::legal_holds::gone("employee", Some(d))
        });
    }
    ssn_writes::admit(&state, &caller, fields.new_ssn()).await?;
    // One 422 names every field: a missing reference with what the stored
    // record makes wrong (docs/api.md, "Writing employees"). The employee's
    // own group exists (its row, locked, refers to it): a body that sends it
    // back unchanged, as most do, asks nothing more of the database.
    let mut errors = missing_references(&mut tx, fields, current.location_id).await?;
    let email = match fields.email() {
        Some(v) => v.map(str::to_owned),
        None => current.email_address.clone(),
    };
    errors.extend(require_email(
        &change,
        email.is_some(),
        current.login_id.is_some(),
    ));
    let period = if change.rehire {
        change.period()
    } else {
        let was = current.period();
        employee::Period {
            start: change.start_date.unwrap_or(was.start),
            terminated: change.terminated_date.unwrap_or(was.terminated),
        }
    };
    period.check(
        &mut errors,
        "Must not be before the startDate of the period.",
        super::input::START_OF_TERMINATED,
    );
    // Periods never overlap: named here with the other fields, held to where
    // the period is written (docs/api.md, "Periods of employment").
    let overlap = if change.rehire {
        // Re-hiring an active employee is a 409 below.
        match current.is_terminated() {
            true => employee::new_period_error(&mut tx, id, period).await?,
            false => None,
        }
    } else {
        employee::period_change_error(&mut tx, id, &current, period).await?
    };
    if !errors.iter().any(|e| e.field == "startDate") {
        errors.extend(overlap);
    }
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    // The references exist (missing_references above, in this transaction).
    check_placement(fields, &visibility)?;
    if change.rehire && !current.is_terminated() {
        return Err(ApiError::Conflict(
            "Only a terminated employee can be re-hired; this one is active.".into(),
        ));
    }
    let i9_allowed = match change.i9 {
        Some(wish) => {
            // `yes` refuses, `if allowed` adds no I-9 (service-spec, rules).
            match employee::i9_blocker(&mut tx, id).await? {
                Some(blocker) if !wish.if_allowed => return Err(blocker.into()),
                blocker => blocker.is_none(),
            }
        }
        None => false,
    };
    if let (true, None, Some(email)) = (change.login.create, current.login_id, email.as_deref()) {
        employee::check_login_free(&mut tx, email).await?;
    }
    // Last of the checks: a request refused anyway must not tell whether its
    // SSN is taken (api/src/ssn_writes.rs).
    check_unique(&mut tx, &state, &caller, &visibility, fields, Some(id)).await?;

    employee::update(&mut tx, &state.cipher, id, fields).await?;
    // A termination, its cancellation or a re-hire of a partner's employee
    // is posted to the partner from there (docs/partners.md).
    let base = state.config.public_base_url.as_str();
    if change.rehire {
        employee::start_period(&mut tx, id, period, base).await?;
        // Recorded on the existing I-9 instead of a new one, where the law
        // allows (docs/reverification.md, "Rehire").
        if change.rehire_i9 == RehireI9::SupplementB {
            supplement_b::rehire(
                &mut tx,
                &caller.actor(),
                id,
                state.config.today(),
                "rehireI9",
            )
            .await?;
        }
    } else if current.period_id.is_none()
        || change.start_date.is_some()
        || change.terminated_date.is_some()
    {
        employee::set_period(&mut tx, &caller.actor(), id, &current, period, base).await?;
    }
    let link = match change.i9 {
        Some(wish) if i9_allowed => {
            let request = I9Request::new(
                wish.onboarding,
                &state.config.public_base_url,
                state.config.section1_link_ttl,
            );
            request.insert(&mut tx, &state.cipher, id).await?;
            Some(request.link)
        }
        _ => None,
    };
    employee::login(
        &mut tx,
        change.login,
        id,
        email.as_deref(),
        current.login_id,
    )
    .await?;
    // A termination or a re-hire is named as such in the record's history
    // (docs/api.md, "History of a record").
    let action = if change.rehire {
        "employee.rehire"
    } else if matches!(change.terminated_date, Some(Some(_))) && !current.is_terminated() {
        "employee.terminate"
    } else {
        "employee.update"
    };
    employee::audit(&mut tx, &caller.actor(), action, id, change.audit_detail()).await?;

    let mut rec = fetch(&mut tx, &state, &caller, &visibility, id)
        .await?
        .ok_or(ApiError::NotFound)?;
    rec.i9_form_section1_link = link;
    tx.commit().await?;
    Ok((StatusCode::OK, axum::Json(rec)).into_response())
}

/// The body of an employee write (`POST /v1/employees`, `PATCH
/// /v1/employees/{id}`, the partner operation), read and checked by `check`.
/// A body with bad fields is one 422 that names them all and, with them, a
/// well-formed `locationId` or `legalEntity` that names nothing
/// (`not_found`; docs/api.md, "Writing employees"). A valid body's
/// references are the route's to check ([`check_references`]), where a group
/// outside the caller's is a 403: the usual create then asks nothing of the
/// database before its insert.
pub async fn read_body<T, O>(
    state: &AppState,
    body: &JsonBody<T>,
    check: impl FnOnce(T) -> Result<O, Vec<FieldError>>,
) -> ApiResult<O>
where
    T: RequestBody + NamesReferences,
{
    // Read before `check` takes the body; left empty when the body is not
    // read as fields at all (415, 400, or NUL, which gets only its own errors).
    let mut named = References::default();
    let checked = body.check(|b: T| {
        named = b.references();
        check(b)
    });
    let Err(ApiError::Validation(mut errors)) = checked else {
        return checked;
    };
    if named.location.is_some() || named.legal_entity.is_some() {
        let mut conn = state.pool.acquire().await?;
        match employee::check_references(&mut conn, named.location, named.legal_entity).await {
            Ok(()) => {}
            Err(WriteError::Invalid(missing)) => errors.extend(missing),
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::Validation(errors))
}

/// The `not_found` errors of a `locationId` or `legalEntity` that names
/// nothing, for a 422 that also names other fields; `current_location`, the
/// group the employee is in now, is known to exist.
async fn missing_references(
    conn: &mut PgConnection,
    fields: &EmployeeFields,
    current_location: i64,
) -> ApiResult<Vec<FieldError>> {
    let location = fields.location_id.filter(|l| *l != current_location);
    let legal_entity = fields.legal_entity_id.flatten();
    if location.is_none() && legal_entity.is_none() {
        return Ok(Vec::new());
    }
    match employee::check_references(conn, location, legal_entity).await {
        Ok(()) => Ok(Vec::new()),
        Err(WriteError::Invalid(missing)) => Ok(missing),
        Err(e) => Err(e.into()),
    }
}

/// `locationId` and `legalEntity` must exist (422, naming each missing
/// one); the caller must see the group (403).
pub async fn check_references(
    conn: &mut PgConnection,
    fields: &EmployeeFields,
    visibility: &Visibility,
) -> ApiResult<()> {
    employee::check_references(conn, fields.location_id, fields.legal_entity_id.flatten()).await?;
    check_placement(fields, visibility)
}

/// The caller must see the group it places the employee in (403).
fn check_placement(fields: &EmployeeFields, visibility: &Visibility) -> ApiResult<()> {
    if fields
        .location_id
        .is_some_and(|group| !visibility.may_place_in(group))
    {
        return Err(ApiError::Forbidden(
            "You cannot place employees in a group outside your own.".into(),
        ));
    }
    Ok(())
}

/// What a remote-hire I-9 and a sign-in need: the employee's email address.
fn require_email(change: &EmployeeChange, has_email: bool, has_login: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if !has_email {
        if change.i9.is_some_and(|w| w.onboarding.is_remote()) {
            errors.push(FieldError::new(
                "emailAddress",
                "required",
                "A remote-hire I-9 needs the employee's emailAddress.",
            ));
        } else if change.login.any() {
            errors.push(FieldError::new(
                "emailAddress",
                "required",
                "A sign-in needs the employee's emailAddress.",
            ));
        }
    }
    if change.login.send_email && !change.login.create && !has_login {
        errors.push(FieldError::new(
            "sendLoginEmail",
            "no_login",
            "The employee has no sign-in; send createLogin: true as well.",
        ));
    }
    errors
}

/// 409 when `profileId` or the SSN already belongs to another employee. The
/// answer names the holder only when the caller sees that employee and, for
/// an SSN, may see its full number (permission 12): otherwise naming it would
/// confirm a record outside the caller's groups, or reveal a masked number by
/// trial. Unnamed, it reads exactly as for any other holder, wherever it is
/// (docs/api.md, "Writing employees").
pub async fn check_unique(
    conn: &mut PgConnection,
    state: &AppState,
    caller: &Caller,
    visibility: &Visibility,
    fields: &EmployeeFields,
    me: Option<i64>,
) -> ApiResult<()> {
    let Some(Holder {
        field,
        id,
        location_id,
        client_id,
    }) = employee::holder(conn, &state.cipher, fields, me).await?
    else {
        return Ok(());
    };
    let mut named = visibility.sees(location_id, client_id);
    if field == "socialSecurityNumber" {
        ssn_writes::conflict(state, caller, id).await?;
        named &= caller.has(Permission::FullSsn);
    }
    Err(ApiError::Conflict(match named {
        // A partner re-hires its own candidates by pushing them again
        // (docs/partners.md); PATCH is out of its reach.
        true if caller.partner => format!("{field} already belongs to employee {id}."),
        true => format!(
            "{field} already belongs to employee {id}; re-hire with PATCH /v1/employees/{id}."
        ),
        false => format!("{field} already belongs to another employee."),
    }))
}

/// The Section 1 link of the I-9 request `request`, as the write that issued
/// it answered (for a replay); `None` when the I-9 it started was purged
/// since, the link with it (docs/api.md, "Idempotency").
pub async fn section1_link(
    conn: &mut PgConnection,
    state: &AppState,
    request: uuid::Uuid,
) -> ApiResult<Option<String>> {
    match i9_request::section1_link(conn, &state.cipher, &state.config.public_base_url, request)
        .await?
    {
        i9_request::StoredLink::Link(link) => Ok(Some(link)),
        // Its I-9 was purged since (the employee was re-hired, so it was
        // not): the link went with it (docs/retention.md).
        i9_request::StoredLink::Gone => Ok(None),
        i9_request::StoredLink::Undecryptable => Err(ApiError::Internal(anyhow::anyhow!(
            "a Section 1 token does not decrypt"
        ))),
    }
}

/// Why the one-statement create failed, in the caller's terms: a missing
/// reference (422), a group outside the caller's (403), or a duplicate (409,
/// see [`check_unique`]). The unique index fires before the foreign keys
/// are checked: a request with a missing reference is refused for that, so
/// that it does not tell whether its SSN is taken (api/src/ssn_writes.rs).
pub(crate) async fn create_error(
    e: sqlx::Error,
    state: &AppState,
    caller: &Caller,
    visibility: &Visibility,
    fields: &EmployeeFields,
) -> ApiError {
    let Some(constraint) = employee::create_constraint(&e).map(str::to_owned) else {
        return employee::constraint_error(e).into();
    };
    let explained = async {
        let mut conn = state.pool.begin().await?;
        check_references(&mut conn, fields, visibility).await?;
        if constraint.ends_with("_key") {
            check_unique(&mut conn, state, caller, visibility, fields, None).await?;
        }
        Ok::<(), ApiError>(())
    }
    .await;
    match explained {
        Err(err) => err,
        Ok(()) => employee::constraint_error(e).into(),
    }
}
