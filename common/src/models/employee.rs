//! Employees: the typed fields a write sets, and the operations that write
//! them (create, update, re-hire, the period of employment, the employee's
//! sign-in). The API's `POST`/`PATCH /v1/employees`, the partner operation
//! and `i9-admin seed` all write employees through here.

use chrono::NaiveDate;
use sqlx::{PgConnection, Postgres, QueryBuilder};

use super::{
    audit::{self, Actor, Entry},
    i9,
    i9_request::I9Request,
    FieldError, WriteError,
};
use crate::{
    crypto::{DataCipher, Purpose},
    domain::{
        fields::{
            City, Country, Custom, EmployeeEmail, Extension, JobTitle, MiddleName,
            NotificationEmail, OtherName, PersonName, Phone, ProfileId, State, Street, Zip,
        },
        I9Status, Language, OnboardingType, Ssn,
    },
    events::{self, EmploymentEventType},
    jobs::Job,
    outbox,
};

/// The stored fields of an employee that a write sets. `None`: leave as it
/// is (absent from a PATCH); `Some(None)`: clear. A create sets what it has.
#[derive(Debug, Clone, Default)]
pub struct EmployeeFields {
    pub first_name: Option<PersonName>,
    pub last_name: Option<PersonName>,
    pub middle_name: Option<Option<MiddleName>>,
    pub ssn: Option<Option<Ssn>>,
    pub date_of_birth: Option<Option<NaiveDate>>,
    pub profile_id: Option<Option<ProfileId>>,
    pub other_name: Option<Option<OtherName>>,
    pub job_title: Option<Option<JobTitle>>,
    pub email_address: Option<Option<EmployeeEmail>>,
    pub location_id: Option<i64>,
    pub legal_entity_id: Option<Option<i64>>,
    pub language: Option<Option<Language>>,
    pub custom: [Option<Option<Custom>>; 8],
    pub notification_email1: Option<Option<NotificationEmail>>,
    pub notification_email2: Option<Option<NotificationEmail>>,
    pub address_street: Option<Option<Street>>,
    pub address_street2: Option<Option<Street>>,
    pub address_apartment: Option<Option<Street>>,
    pub address_city: Option<Option<City>>,
    pub address_state: Option<Option<State>>,
    pub address_country: Option<Option<Country>>,
    pub address_zip: Option<Option<Zip>>,
    pub work_number: Option<Option<Phone>>,
    pub work_extension: Option<Option<Extension>>,
    pub home_number: Option<Option<Phone>>,
    pub home_extension: Option<Option<Extension>>,
    pub cell_number: Option<Option<Phone>>,
    pub cell_extension: Option<Option<Extension>>,
}

/// A value bound into a statement; text borrows the field it comes from.
#[derive(Debug, Clone)]
enum Bind<'a> {
    Text(Option<&'a str>),
    Date(Option<NaiveDate>),
    Int(Option<i64>),
    SmallInt(Option<i16>),
    Bytes(Option<Vec<u8>>),
    Hashes(Option<Vec<Vec<u8>>>),
}

fn push_bind<'a>(q: &mut QueryBuilder<'a, Postgres>, v: Bind<'a>) {
    match v {
        Bind::Text(t) => q.push_bind(t),
        Bind::Date(d) => q.push_bind(d),
        Bind::Int(i) => q.push_bind(i),
        Bind::SmallInt(i) => q.push_bind(i),
        Bind::Bytes(b) => q.push_bind(b),
        Bind::Hashes(h) => q.push_bind(h),
    };
}

const CUSTOM_COLUMNS: [&str; 8] = [
    "custom1", "custom2", "custom3", "custom4", "custom5", "custom6", "custom7", "custom8",
];

impl EmployeeFields {
    /// The columns this write sets, in table order: the one place where a
    /// field meets its column.
    fn columns(&self) -> Vec<(&'static str, Bind<'_>)> {
        fn text<'a, const N: usize>(
            out: &mut Vec<(&'static str, Bind<'a>)>,
            column: &'static str,
            v: &'a Option<Option<crate::domain::fields::Text<N>>>,
        ) {
            if let Some(v) = v {
                out.push((column, Bind::Text(v.as_ref().map(|t| t.as_str()))));
            }
        }
        fn email<'a, const N: usize>(
            out: &mut Vec<(&'static str, Bind<'a>)>,
            column: &'static str,
            v: &'a Option<Option<crate::domain::fields::Email<N>>>,
        ) {
            if let Some(v) = v {
                out.push((column, Bind::Text(v.as_ref().map(|t| t.as_str()))));
            }
        }
        let mut out = Vec::new();
        if let Some(v) = &self.first_name {
            out.push(("first_name", Bind::Text(Some(v.as_str()))));
        }
        if let Some(v) = &self.last_name {
            out.push(("last_name", Bind::Text(Some(v.as_str()))));
        }
        text(&mut out, "middle_name", &self.middle_name);
        if let Some(v) = self.date_of_birth {
            out.push(("date_of_birth", Bind::Date(v)));
        }
        text(&mut out, "profile_id", &self.profile_id);
        text(&mut out, "other_name", &self.other_name);
        text(&mut out, "job_title", &self.job_title);
        email(&mut out, "email_address", &self.email_address);
        if let Some(v) = self.location_id {
            out.push(("location_id", Bind::Int(Some(v))));
        }
        if let Some(v) = self.legal_entity_id {
            out.push(("legal_entity_id", Bind::Int(v)));
        }
        if let Some(v) = self.language {
            out.push(("language_preference", Bind::SmallInt(v.map(Language::id))));
        }
        for (column, v) in CUSTOM_COLUMNS.iter().zip(&self.custom) {
            text(&mut out, column, v);
        }
        email(&mut out, "notification_email1", &self.notification_email1);
        email(&mut out, "notification_email2", &self.notification_email2);
        text(&mut out, "address_street", &self.address_street);
        text(&mut out, "address_street2", &self.address_street2);
        text(&mut out, "address_apartment", &self.address_apartment);
        text(&mut out, "address_city", &self.address_city);
        text(&mut out, "address_state", &self.address_state);
        text(&mut out, "address_country", &self.address_country);
        text(&mut out, "address_zip", &self.address_zip);
        text(&mut out, "work_number", &self.work_number);
        text(&mut out, "work_extension", &self.work_extension);
        text(&mut out, "home_number", &self.home_number);
        text(&mut out, "home_extension", &self.home_extension);
        text(&mut out, "cell_number", &self.cell_number);
        text(&mut out, "cell_extension", &self.cell_extension);
        out
    }

    /// The names of the columns this write sets (for the audit log: names,
    /// never values).
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.columns().into_iter().map(|(c, _)| c).collect();
        if self.ssn.is_some() {
            names.push("ssn");
        }
        names
    }

    pub fn email(&self) -> Option<Option<&str>> {
        self.email_address
            .as_ref()
            .map(|e| e.as_ref().map(|e| e.as_str()))
    }

    pub fn profile(&self) -> Option<&str> {
        self.profile_id
            .as_ref()
            .and_then(|p| p.as_ref())
            .map(|p| p.as_str())
    }

    /// The new SSN this write sets, if any.
    pub fn new_ssn(&self) -> Option<&Ssn> {
        self.ssn.as_ref().and_then(Option::as_ref)
    }

    /// Every column this write sets with its value, the SSN's included.
    fn assignments(&self, cipher: &DataCipher) -> Vec<(&'static str, Bind<'_>)> {
        let mut columns = self.columns();
        if let Some(ssn) = &self.ssn {
            let ssn = ssn.as_ref();
            columns.extend([
                (
                    "ssn_ciphertext",
                    Bind::Bytes(ssn.map(|s| cipher.encrypt_ssn(Purpose::EmployeeSsn, s))),
                ),
                (
                    "ssn_hash",
                    Bind::Bytes(ssn.map(|s| cipher.ssn_search_hash(s))),
                ),
                // The uniqueness trigger looks for these (migrations,
                // `..._ssn_unique_across_hash_keys`).
                (
                    "ssn_hash_check",
                    Bind::Hashes(ssn.map(|s| cipher.ssn_search_hashes(s))),
                ),
                ("ssn_last4", Bind::Text(ssn.map(|s| s.last4()))),
            ]);
        }
        columns
    }

    fn push_insert<'a>(&'a self, q: &mut QueryBuilder<'a, Postgres>, cipher: &DataCipher) {
        let assignments = self.assignments(cipher);
        q.push("INSERT INTO employees (");
        for (i, (c, _)) in assignments.iter().enumerate() {
            if i > 0 {
                q.push(", ");
            }
            q.push(*c);
        }
        q.push(") VALUES (");
        for (i, (_, v)) in assignments.into_iter().enumerate() {
            if i > 0 {
                q.push(", ");
            }
            push_bind(q, v);
        }
        q.push(")");
    }
}

/// A period of employment: its start and, once terminated, its end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Period {
    pub start: Option<NaiveDate>,
    pub terminated: Option<NaiveDate>,
}

impl Period {
    /// `terminatedDate` must not be before `startDate`, and a terminated
    /// period has a `startDate` (`start_message` says so).
    pub fn check(&self, errors: &mut Vec<FieldError>, message: &str, start_message: &str) {
        if let (Some(s), Some(t)) = (self.start, self.terminated) {
            if t < s && !errors.iter().any(|e| e.field == "terminatedDate") {
                errors.push(FieldError::new("terminatedDate", "before_start", message));
            }
        }
        if self.terminated.is_some()
            && self.start.is_none()
            && !errors.iter().any(|e| e.field == "startDate")
        {
            errors.push(FieldError::new("startDate", "required", start_message));
        }
    }
}

/// The employee's sign-in: `create` it (login = email address, no password
/// until the employee sets one), and/or `send_email` with the link to set one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoginWish {
    pub create: bool,
    pub send_email: bool,
}

impl LoginWish {
    pub fn any(self) -> bool {
        self.create || self.send_email
    }
}

/// The role every employee's own sign-in gets.
const SELF_SERVICE_ROLE: &str = "employee self-service";

/// `locationId` and `legalEntity` must exist: `Invalid` names each missing one.
pub async fn check_references(
    conn: &mut PgConnection,
    location: Option<i64>,
    legal_entity: Option<i64>,
) -> Result<(), WriteError> {
    let found = sqlx::query!(
        r#"SELECT ($1::BIGINT IS NULL OR EXISTS (SELECT 1 FROM groups WHERE id = $1)) AS "group!",
                  ($2::BIGINT IS NULL OR EXISTS (SELECT 1 FROM legal_entities WHERE id = $2)) AS "entity!""#,
        location,
        legal_entity,
    )
    .fetch_one(&mut *conn)
    .await?;
    let (group, entity) = (found.group, found.entity);
    let mut errors = Vec::new();
    if !group {
        errors.push(FieldError::new(
            "locationId",
            "not_found",
            "No group has this id.",
        ));
    }
    if !entity {
        errors.push(FieldError::new(
            "legalEntity",
            "not_found",
            "No legal entity has this id.",
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(WriteError::Invalid(errors))
    }
}

/// Another employee that holds `profile` or `ssn`, for the 409 of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    /// `profileId` or `socialSecurityNumber`.
    pub field: &'static str,
    pub id: i64,
    pub location_id: i64,
    pub client_id: Option<i64>,
}

/// The first employee other than `me` that holds the profile id or (under
/// any key of the ring) the SSN that `fields` sets.
pub async fn holder(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    fields: &EmployeeFields,
    me: Option<i64>,
) -> Result<Option<Holder>, sqlx::Error> {
    if let Some(profile) = fields.profile() {
        let row = sqlx::query!(
            "SELECT id, location_id, integration_client_id FROM employees
             WHERE lower(profile_id) = lower($1) AND id IS DISTINCT FROM $2",
            profile,
            me,
        )
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(r) = row {
            return Ok(Some(Holder {
                field: "profileId",
                id: r.id,
                location_id: r.location_id,
                client_id: r.integration_client_id,
            }));
        }
    }
    if let Some(ssn) = fields.new_ssn() {
        let row = sqlx::query!(
            "SELECT id, location_id, integration_client_id FROM employees
             WHERE ssn_hash = ANY($1) AND id IS DISTINCT FROM $2",
            &cipher.ssn_search_hashes(ssn)[..],
            me,
        )
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(r) = row {
            return Ok(Some(Holder {
                field: "socialSecurityNumber",
                id: r.id,
                location_id: r.location_id,
                client_id: r.integration_client_id,
            }));
        }
    }
    Ok(None)
}

/// The constraint a write broke, in the caller's terms (a concurrent write
/// that the checks before it could not see).
pub fn constraint_error(e: sqlx::Error) -> WriteError {
    let conflict = |s: &str| WriteError::Conflict(s.to_owned());
    match &e {
        sqlx::Error::Database(db) => match db.constraint() {
            Some("employees_profile_id_key") => {
                conflict("profileId already belongs to another employee.")
            }
            Some("employees_ssn_hash_key") => {
                conflict("socialSecurityNumber already belongs to another employee.")
            }
            Some("i9_requests_one_pending" | "i9s_one_open_per_employee") => {
                conflict("The employee has an open I-9 (or one being created).")
            }
            Some("users_login_key") => {
                conflict("emailAddress is already the login of another user.")
            }
            // Two partner pushes of one new candidate at once: the other won.
            Some("employees_integration_candidate_key") => conflict(
                "Another request created this candidate a moment ago, and its answer carried \
                 the Section 1 link. Send each push with an Idempotency-Key: a repeated push then \
                 gets the first answer again.",
            ),
            _ => WriteError::Database(e),
        },
        _ => WriteError::Database(e),
    }
}

/// The constraint a failed create broke, if it is one a check can explain
/// (a missing reference or a taken profile id or SSN).
pub fn create_constraint(e: &sqlx::Error) -> Option<&str> {
    match e {
        sqlx::Error::Database(db) => db.constraint().filter(|c| {
            matches!(
                *c,
                "employees_location_id_fkey"
                    | "employees_legal_entity_id_fkey"
                    | "employees_profile_id_key"
                    | "employees_ssn_hash_key"
            )
        }),
        _ => None,
    }
}

/// Create an employee with its first period of employment, its audit entry
/// (`action`, e.g. `employee.create` or `partner.create`, with `detail`) and,
/// when given, its I-9 request and that request's job, in **one statement**:
/// a create without an idempotency key or a sign-in needs no transaction (one
/// round trip; BENCHMARKS.md shows what it is worth). `ssn_read`: the answer
/// shows the full SSN, a read that is audited too. A first period needs none
/// of [`start_period`]'s checks: there is no earlier one to overlap or
/// re-hire after.
///
/// On a broken constraint the error is the database's: the caller finds out
/// which rule it broke with [`check_references`] and [`holder`], in the
/// caller's terms (see [`create_constraint`]).
#[allow(clippy::too_many_arguments)]
pub async fn create<R>(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    actor: &Actor,
    fields: &EmployeeFields,
    period: Period,
    action: &str,
    detail: serde_json::Value,
    request: Option<&I9Request>,
    ssn_read: bool,
) -> Result<R, sqlx::Error>
where
    R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    let mut q = QueryBuilder::<Postgres>::new("WITH e AS (");
    fields.push_insert(&mut q, cipher);
    q.push(" RETURNING *), p AS (INSERT INTO employment_periods (employee_id, start_date, terminated_date) SELECT id, ");
    q.push_bind(period.start)
        .push(", ")
        .push_bind(period.terminated)
        .push(" FROM e)");
    audit::push_cte(&mut q, "a", actor, action, "employee", "e", Some(detail));
    if ssn_read {
        audit::push_cte(&mut q, "s", actor, "ssn.read", "employee", "e", None);
    }
    if let Some(r) = request {
        r.push_ctes(&mut q, cipher);
    }
    q.push(
        " SELECT e.*, e.last_name || ', ' || e.first_name AS full_name, d.start_date, d.terminated_date,
                 'Not Started' AS i9_status, NULL::DATE AS i9_expiration, NULL::BIGINT AS section2_i9_id",
    );
    q.push(" FROM e, (SELECT ").push_bind(period.start);
    q.push("::DATE AS start_date, ")
        .push_bind(period.terminated);
    q.push("::DATE AS terminated_date) d");
    q.build_query_as().fetch_one(&mut *conn).await
}

/// Insert an employee with the fields given, alone (the partner operation,
/// whose period and audit entry are its own); returns its id.
pub async fn insert(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    fields: &EmployeeFields,
) -> Result<i64, WriteError> {
    let mut q = QueryBuilder::<Postgres>::new("");
    fields.push_insert(&mut q, cipher);
    q.push(" RETURNING id");
    q.build_query_scalar()
        .fetch_one(&mut *conn)
        .await
        .map_err(constraint_error)
}

/// Write `fields` to employee `id`.
pub async fn update(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    id: i64,
    fields: &EmployeeFields,
) -> Result<(), WriteError> {
    let assignments = fields.assignments(cipher);
    if assignments.is_empty() {
        return Ok(());
    }
    let mut q = QueryBuilder::<Postgres>::new("UPDATE employees SET updated_at = now()");
    for (c, v) in assignments {
        q.push(", ").push(c).push(" = ");
        push_bind(&mut q, v);
    }
    q.push(" WHERE id = ").push_bind(id);
    q.build()
        .execute(&mut *conn)
        .await
        .map_err(constraint_error)?;
    Ok(())
}

/// [`update`], only when a value differs from the stored one (a rerun of
/// `i9-admin seed` changes nothing); returns whether it changed anything.
/// The SSN's columns are always new values: leave `fields.ssn` unset when
/// the number is the stored one.
pub async fn update_if_changed(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    id: i64,
    fields: &EmployeeFields,
) -> Result<bool, WriteError> {
    let assignments = fields.assignments(cipher);
    if assignments.is_empty() {
        return Ok(false);
    }
    let mut q = QueryBuilder::<Postgres>::new("UPDATE employees SET updated_at = now()");
    for (c, v) in &assignments {
        q.push(", ").push(*c).push(" = ");
        push_bind(&mut q, v.clone());
    }
    // The uniqueness trigger's input is not stored as written.
    let compared: Vec<_> = assignments
        .into_iter()
        .filter(|(c, _)| *c != "ssn_hash_check")
        .collect();
    q.push(" WHERE id = ").push_bind(id).push(" AND (");
    for (i, (c, _)) in compared.iter().enumerate() {
        q.push(if i == 0 { "" } else { ", " }).push(*c);
    }
    q.push(", NULL) IS DISTINCT FROM (");
    for (i, (c, v)) in compared.into_iter().enumerate() {
        q.push(if i == 0 { "" } else { ", " });
        push_bind(&mut q, v);
        if c == "language_preference" {
            q.push("::SMALLINT");
        }
    }
    q.push(", NULL)");
    let done = q
        .build()
        .execute(&mut *conn)
        .await
        .map_err(constraint_error)?;
    Ok(done.rows_affected() > 0)
}

/// An employee as a write finds it, locked for the rest of the transaction:
/// concurrent writes to one employee take turns.
#[derive(Debug, Clone)]
pub struct Locked {
    pub location_id: i64,
    pub integration_client_id: Option<i64>,
    pub email_address: Option<String>,
    /// The employee's own sign-in, if it has one.
    pub login_id: Option<i64>,
    /// The latest period of employment.
    pub period_id: Option<i64>,
    pub start_date: Option<NaiveDate>,
    pub terminated_date: Option<NaiveDate>,
    /// Purged with its I-9s at the end of their retention (its destruction
    /// record says when: retention::employee_destruction).
    pub purged: bool,
}

impl Locked {
    pub fn period(&self) -> Period {
        Period {
            start: self.start_date,
            terminated: self.terminated_date,
        }
    }

    pub fn is_terminated(&self) -> bool {
        self.period_id.is_some() && self.terminated_date.is_some()
    }
}

/// Lock employee `id` for a write (`None`: no such employee).
pub async fn lock(conn: &mut PgConnection, id: i64) -> Result<Option<Locked>, sqlx::Error> {
    sqlx::query_as!(
        Locked,
        r#"SELECT e.location_id, e.integration_client_id, e.email_address,
                  (SELECT id FROM users WHERE employee_id = e.id) AS "login_id?",
                  p.id AS "period_id?", p.start_date AS "start_date?", p.terminated_date AS "terminated_date?",
                  e.purged_at IS NOT NULL AS "purged!"
           FROM employees e
           LEFT JOIN LATERAL (SELECT id, start_date, terminated_date FROM employment_periods
                              WHERE employee_id = e.id ORDER BY id DESC LIMIT 1) p ON true
           WHERE e.id = $1 FOR UPDATE OF e"#,
        id,
    )
    .fetch_optional(&mut *conn)
    .await
}

/// The partner's candidate `candidate` of client `client`, locked.
pub async fn lock_candidate(
    conn: &mut PgConnection,
    client: i64,
    candidate: &str,
) -> Result<Option<(i64, Locked)>, sqlx::Error> {
    let id = sqlx::query_scalar!(
        "SELECT id FROM employees WHERE integration_client_id = $1 AND integration_candidate_id = $2",
        client,
        candidate,
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(id) = id else { return Ok(None) };
    Ok(lock(conn, id).await?.map(|l| (id, l)))
}

/// What a change of the current period of employment from `was` to `now`
/// tells a partner: a termination date set or changed is a termination, one
/// removed cancels it; a change of the start date alone tells nothing. A new
/// period after an earlier one (a re-hire) is [`start_period`]'s.
pub fn employment_change(was: Period, now: Period) -> Option<EmploymentEventType> {
    match (was.terminated, now.terminated) {
        (None, Some(_)) => Some(EmploymentEventType::Terminated),
        (Some(a), Some(b)) if a != b => Some(EmploymentEventType::Terminated),
        (Some(_), None) => Some(EmploymentEventType::TerminationCancelled),
        _ => None,
    }
}

/// Periods of employment never overlap (docs/api.md, "Periods of
/// employment"): a period starts after the employee's earlier periods ended.
/// The `startDate` of a new period (a re-hire) must be after every period
/// the employee has; `None` when it is, or when it has no start to compare.
/// [`start_period`] holds to it; a route asks first, to name the field with
/// the body's other errors.
pub async fn new_period_error(
    conn: &mut PgConnection,
    id: i64,
    period: Period,
) -> Result<Option<FieldError>, sqlx::Error> {
    overlap_error(conn, id, period.start, None).await
}

/// The same rule for a change of the current period (`current`, as [`lock`]
/// found it) to `period`: a `startDate` that changes must be after the
/// periods before it, and a period after an earlier one (a re-hire's) keeps
/// a `startDate` (docs/api.md, "Periods of employment": a re-hire is made
/// with one, and without it the period could not be held after the earlier
/// ones). [`set_period`] holds to it.
pub async fn period_change_error(
    conn: &mut PgConnection,
    id: i64,
    current: &Locked,
    period: Period,
) -> Result<Option<FieldError>, sqlx::Error> {
    match current.period_id {
        Some(pid) if period.start != current.start_date => match period.start {
            Some(_) => overlap_error(conn, id, period.start, Some(pid)).await,
            None => Ok(has_earlier_period(conn, id, pid)
                .await?
                .then(|| FieldError::new("startDate", "required", START_OF_REHIRE))),
        },
        // The first period (none yet), or the start kept as it is.
        _ => Ok(None),
    }
}

/// Why a re-hire's period keeps its start.
pub const START_OF_REHIRE: &str =
    "Needed on a period of employment after an earlier one (a re-hire): it cannot be removed.";

/// Whether employee `id` has a period of employment before period `before`.
async fn has_earlier_period(
    conn: &mut PgConnection,
    id: i64,
    before: i64,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM employment_periods WHERE employee_id = $1 AND id < $2) AS "earlier!""#,
        id,
        before,
    )
    .fetch_one(&mut *conn)
    .await
}

/// `start` against the employee's periods (those before period `before`,
/// or all of them): it must be after the last date any of them covers.
async fn overlap_error(
    conn: &mut PgConnection,
    id: i64,
    start: Option<NaiveDate>,
    before: Option<i64>,
) -> Result<Option<FieldError>, sqlx::Error> {
    let Some(start) = start else { return Ok(None) };
    let bounds = sqlx::query!(
        r#"SELECT max(terminated_date) AS terminated, max(start_date) AS started
           FROM employment_periods WHERE employee_id = $1 AND ($2::BIGINT IS NULL OR id < $2)"#,
        id,
        before,
    )
    .fetch_one(&mut *conn)
    .await?;
    // The last date covered: a termination date, or (a period left without
    // one, which the API does not write before a later period) a start.
    let last = match (bounds.terminated, bounds.started) {
        (Some(t), Some(s)) if s > t => Some((s, "startDate")),
        (Some(t), _) => Some((t, "terminatedDate")),
        (None, s) => s.map(|s| (s, "startDate")),
    };
    Ok(match last {
        Some((last, what)) if start <= last => Some(FieldError::new(
            "startDate",
            "before_termination",
            format!(
                "Must be after {last}, the {what} of the employee's previous period of \
                 employment: periods of employment do not overlap."
            ),
        )),
        _ => None,
    })
}

/// Set the latest period of employment of `id` (its first when it has none)
/// to `period`, from `current` (the employee as [`lock`] found it). A change
/// of its employment ([`employment_change`]) is recorded as a partner event
/// when the employee is a partner's (docs/partners.md, "Status callbacks"),
/// whoever makes it: this is the one place the current period is changed.
/// A `startDate` on or before the previous period's end is refused
/// ([`period_change_error`]). A changed `startDate` moves the period's open
/// I-9 with it (its `startDate` and `dateDue`, [`i9::follow_start_date`],
/// audited as `actor`'s), whoever changes it (docs/api.md, "Periods of
/// employment").
pub async fn set_period(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    current: &Locked,
    period: Period,
    public_base_url: &str,
) -> Result<(), WriteError> {
    if let Some(e) = period_change_error(conn, id, current, period).await? {
        return Err(WriteError::Invalid(vec![e]));
    }
    match current.period_id {
        Some(pid) => {
            sqlx::query!(
                "UPDATE employment_periods SET start_date = $2, terminated_date = $3 WHERE id = $1",
                pid,
                period.start,
                period.terminated,
            )
            .execute(&mut *conn)
            .await?;
            if period.start != current.start_date {
                i9::follow_start_date(conn, actor, id, pid, period.start).await?;
            }
        }
        None => insert_period(conn, id, period).await.map(|_| ())?,
    }
    if let Some(kind) = employment_change(current.period(), period) {
        events::record_employment_change(
            conn,
            id,
            kind,
            period.start,
            period.terminated,
            public_base_url,
        )
        .await?;
    }
    Ok(())
}

/// Start a new period of employment of `id`: its first (a new employee), or
/// a re-hire, which is recorded as a partner event (`employee.rehired`) when
/// the employee is a partner's, whoever re-hires it. It starts after the
/// employee's earlier periods ([`new_period_error`]).
pub async fn start_period(
    conn: &mut PgConnection,
    id: i64,
    period: Period,
    public_base_url: &str,
) -> Result<(), WriteError> {
    if let Some(e) = new_period_error(conn, id, period).await? {
        return Err(WriteError::Invalid(vec![e]));
    }
    if insert_period(conn, id, period).await? {
        events::record_employment_change(
            conn,
            id,
            EmploymentEventType::Rehired,
            period.start,
            None,
            public_base_url,
        )
        .await?;
    }
    Ok(())
}

/// Insert a period of employment of `id`; returns whether it had one before.
async fn insert_period(
    conn: &mut PgConnection,
    id: i64,
    period: Period,
) -> Result<bool, sqlx::Error> {
    // The statement's subquery sees the table as it was before the insert.
    sqlx::query_scalar!(
        r#"INSERT INTO employment_periods (employee_id, start_date, terminated_date) VALUES ($1, $2, $3)
           RETURNING EXISTS (SELECT 1 FROM employment_periods WHERE employee_id = $1) AS "earlier!""#,
        id,
        period.start,
        period.terminated,
    )
    .fetch_one(&mut *conn)
    .await
}

/// Why `employee` cannot get a new I-9 now (service-spec, the rules for
/// `createI9`): an open I-9 (or one being created), or an unresolved
/// verification record, an E-Verify case not yet closed (docs/everify.md,
/// "Unresolved verification records"). `None`: it can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum I9Blocker {
    OpenI9,
    UnresolvedCase { case_id: i64 },
}

impl I9Blocker {
    /// The E-Verify case that blocks, if that is the reason: the API
    /// answers it as `/problems/unresolved-verification` with `caseId`
    /// (docs/api.md, "Errors").
    pub fn case_id(&self) -> Option<i64> {
        match self {
            Self::OpenI9 => None,
            Self::UnresolvedCase { case_id } => Some(*case_id),
        }
    }

    /// The 409's message, naming the case (whoever sees the employee sees
    /// its cases) and what the caller can do about it.
    pub fn message(&self) -> String {
        match self {
            Self::OpenI9 => {
                "The employee has an open I-9 (or one being created); finish or park it first."
                    .to_owned()
            }
            Self::UnresolvedCase { case_id } => format!(
                "The employee has an unresolved verification record: E-Verify case {case_id} \
                 (/v1/everify-cases/{case_id}) is not closed. The employer takes it to its end \
                 or closes it first (POST /v1/everify-cases/{case_id}/close; docs/everify.md)."
            ),
        }
    }
}

/// What keeps `employee` from a new I-9, if anything ([`I9Blocker`]).
pub async fn i9_blocker(
    conn: &mut PgConnection,
    employee: i64,
) -> Result<Option<I9Blocker>, sqlx::Error> {
    let open = I9Status::OPEN.map(I9Status::as_str);
    let row = sqlx::query!(
        r#"SELECT EXISTS (SELECT 1 FROM i9s WHERE employee_id = $1 AND status = ANY($2))
               OR EXISTS (SELECT 1 FROM i9_requests WHERE employee_id = $1 AND i9_id IS NULL) AS "open!",
                  (SELECT min(id) FROM everify_cases WHERE employee_id = $1 AND status <> 'Closed') AS "case_id""#,
        employee,
        &open[..] as &[&str],
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(match (row.open, row.case_id) {
        (true, _) => Some(I9Blocker::OpenI9),
        (false, Some(case_id)) => Some(I9Blocker::UnresolvedCase { case_id }),
        (false, None) => None,
    })
}

/// 409 when `email`, the login a `createLogin` would create, is taken.
pub async fn check_login_free(conn: &mut PgConnection, email: &str) -> Result<(), WriteError> {
    let taken = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM users WHERE lower(login) = lower($1)) AS "taken!""#,
        email,
    )
    .fetch_one(&mut *conn)
    .await?;
    if taken {
        return Err(WriteError::Conflict(
            "emailAddress is already the login of another user.".into(),
        ));
    }
    Ok(())
}

/// The employee's sign-in, as `wish` asks: create it (login = `email`) when
/// it has none (`user`), and queue the email with the link to set a password.
pub async fn login(
    conn: &mut PgConnection,
    wish: LoginWish,
    employee: i64,
    email: Option<&str>,
    mut user: Option<i64>,
) -> Result<(), WriteError> {
    if wish.create && user.is_none() {
        let Some(email) = email else { return Ok(()) };
        check_login_free(conn, email).await?;
        user = Some(
            sqlx::query_scalar!(
                "INSERT INTO users (login, first_name, last_name, email_address, role_id, employee_id)
                 SELECT $1, e.first_name, e.last_name, $1, r.id, e.id
                 FROM employees e, roles r WHERE e.id = $2 AND lower(r.name) = $3
                 RETURNING id",
                email,
                employee,
                SELF_SERVICE_ROLE,
            )
            .fetch_one(&mut *conn)
            .await
            .map_err(constraint_error)?,
        );
    }
    if wish.send_email {
        if let Some(user_id) = user {
            outbox::enqueue(conn, Job::SendLoginEmail { user_id }).await?;
        }
    }
    Ok(())
}

/// What links an employee to the partner (an ATS client) that pushed it.
#[derive(Debug, Clone)]
pub struct Integration<'a> {
    pub client_id: i64,
    pub client_system: &'a str,
    pub hr_url: Option<&'a str>,
    pub candidate: &'a str,
    pub onboarding: OnboardingType,
    pub request_id: Option<&'a str>,
    /// The push's `IntegrationTransactionId`: `None` for a push that starts
    /// no I-9 (a re-hire on Supplement B), which keeps the employee's, the
    /// id of the I-9 it re-hires on (docs/partners.md, "Transaction ids").
    pub transaction_id: Option<&'a str>,
    /// The employee's record is reported at `{public_base_url}/v1/employees/{id}`.
    pub public_base_url: &'a str,
    /// Where the employee's browser goes after signing Section 1.
    pub return_url: Option<&'a str>,
}

/// Record that partner `link.client_id` pushed employee `id` (its callbacks
/// and its reach follow from here).
pub async fn link_partner(
    conn: &mut PgConnection,
    id: i64,
    link: &Integration<'_>,
) -> Result<(), WriteError> {
    sqlx::query!(
        "UPDATE employees SET integration_client_id = $2, integration_client_system = $3, integration_hr_url = $4,
                integration_candidate_id = $5, integration_client_process = $6, integration_request_id = $7,
                integration_transaction_id = COALESCE($8, integration_transaction_id), integration_service_id = 'i9-section1',
                integration_report_url = $9 || '/v1/employees/' || id, employee_return_url = $10, updated_at = now()
         WHERE id = $1",
        id,
        link.client_id,
        link.client_system,
        link.hr_url,
        link.candidate,
        link.onboarding.as_str(),
        link.request_id,
        link.transaction_id,
        link.public_base_url,
        link.return_url,
    )
    .execute(&mut *conn)
    .await
    .map_err(constraint_error)?;
    Ok(())
}

/// Audit a write of employee `id`.
pub async fn audit(
    conn: &mut PgConnection,
    actor: &Actor,
    action: &str,
    id: i64,
    detail: serde_json::Value,
) -> Result<(), sqlx::Error> {
    audit::record(
        conn,
        actor,
        Entry::new(action, "employee", id).detail(detail),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(terminated: Option<u32>) -> Period {
        let day = |d| NaiveDate::from_ymd_opt(2026, 12, d).unwrap();
        Period {
            start: Some(day(1)),
            terminated: terminated.map(day),
        }
    }

    #[test]
    fn a_termination_set_changed_or_removed_is_an_employment_change() {
        use EmploymentEventType::{Terminated, TerminationCancelled};
        let cases = [
            (None, None, None),
            (None, Some(20), Some(Terminated)),
            (Some(20), Some(20), None),
            (Some(20), Some(22), Some(Terminated)),
            (Some(20), None, Some(TerminationCancelled)),
        ];
        for (was, now, expected) in cases {
            assert_eq!(
                employment_change(period(was), period(now)),
                expected,
                "{was:?} -> {now:?}"
            );
        }
        let moved_start = Period {
            start: NaiveDate::from_ymd_opt(2026, 11, 2),
            ..period(Some(20))
        };
        assert_eq!(employment_change(period(Some(20)), moved_start), None);
    }
}
