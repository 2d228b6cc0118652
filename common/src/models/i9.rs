//! The I-9: its creation from a request and each step of its lifecycle
//! (docs/api.md, "The I-9's states"), each in the transaction the caller
//! hands in.
//!
//! A step locks the I-9's row, asks its status for the next one
//! ([`I9Status::after`]) and writes only if the step is legal: an illegal one
//! is a [`WriteError::IllegalStep`] and writes nothing. The lock makes two
//! concurrent steps on one I-9 take turns, the second seeing the status the
//! first left. Each step writes its audit entry (`i9.section1`,
//! `i9.section2`, `i9.complete`, `i9.approve`, `i9.park`) and the partner
//! status event ([`events::record_status_change`]).

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;

use super::{
    audit::{self, Actor, Entry},
    section1_feed::{self, Attested},
    WriteError,
};
use crate::{
    crypto::{DataCipher, Purpose},
    domain::{
        calendar::Calendar, remote_examination, Attestation, I9Status, Section1Difference, Ssn,
        Step, FORM_VERSION,
    },
    events,
};

/// What an I-9 starts from: its employee's data at the time of the request.
#[derive(Debug, Clone, Default)]
pub struct NewI9 {
    pub employee_id: i64,
    /// The employee's current period of employment.
    pub employment_period_id: Option<i64>,
    /// Whether the employee completes Section 1 remotely.
    pub remote: bool,
    pub onboarding_type: Option<String>,
    /// The hire date; Section 2 is due three business days after it.
    pub start_date: Option<NaiveDate>,
    pub first_name: String,
    pub last_name: String,
    /// The I-9 keeps its first letter.
    pub middle_name: Option<String>,
    pub other_name: Option<String>,
    pub date_of_birth: Option<NaiveDate>,
    /// The number encrypted for the I-9 (`Purpose::I9Ssn`).
    pub ssn_ciphertext: Option<Vec<u8>>,
    pub ssn_last4: Option<String>,
    pub email_address: Option<String>,
    pub phone_number: Option<String>,
    pub address_street: Option<String>,
    pub address_apartment: Option<String>,
    pub address_city: Option<String>,
    pub address_state: Option<String>,
    pub address_zip: Option<String>,
    /// The partner push that started it (`IntegrationTransactionId`), if one did.
    pub integration_transaction_id: Option<String>,
}

/// Create an I-9 in [`I9Status::INITIAL`] and record its partner event (an
/// `i9.created`). An employee who already has an open I-9 is a
/// [`WriteError::Conflict`], and the transaction is then spent: see
/// [`open_of`] in a new one.
pub async fn create(
    conn: &mut PgConnection,
    new: &NewI9,
    public_base_url: &str,
) -> Result<i64, WriteError> {
    let middle_initial = new
        .middle_name
        .as_deref()
        .and_then(|m| m.chars().next())
        .map(String::from);
    let due = match new.start_date {
        Some(start) => date_due(&Calendar::load(&mut *conn, start).await?, Some(start)),
        None => None,
    };
    let inserted: Result<i64, sqlx::Error> = sqlx::query_scalar!(
        "INSERT INTO i9s (employee_id, employment_period_id, status, remote, onboarding_type, form_version,
                          date_created, date_due, start_date, first_name, last_name, middle_initial, other_name,
                          date_of_birth, ssn_ciphertext, ssn_last4, email_address, phone_number,
                          address_street, address_apartment, address_city, address_state, address_zip,
                          integration_transaction_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 $18, $19, $20, $21, $22, $23, $24)
         RETURNING id",
        new.employee_id,
        new.employment_period_id,
        I9Status::INITIAL.as_str(),
        new.remote,
        new.onboarding_type.as_deref(),
        FORM_VERSION,
        Utc::now(),
        due,
        new.start_date,
        &new.first_name,
        &new.last_name,
        middle_initial.as_deref(),
        new.other_name.as_deref(),
        new.date_of_birth,
        new.ssn_ciphertext.as_deref(),
        new.ssn_last4.as_deref(),
        new.email_address.as_deref(),
        new.phone_number.as_deref(),
        new.address_street.as_deref(),
        new.address_apartment.as_deref(),
        new.address_city.as_deref(),
        new.address_state.as_deref(),
        new.address_zip.as_deref(),
        new.integration_transaction_id.as_deref(),
    )
    .fetch_one(&mut *conn)
    .await;
    let id = match inserted {
        Ok(id) => id,
        Err(sqlx::Error::Database(db)) if db.constraint() == Some("i9s_one_open_per_employee") => {
            return Err(WriteError::Conflict(
                "The employee already has an open I-9.".into(),
            ))
        }
        Err(e) => return Err(e.into()),
    };
    events::record_status_change(conn, id, None, public_base_url).await?;
    Ok(id)
}

/// The Section 2 deadline of an I-9 whose employee starts on `start`: three
/// business days after it on the organization's `calendar` (weekdays less
/// its closed days; docs/calendar.md). The one rule, at the I-9's creation
/// and when its start date follows the period's ([`follow_start_date`]).
/// Read the calendar with [`Calendar::load`] from the start date on.
pub fn date_due(calendar: &Calendar, start: Option<NaiveDate>) -> Option<NaiveDate> {
    start.map(|s| calendar.section2_due(s))
}

/// The start date of period of employment `period`, employee `employee`'s
/// latest, changed to `start`: its open I-9s (before `Completed`) take it,
/// and the deadline that follows from it ([`date_due`]), each audited as
/// `i9.start_date` (fields `start_date`, `date_due`). A completed, approved
/// or parked I-9 keeps its dates: it records what happened (docs/api.md,
/// "Periods of employment"). Returns the ids of the I-9s changed.
pub async fn follow_start_date(
    conn: &mut PgConnection,
    actor: &Actor,
    employee: i64,
    period: i64,
    start: Option<NaiveDate>,
) -> Result<Vec<i64>, sqlx::Error> {
    let open = I9Status::OPEN.map(I9Status::as_str);
    let due = match start {
        Some(s) => date_due(&Calendar::load(&mut *conn, s).await?, start),
        None => None,
    };
    // An I-9 without a period is of the employee's latest one, as its record
    // reads it (api/src/routes/i9s.rs).
    let ids = sqlx::query_scalar!(
        "UPDATE i9s SET start_date = $3, date_due = $4, updated_at = now()
         WHERE (employment_period_id = $2 OR (employment_period_id IS NULL AND employee_id = $1))
           AND status = ANY($5)
           AND (start_date IS DISTINCT FROM $3 OR date_due IS DISTINCT FROM $4)
         RETURNING id",
        employee,
        period,
        start,
        due,
        &open[..] as &[&str],
    )
    .fetch_all(&mut *conn)
    .await?;
    for &id in &ids {
        audit::record(
            &mut *conn,
            actor,
            Entry::new("i9.start_date", "i9", id)
                .detail(json!({ "fields": ["start_date", "date_due"] })),
        )
        .await?;
    }
    Ok(ids)
}

/// What [`create_requested`] did with an I-9 request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    /// It created I-9 `id` for employee `employee_id` (`remote`: a remote hire).
    Created {
        id: i64,
        employee_id: i64,
        remote: bool,
    },
    /// The request had its I-9 already.
    Answered(i64),
}

/// An I-9 request, locked.
struct RequestRow {
    employee_id: i64,
    remote: bool,
    onboarding_type: Option<String>,
    i9_id: Option<i64>,
    integration_transaction_id: Option<String>,
}

/// What the I-9 copies from its employee: the employee's data and current
/// period of employment.
struct EmployeeRow {
    first_name: String,
    last_name: String,
    middle_name: Option<String>,
    other_name: Option<String>,
    date_of_birth: Option<NaiveDate>,
    ssn_ciphertext: Option<Vec<u8>>,
    ssn_last4: Option<String>,
    email_address: Option<String>,
    phone_number: Option<String>,
    address_street: Option<String>,
    address_apartment: Option<String>,
    address_city: Option<String>,
    address_state: Option<String>,
    address_zip: Option<String>,
    start_date: Option<NaiveDate>,
    period_id: Option<i64>,
}

/// Create the I-9 that request `request` asks for, from its employee's data
/// and current period now, and link the request to it ([`create`]: an
/// employee with an open I-9 is a [`WriteError::Conflict`] that spends the
/// transaction). The request's row is locked first: of two callers (the
/// worker's `create_i9`, and a partner re-hire that parks what the ended
/// employment left open), the second finds the I-9 of the first
/// ([`Requested::Answered`]). An unknown request is [`WriteError::NotFound`].
pub async fn create_requested(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    request: Uuid,
    public_base_url: &str,
) -> Result<Requested, WriteError> {
    let r = sqlx::query_as!(
        RequestRow,
        "SELECT employee_id, remote, onboarding_type, i9_id, integration_transaction_id
         FROM i9_requests WHERE id = $1 FOR UPDATE",
        request,
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(WriteError::NotFound)?;
    if let Some(id) = r.i9_id {
        return Ok(Requested::Answered(id));
    }
    let e = sqlx::query_as!(
        EmployeeRow,
        r#"SELECT e.first_name, e.last_name, e.middle_name, e.other_name, e.date_of_birth, e.ssn_ciphertext,
                  e.ssn_last4, e.email_address,
                  COALESCE(e.cell_number, e.home_number, e.work_number) AS phone_number,
                  e.address_street, e.address_apartment, e.address_city, e.address_state, e.address_zip,
                  p.start_date AS "start_date?", p.id AS "period_id?"
           FROM employees e
           LEFT JOIN LATERAL (SELECT id, start_date FROM employment_periods WHERE employee_id = e.id
                              ORDER BY id DESC LIMIT 1) p ON TRUE
           WHERE e.id = $1"#,
        r.employee_id,
    )
    .fetch_one(&mut *conn)
    .await?;
    // The I-9 keeps its own copy of the number, under its own key purpose.
    let ssn = match e.ssn_ciphertext {
        Some(ct) => {
            let ssn = cipher.decrypt_ssn(Purpose::EmployeeSsn, &ct)?;
            Some(cipher.encrypt_ssn(Purpose::I9Ssn, &ssn))
        }
        None => None,
    };
    let new = NewI9 {
        employee_id: r.employee_id,
        employment_period_id: e.period_id,
        remote: r.remote,
        onboarding_type: r.onboarding_type,
        start_date: e.start_date,
        first_name: e.first_name,
        last_name: e.last_name,
        middle_name: e.middle_name,
        other_name: e.other_name,
        date_of_birth: e.date_of_birth,
        ssn_ciphertext: ssn,
        ssn_last4: e.ssn_last4,
        email_address: e.email_address,
        phone_number: e.phone_number,
        address_street: e.address_street,
        address_apartment: e.address_apartment,
        address_city: e.address_city,
        address_state: e.address_state,
        address_zip: e.address_zip,
        integration_transaction_id: r.integration_transaction_id,
    };
    let id = create(conn, &new, public_base_url).await?;
    sqlx::query!(
        "UPDATE i9_requests SET i9_id = $2 WHERE id = $1",
        request,
        id,
    )
    .execute(&mut *conn)
    .await?;
    Ok(Requested::Created {
        id,
        employee_id: r.employee_id,
        remote: r.remote,
    })
}

/// Park what the ended employment of `employee` left open, for its re-hire
/// through the partner operation (docs/partners.md, "The service matches the
/// employee"): its open I-9, and the I-9 of a request still pending (created
/// now, then parked), each with its own status event and audit entry by
/// `actor`, `reason` added to its `i9Notes`. The employee's row must be
/// locked (no new request can start meanwhile). Returns the I-9s parked.
pub async fn park_for_rehire(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    actor: &Actor,
    employee: i64,
    reason: &str,
    public_base_url: &str,
) -> Result<Vec<i64>, WriteError> {
    let mut parked = Vec::new();
    // The open I-9 first: a pending request cannot become an I-9 beside it.
    if let Some(open) = open_of(conn, employee).await? {
        park_superseded(conn, actor, open, reason, public_base_url).await?;
        parked.push(open);
    }
    let pending = sqlx::query_scalar!(
        "SELECT id FROM i9_requests WHERE employee_id = $1 AND i9_id IS NULL",
        employee,
    )
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(request) = pending {
        // Created here, or by the worker a moment ago: parked either way.
        create_requested(conn, cipher, request, public_base_url).await?;
        if let Some(open) = open_of(conn, employee).await? {
            park_superseded(conn, actor, open, reason, public_base_url).await?;
            parked.push(open);
        }
    }
    Ok(parked)
}

/// Park open I-9 `id` because its employment ended and a new one began:
/// `reason` is added to its notes and to the audit entry.
async fn park_superseded(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    reason: &str,
    public_base_url: &str,
) -> Result<(), WriteError> {
    park_with(conn, actor, id, Notes::Append(reason), public_base_url).await
}

/// What a park does to `i9Notes`.
enum Notes<'a> {
    /// Replace them (an HR park with a reason), or keep them (`None`).
    Replace(Option<&'a str>),
    /// Add a line (a park the service makes), also named in the audit entry.
    Append(&'a str),
}

async fn park_with(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    notes: Notes<'_>,
    public_base_url: &str,
) -> Result<(), WriteError> {
    let (current, next) = begin(conn, id, Step::Park).await?;
    let (replace, append) = match notes {
        Notes::Replace(n) => (n, None),
        Notes::Append(n) => (None, Some(n)),
    };
    sqlx::query!(
        "UPDATE i9s SET status = $2, updated_at = now(),
                i9_notes = CASE WHEN $4::TEXT IS NULL THEN COALESCE($3, i9_notes)
                                WHEN coalesce(i9_notes, '') = '' THEN $4
                                ELSE i9_notes || chr(10) || $4 END
         WHERE id = $1",
        id,
        next.as_str(),
        replace,
        append,
    )
    .execute(&mut *conn)
    .await?;
    recorded(
        conn,
        actor,
        id,
        Step::Park,
        current.status,
        append.map(|reason| json!({ "reason": reason })),
        public_base_url,
    )
    .await
}

/// The employee's open I-9, if it has one.
pub async fn open_of(
    conn: &mut PgConnection,
    employee_id: i64,
) -> Result<Option<i64>, sqlx::Error> {
    let open = I9Status::OPEN.map(I9Status::as_str);
    sqlx::query_scalar!(
        "SELECT id FROM i9s WHERE employee_id = $1 AND status = ANY($2)",
        employee_id,
        &open[..] as &[&str],
    )
    .fetch_optional(conn)
    .await
}

/// `section1_differences` as stored (JSON).
pub type Differences = sqlx::types::Json<Vec<Section1Difference>>;

/// One I-9 as stored, every column a reader shows, with what it takes from
/// its employee (the groups and partner that see it, its legal entity).
/// The one read of an I-9's columns ([`record_row`]): `GET /v1/i9s/{id}`
/// (docs/api.md, "I-9s") builds its record from it, the inspection PDF
/// (docs/inspection.md) shows it.
#[derive(Debug, Clone, Default)]
pub struct RecordRow {
    pub id: i64,
    pub employee_id: i64,
    pub status: I9Status,
    pub i9_notes: Option<String>,
    pub form_type: i32,
    pub form_version: String,
    pub attestation: Option<Attestation>,
    pub remote: bool,
    pub integration_transaction_id: Option<String>,
    pub date_created: DateTime<Utc>,
    pub date_completed: Option<DateTime<Utc>>,
    pub date_due: Option<NaiveDate>,
    pub date_approved: Option<DateTime<Utc>>,
    pub start_date: Option<NaiveDate>,
    pub i9_expiration: Option<NaiveDate>,
    pub retention_date: Option<NaiveDate>,
    pub receipt_due_date: Option<NaiveDate>,
    pub signed_date_employee: Option<NaiveDate>,
    pub signed_date_employer: Option<NaiveDate>,
    pub signed_date_translator: Option<NaiveDate>,
    pub first_name: String,
    pub last_name: String,
    pub middle_initial: Option<String>,
    pub other_name: Option<String>,
    pub date_of_birth: Option<NaiveDate>,
    /// The number encrypted (`Purpose::I9Ssn`); only the API decrypts it,
    /// for a reader with permission 12 (docs/api.md, "I-9s").
    pub ssn_ciphertext: Option<Vec<u8>>,
    pub ssn_last4: Option<String>,
    pub email_address: Option<String>,
    pub phone_number: Option<String>,
    pub address_street: Option<String>,
    pub address_apartment: Option<String>,
    pub address_city: Option<String>,
    pub address_state: Option<String>,
    pub address_zip: Option<String>,
    pub work_authorization: Option<String>,
    pub work_authorization_expiration: Option<NaiveDate>,
    pub alien_number: Option<String>,
    pub admission_number: Option<String>,
    pub foreign_passport_number: Option<String>,
    pub foreign_passport_country: Option<String>,
    pub section1_differences: Option<Differences>,
    pub employer_first_name: Option<String>,
    pub employer_last_name: Option<String>,
    pub employer_title: Option<String>,
    pub employer_business: Option<String>,
    pub employer_address: Option<String>,
    pub employer_city: Option<String>,
    pub employer_state: Option<String>,
    pub employer_zip: Option<String>,
    pub translator_first_name: Option<String>,
    pub translator_last_name: Option<String>,
    pub translator_address: Option<String>,
    pub translator_city: Option<String>,
    pub translator_state: Option<String>,
    pub translator_zip: Option<String>,
    pub list_a1_doc_title: Option<String>,
    pub list_a1_doc_issuer: Option<String>,
    pub list_a1_doc_number: Option<String>,
    pub list_a1_doc_expiration: Option<NaiveDate>,
    pub list_a1_doc_receipt: bool,
    pub list_a2_doc_title: Option<String>,
    pub list_a2_doc_issuer: Option<String>,
    pub list_a2_doc_number: Option<String>,
    pub list_a2_doc_expiration: Option<NaiveDate>,
    pub list_a3_doc_title: Option<String>,
    pub list_a3_doc_issuer: Option<String>,
    pub list_a3_doc_number: Option<String>,
    pub list_a3_doc_expiration: Option<NaiveDate>,
    pub list_b_doc_title: Option<String>,
    pub list_b_doc_issuer: Option<String>,
    pub list_b_doc_number: Option<String>,
    pub list_b_doc_expiration: Option<NaiveDate>,
    pub list_b_doc_receipt: bool,
    pub list_c_doc_title: Option<String>,
    pub list_c_doc_issuer: Option<String>,
    pub list_c_doc_number: Option<String>,
    pub list_c_doc_expiration: Option<NaiveDate>,
    pub list_c_doc_receipt: bool,
    pub alternative_procedure: bool,
    /// When it was purged (docs/retention.md); the caller decides what a
    /// purged I-9 answers.
    pub purged_at: Option<DateTime<Utc>>,
    /// The employee's group and partner: who may see the I-9.
    pub location_id: i64,
    pub integration_client_id: Option<i64>,
    /// The employee's legal entity, if it has one.
    pub legal_entity_id: Option<i64>,
    pub legal_entity_name: Option<String>,
    pub ein: Option<String>,
}

/// I-9 `id` as stored ([`RecordRow`]), purged or not; `None` for no such I-9.
/// Visibility is the caller's to check.
pub async fn record_row(
    conn: &mut PgConnection,
    id: i64,
) -> Result<Option<RecordRow>, sqlx::Error> {
    sqlx::query_as!(
        RecordRow,
        r#"SELECT i.id, i.employee_id, i.status AS "status: I9Status", i.i9_notes, i.form_type,
                  i.form_version, i.attestation AS "attestation: Attestation", i.remote,
                  i.integration_transaction_id, i.date_created,
                  i.date_completed, i.date_due, i.date_approved, i.start_date, i.i9_expiration,
                  i.retention_date, i.receipt_due_date,
                  i.signed_date_employee, i.signed_date_employer, i.signed_date_translator,
                  i.first_name, i.last_name, i.middle_initial, i.other_name, i.date_of_birth,
                  i.ssn_ciphertext, i.ssn_last4,
                  i.email_address, i.phone_number, i.address_street, i.address_apartment, i.address_city,
                  i.address_state, i.address_zip, i.work_authorization, i.work_authorization_expiration,
                  i.alien_number, i.admission_number,
                  i.foreign_passport_number, i.foreign_passport_country,
                  i.section1_differences AS "section1_differences: Differences",
                  i.employer_first_name,
                  i.employer_last_name, i.employer_title, i.employer_business, i.employer_address,
                  i.employer_city, i.employer_state, i.employer_zip, i.translator_first_name,
                  i.translator_last_name, i.translator_address, i.translator_city, i.translator_state,
                  i.translator_zip,
                  i.list_a1_doc_title, i.list_a1_doc_issuer, i.list_a1_doc_number, i.list_a1_doc_expiration,
                  i.list_a1_doc_receipt,
                  i.list_a2_doc_title, i.list_a2_doc_issuer, i.list_a2_doc_number, i.list_a2_doc_expiration,
                  i.list_a3_doc_title, i.list_a3_doc_issuer, i.list_a3_doc_number, i.list_a3_doc_expiration,
                  i.list_b_doc_title, i.list_b_doc_issuer, i.list_b_doc_number, i.list_b_doc_expiration,
                  i.list_b_doc_receipt,
                  i.list_c_doc_title, i.list_c_doc_issuer, i.list_c_doc_number, i.list_c_doc_expiration,
                  i.list_c_doc_receipt, i.alternative_procedure, i.purged_at,
                  e.location_id, e.integration_client_id, e.legal_entity_id,
                  le.entity_name AS "legal_entity_name?", le.ein AS "ein?"
           FROM i9s i JOIN employees e ON e.id = i.employee_id
           LEFT JOIN legal_entities le ON le.id = e.legal_entity_id
           WHERE i.id = $1"#,
        id,
    )
    .fetch_optional(conn)
    .await
}

/// Section 1 as the employee signs it: every field checked, the attestation
/// one of the four. Optional contact fields and the number keep what the
/// I-9 holds when absent.
#[derive(Debug, Clone)]
pub struct Section1 {
    pub signed_on: NaiveDate,
    pub last_name: String,
    pub first_name: String,
    pub middle_initial: Option<String>,
    pub other_last_names: Option<String>,
    pub address_street: String,
    pub address_apartment: Option<String>,
    pub address_city: String,
    pub address_state: String,
    pub address_zip: String,
    pub date_of_birth: NaiveDate,
    /// Stored encrypted for the I-9 (`Purpose::I9Ssn`).
    pub ssn: Option<Ssn>,
    pub email_address: Option<String>,
    pub phone_number: Option<String>,
    pub attestation: Attestation,
    pub work_authorization_expiration: Option<NaiveDate>,
    pub alien_number: Option<String>,
    pub admission_number: Option<String>,
    pub foreign_passport_number: Option<String>,
    pub foreign_passport_country: Option<String>,
    /// Supplement A: who assisted the employee, in order (none when the
    /// employee did not use a preparer or translator); at most
    /// [`MAX_PREPARERS`].
    pub preparers: Vec<Preparer>,
}

/// The most preparers and/or translators one Section 1 records
/// (docs/supplement-a.md, "How many").
pub const MAX_PREPARERS: usize = 5;

/// One preparer and/or translator of Supplement A, checked: names, address,
/// a USPS state code, a ZIP code, the typed name that is their signature
/// and the day they signed (the day Section 1 is signed).
#[derive(Debug, Clone)]
pub struct Preparer {
    pub last_name: String,
    pub first_name: String,
    pub middle_initial: Option<String>,
    pub address: String,
    pub city: String,
    pub state: String,
    pub zip: String,
    pub signature: String,
    pub signed_on: NaiveDate,
}

/// Record the preparers and/or translators of I-9 `id`'s Section 1 in
/// order: each in `i9_preparers`, the first also in the I-9's `translator_*`
/// columns and `signed_date_translator` (docs/supplement-a.md). Part of
/// [`sign_section1`]'s transaction.
async fn record_preparers(
    conn: &mut PgConnection,
    id: i64,
    preparers: &[Preparer],
) -> Result<(), WriteError> {
    for (position, p) in (1_i16..).zip(preparers) {
        sqlx::query!(
            "INSERT INTO i9_preparers (i9_id, position, last_name, first_name, middle_initial,
                                       address, city, state, zip, signature, signed_date)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            id,
            position,
            &p.last_name,
            &p.first_name,
            p.middle_initial.as_deref(),
            &p.address,
            &p.city,
            &p.state,
            &p.zip,
            &p.signature,
            p.signed_on,
        )
        .execute(&mut *conn)
        .await?;
    }
    if let Some(first) = preparers.first() {
        sqlx::query!(
            "UPDATE i9s SET translator_last_name = $2, translator_first_name = $3,
                    translator_address = $4, translator_city = $5, translator_state = $6,
                    translator_zip = $7, signed_date_translator = $8
             WHERE id = $1",
            id,
            &first.last_name,
            &first.first_name,
            &first.address,
            &first.city,
            &first.state,
            &first.zip,
            first.signed_on,
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The I-9 as a step finds it, its row locked.
struct Current {
    status: I9Status,
    attestation: Option<Attestation>,
    work_authorization_expiration: Option<NaiveDate>,
}

/// Lock I-9 `id` and check that `step` is legal from its status: the status
/// it will have after the step, and what it held before.
async fn begin(
    conn: &mut PgConnection,
    id: i64,
    step: Step,
) -> Result<(Current, I9Status), WriteError> {
    let current = sqlx::query_as!(
        Current,
        r#"SELECT status AS "status: I9Status", attestation AS "attestation: Attestation",
                  work_authorization_expiration
           FROM i9s WHERE id = $1 FOR UPDATE"#,
        id,
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(WriteError::NotFound)?;
    let next = current.status.after(step)?;
    Ok((current, next))
}

/// The audit name of `step`.
fn action(step: Step) -> &'static str {
    match step {
        Step::SignSection1 => "i9.section1",
        Step::RecordSection2 => "i9.section2",
        Step::Complete => "i9.complete",
        Step::Approve => "i9.approve",
        Step::Park => "i9.park",
    }
}

/// The audit entry and the partner event of `step`, taken from `previous`.
async fn recorded(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    step: Step,
    previous: I9Status,
    detail: Option<serde_json::Value>,
    public_base_url: &str,
) -> Result<(), WriteError> {
    let mut entry = Entry::new(action(step), "i9", id);
    if let Some(detail) = detail {
        entry = entry.detail(detail);
    }
    audit::record(&mut *conn, actor, entry).await?;
    events::record_status_change(conn, id, Some(previous), public_base_url).await?;
    Ok(())
}

/// The Section 1 link of an I-9 being signed: its request, and the hash of
/// the token the employee came with (`None` when the signed-in employee
/// signs on their own page, docs/api.md "The employee's own page").
pub struct SigningLink<'a> {
    pub request: Uuid,
    pub token_hash: Option<&'a [u8]>,
}

/// The employee signs Section 1 of I-9 `id` through the link of request
/// `link`, which this uses up. A link used meanwhile is a
/// [`WriteError::Conflict`]. The employee record's empty fields take what
/// Section 1 attests, and the I-9 keeps where the two disagree
/// ([`section1_feed`]).
pub async fn sign_section1(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    actor: &Actor,
    id: i64,
    link: SigningLink<'_>,
    s: &Section1,
    public_base_url: &str,
) -> Result<(), WriteError> {
    // The employee first, then the I-9: the order of an employee write that
    // moves its open I-9 (a new start date), so that the two never wait on
    // each other (signing also fills the employee record).
    sqlx::query!(
        "SELECT e.id FROM employees e JOIN i9s i ON i.employee_id = e.id WHERE i.id = $1
         FOR UPDATE OF e",
        id,
    )
    .fetch_optional(&mut *conn)
    .await?;
    let (current, next) = begin(conn, id, Step::SignSection1).await?;
    // Signed through the link: that very link, not one re-issued since the
    // page was read (docs/api.md, "A new Section 1 link"); the signed-in
    // employee signs without one.
    let used = sqlx::query!(
        "UPDATE i9_requests SET section1_used_at = now()
         WHERE id = $1 AND i9_id = $2 AND section1_used_at IS NULL
           AND ($3::bytea IS NULL OR section1_token_hash = $3)",
        link.request,
        id,
        link.token_hash,
    )
    .execute(&mut *conn)
    .await?;
    if used.rows_affected() != 1 {
        return Err(WriteError::Conflict(
            "The Section 1 link has been used.".into(),
        ));
    }
    let stored = sqlx::query!(
        "UPDATE i9s SET status = $2, signed_date_employee = $3, last_name = $4, first_name = $5,
                middle_initial = $6, other_name = $7, address_street = $8, address_apartment = $9,
                address_city = $10, address_state = $11, address_zip = $12, date_of_birth = $13,
                email_address = COALESCE($14, email_address), phone_number = COALESCE($15, phone_number),
                attestation = $16, work_authorization = $16, work_authorization_expiration = $17,
                alien_number = $18, admission_number = $19, foreign_passport_number = $20,
                foreign_passport_country = $21,
                ssn_ciphertext = COALESCE($22, ssn_ciphertext), ssn_last4 = COALESCE($23, ssn_last4),
                updated_at = now()
         WHERE id = $1
         RETURNING employee_id, ssn_ciphertext",
        id,
        next.as_str(),
        s.signed_on,
        &s.last_name,
        &s.first_name,
        s.middle_initial.as_deref(),
        s.other_last_names.as_deref(),
        &s.address_street,
        s.address_apartment.as_deref(),
        &s.address_city,
        &s.address_state,
        &s.address_zip,
        s.date_of_birth,
        s.email_address.as_deref(),
        s.phone_number.as_deref(),
        s.attestation.as_str(),
        s.work_authorization_expiration,
        s.alien_number.as_deref(),
        s.admission_number.as_deref(),
        s.foreign_passport_number.as_deref(),
        s.foreign_passport_country.as_deref(),
        s.ssn.as_ref().map(|n| cipher.encrypt_ssn(Purpose::I9Ssn, n)),
        s.ssn.as_ref().map(Ssn::last4),
    )
    .fetch_one(&mut *conn)
    .await?;
    // A blank number keeps the one the I-9 holds: that is the one attested.
    let kept = match (&s.ssn, &stored.ssn_ciphertext) {
        (None, Some(ciphertext)) => match cipher.decrypt_ssn(Purpose::I9Ssn, ciphertext) {
            Ok(n) => Some(n),
            Err(_) => {
                tracing::warn!(
                    i9_id = id,
                    "the I-9's SSN does not decrypt; Section 1 leaves the employee's SSN as it is"
                );
                None
            }
        },
        _ => None,
    };
    let attested = Attested {
        date_of_birth: s.date_of_birth,
        ssn: s.ssn.as_ref().or(kept.as_ref()),
        address_street: &s.address_street,
        address_apartment: s.address_apartment.as_deref(),
        address_city: &s.address_city,
        address_state: &s.address_state,
        address_zip: &s.address_zip,
    };
    let differences =
        section1_feed::feed(conn, cipher, actor, id, stored.employee_id, &attested).await?;
    sqlx::query!(
        "UPDATE i9s SET section1_differences = $2 WHERE id = $1",
        id,
        sqlx::types::Json(&differences) as _,
    )
    .execute(&mut *conn)
    .await?;
    record_preparers(conn, id, &s.preparers).await?;
    recorded(
        conn,
        actor,
        id,
        Step::SignSection1,
        current.status,
        Some(json!({ "attestation": s.attestation, "preparers": s.preparers.len() })),
        public_base_url,
    )
    .await
}

/// One identity or employment authorization document examined in Section 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub title: String,
    pub issuer: String,
    pub number: String,
    pub expiration: Option<NaiveDate>,
    /// A receipt for the replacement of a lost, stolen or damaged document
    /// (List A's first, List B and List C only).
    pub receipt: bool,
}

/// The documents of Section 2: List A (one, or a combination of up to three
/// such as a foreign passport with Form I-94), or List B and List C.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Documents {
    ListA {
        first: Document,
        second: Option<Document>,
        third: Option<Document>,
    },
    ListBAndC {
        b: Document,
        c: Document,
    },
}

impl Documents {
    /// List A 1 to 3, List B, List C: the columns they fill.
    fn columns(&self) -> [Option<&Document>; 5] {
        match self {
            Self::ListA {
                first,
                second,
                third,
            } => [Some(first), second.as_ref(), third.as_ref(), None, None],
            Self::ListBAndC { b, c } => [None, None, None, Some(b), Some(c)],
        }
    }

    /// The document reverification follows: the (first) List A document,
    /// or the List C document.
    fn authorizing(&self) -> &Document {
        match self {
            Self::ListA { first, .. } => first,
            Self::ListBAndC { c, .. } => c,
        }
    }
}

/// The employer's representative who examined the documents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Employer {
    pub first_name: String,
    pub last_name: String,
    pub title: String,
    pub business: String,
    /// Absent, the I-9 keeps what it holds.
    pub address: Option<String>,
    pub city: Option<String>,
    pub state: Option<String>,
    pub zip: Option<String>,
}

/// Section 2 as the representative signs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section2 {
    pub documents: Documents,
    pub employer: Employer,
    /// `signedDateEmployer`.
    pub signed_on: NaiveDate,
    /// A document is a receipt for the replacement of a lost, stolen or
    /// damaged one: the real one is due 90 days after the date of hire
    /// (`receipt_due_date`; docs/reverification.md, "Receipts").
    pub receipt: bool,
    /// `alternativeProcedure`: the documents were examined remotely under
    /// the DHS-authorized alternative procedure (docs/remote-examination.md).
    pub alternative_procedure: bool,
}

/// Whether the employer of I-9 `id` (its employee's legal entity) may use
/// the DHS alternative procedure on `on`
/// ([`remote_examination::legal_entity_allows_alternative_procedure`]). An
/// I-9 that does not exist is allowed here: the step that asks finds it
/// missing. For Section 2 and Supplement B alike.
pub async fn alternative_procedure_allowed<'e>(
    db: impl sqlx::PgExecutor<'e>,
    id: i64,
    on: NaiveDate,
) -> Result<Result<(), remote_examination::Refusal>, sqlx::Error> {
    let row = sqlx::query!(
        r#"SELECT le.id AS "legal_entity_id?", le.entity_name AS "entity_name?", le.everify_id,
                  le.everify_effective_date, le.everify_status AS "everify_status?", le.active AS "active?"
           FROM i9s i JOIN employees e ON e.id = i.employee_id
           LEFT JOIN legal_entities le ON le.id = e.legal_entity_id
           WHERE i.id = $1"#,
        id,
    )
    .fetch_optional(db)
    .await?;
    let Some(row) = row else {
        return Ok(Ok(()));
    };
    let enrollment = row.legal_entity_id.map(|_| remote_examination::Enrollment {
        entity_name: row.entity_name.unwrap_or_default(),
        everify_id: row.everify_id,
        everify_effective_date: row.everify_effective_date,
        everify_status: row.everify_status.unwrap_or_default(),
        active: row.active.unwrap_or(false),
    });
    Ok(remote_examination::legal_entity_allows_alternative_procedure(enrollment.as_ref(), on))
}

/// The I-9's `i9Expiration` once the employment authorization rests on
/// the document titled `title` expiring on `expiry`, for an employee
/// attesting `attestation` whose work authorization ends on
/// `work_authorization` (Section 1's; `None` in Supplement B, where the
/// document is the newer evidence). One rule for Section 2, a
/// reverification and a receipt's replacement (docs/reverification.md):
/// a temporary I-551 is followed to its end, for a permanent resident too;
/// a document never reverified (U.S. passport, Permanent Resident Card)
/// brings no date; otherwise [`reverification`].
pub fn follow_up_expiry(
    attestation: Option<Attestation>,
    work_authorization: Option<NaiveDate>,
    title: &str,
    expiry: Option<NaiveDate>,
) -> Option<NaiveDate> {
    use super::supplement_b::{NEVER_REVERIFIED, TEMPORARY_I551};
    if title == TEMPORARY_I551 && attestation == Some(Attestation::PermanentResident) {
        return expiry;
    }
    let expiry = expiry.filter(|_| !NEVER_REVERIFIED.contains(&title));
    reverification(attestation, work_authorization, expiry)
}

/// When reverification falls due: for an employee reverified at all (an
/// alien authorized to work, or an attestation not yet known), the earlier
/// of the work authorization's end and the document's expiry.
fn reverification(
    attestation: Option<Attestation>,
    work_authorization: Option<NaiveDate>,
    document: Option<NaiveDate>,
) -> Option<NaiveDate> {
    if !Attestation::is_reverified(attestation) {
        return None;
    }
    match (work_authorization, document) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Record Section 2 of I-9 `id`: `Signed Sec 1` → `Signed Sec 2`.
pub async fn record_section2(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    s: &Section2,
    public_base_url: &str,
) -> Result<(), WriteError> {
    let (current, next) = begin(conn, id, Step::RecordSection2).await?;
    if s.alternative_procedure {
        if let Err(refusal) = alternative_procedure_allowed(&mut *conn, id, s.signed_on).await? {
            let e = refusal.invalid();
            return Err(WriteError::invalid(
                remote_examination::FIELD,
                e.code,
                e.message,
            ));
        }
    }
    let authorizing = s.documents.authorizing();
    let i9_expiration = follow_up_expiry(
        current.attestation,
        current.work_authorization_expiration,
        &authorizing.title,
        authorizing.expiration,
    );
    // List A 1 to 3, List B, List C: $13 to $32, four columns each.
    let [a1, a2, a3, b, c] = s.documents.columns();
    fn title(d: Option<&Document>) -> Option<&str> {
        d.map(|d| d.title.as_str())
    }
    fn issuer(d: Option<&Document>) -> Option<&str> {
        d.map(|d| d.issuer.as_str())
    }
    fn number(d: Option<&Document>) -> Option<&str> {
        d.map(|d| d.number.as_str())
    }
    fn expiration(d: Option<&Document>) -> Option<NaiveDate> {
        d.and_then(|d| d.expiration)
    }
    fn receipt(d: Option<&Document>) -> bool {
        d.is_some_and(|d| d.receipt)
    }
    sqlx::query!(
        "UPDATE i9s SET status = $2, signed_date_employer = $3, i9_expiration = $4,
                employer_first_name = $5, employer_last_name = $6, employer_title = $7,
                employer_business = $8, employer_address = COALESCE($9, employer_address),
                employer_city = COALESCE($10, employer_city), employer_state = COALESCE($11, employer_state),
                employer_zip = COALESCE($12, employer_zip),
                list_a1_doc_title = $13, list_a1_doc_issuer = $14, list_a1_doc_number = $15, list_a1_doc_expiration = $16,
                list_a2_doc_title = $17, list_a2_doc_issuer = $18, list_a2_doc_number = $19, list_a2_doc_expiration = $20,
                list_a3_doc_title = $21, list_a3_doc_issuer = $22, list_a3_doc_number = $23, list_a3_doc_expiration = $24,
                list_b_doc_title = $25, list_b_doc_issuer = $26, list_b_doc_number = $27, list_b_doc_expiration = $28,
                list_c_doc_title = $29, list_c_doc_issuer = $30, list_c_doc_number = $31, list_c_doc_expiration = $32,
                alternative_procedure = $33, list_a1_doc_receipt = $34, list_b_doc_receipt = $35,
                list_c_doc_receipt = $36, updated_at = now()
         WHERE id = $1",
        id,
        next.as_str(),
        s.signed_on,
        i9_expiration,
        &s.employer.first_name,
        &s.employer.last_name,
        &s.employer.title,
        &s.employer.business,
        s.employer.address.as_deref(),
        s.employer.city.as_deref(),
        s.employer.state.as_deref(),
        s.employer.zip.as_deref(),
        title(a1),
        issuer(a1),
        number(a1),
        expiration(a1),
        title(a2),
        issuer(a2),
        number(a2),
        expiration(a2),
        title(a3),
        issuer(a3),
        number(a3),
        expiration(a3),
        title(b),
        issuer(b),
        number(b),
        expiration(b),
        title(c),
        issuer(c),
        number(c),
        expiration(c),
        s.alternative_procedure,
        receipt(a1),
        receipt(b),
        receipt(c),
    )
    .execute(&mut *conn)
    .await?;
    if s.receipt {
        // The date of hire is the I-9's start date (Section 2's date when
        // it has none).
        let hired = sqlx::query_scalar!("SELECT start_date FROM i9s WHERE id = $1", id)
            .fetch_one(&mut *conn)
            .await?
            .unwrap_or(s.signed_on);
        sqlx::query!(
            "UPDATE i9s SET receipt_due_date = $2 WHERE id = $1",
            id,
            super::supplement_b::receipt_due(hired),
        )
        .execute(&mut *conn)
        .await?;
    }
    recorded(
        conn,
        actor,
        id,
        Step::RecordSection2,
        current.status,
        None,
        public_base_url,
    )
    .await
}

/// Mark I-9 `id` complete: `Signed Sec 2` → `Completed` (`dateCompleted`).
pub async fn complete(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    public_base_url: &str,
) -> Result<(), WriteError> {
    let (current, next) = begin(conn, id, Step::Complete).await?;
    sqlx::query!(
        "UPDATE i9s SET status = $2, date_completed = now(), updated_at = now() WHERE id = $1",
        id,
        next.as_str(),
    )
    .execute(&mut *conn)
    .await?;
    recorded(
        conn,
        actor,
        id,
        Step::Complete,
        current.status,
        None,
        public_base_url,
    )
    .await
}

/// Approve I-9 `id`: `Completed` → `Approved` (`dateApproved`).
pub async fn approve(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    public_base_url: &str,
) -> Result<(), WriteError> {
    let (current, next) = begin(conn, id, Step::Approve).await?;
    sqlx::query!(
        "UPDATE i9s SET status = $2, date_approved = now(), updated_at = now() WHERE id = $1",
        id,
        next.as_str(),
    )
    .execute(&mut *conn)
    .await?;
    recorded(
        conn,
        actor,
        id,
        Step::Approve,
        current.status,
        None,
        public_base_url,
    )
    .await
}

/// Park I-9 `id` from any status before `Approved`, with `notes` (kept in
/// `i9Notes`; absent, the notes it holds stay).
pub async fn park(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    notes: Option<&str>,
    public_base_url: &str,
) -> Result<(), WriteError> {
    park_with(conn, actor, id, Notes::Replace(notes), public_base_url).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2030, 1, d).unwrap()
    }

    #[test]
    fn reverification_is_the_earlier_expiry_for_those_reverified() {
        let alien = Some(Attestation::AlienAuthorizedToWork);
        assert_eq!(
            reverification(alien, Some(day(5)), Some(day(9))),
            Some(day(5))
        );
        assert_eq!(
            reverification(alien, Some(day(9)), Some(day(5))),
            Some(day(5))
        );
        assert_eq!(reverification(alien, None, Some(day(5))), Some(day(5)));
        assert_eq!(reverification(None, Some(day(7)), None), Some(day(7)));
        assert_eq!(reverification(alien, None, None), None);
        assert_eq!(
            reverification(Some(Attestation::Citizen), Some(day(5)), Some(day(9))),
            None
        );
        assert_eq!(
            reverification(Some(Attestation::PermanentResident), None, Some(day(9))),
            None
        );
    }

    #[test]
    fn documents_fill_their_columns_and_the_list_a_or_c_expiry_counts() {
        let doc = |t: &str, e: Option<NaiveDate>| Document {
            title: t.into(),
            issuer: "i".into(),
            number: "n".into(),
            expiration: e,
            receipt: false,
        };
        let a = Documents::ListA {
            first: doc("U.S. Passport", Some(day(3))),
            second: None,
            third: None,
        };
        assert_eq!(
            a.columns().map(|d| d.is_some()),
            [true, false, false, false, false]
        );
        assert_eq!(a.authorizing().title, "U.S. Passport");
        let bc = Documents::ListBAndC {
            b: doc("Driver's License", Some(day(1))),
            c: doc("Social Security Card", None),
        };
        assert_eq!(
            bc.columns().map(|d| d.is_some()),
            [false, false, false, true, true]
        );
        assert_eq!(
            bc.authorizing().title,
            "Social Security Card",
            "the List B document's expiry does not count"
        );
        let stamp = Documents::ListA {
            first: doc(super::super::supplement_b::TEMPORARY_I551, Some(day(4))),
            second: None,
            third: None,
        };
        assert_eq!(stamp.authorizing().expiration, Some(day(4)));
    }

    #[test]
    fn the_follow_up_date_is_one_rule_for_every_document() {
        use super::super::supplement_b::TEMPORARY_I551;
        let alien = Some(Attestation::AlienAuthorizedToWork);
        let resident = Some(Attestation::PermanentResident);
        let citizen = Some(Attestation::Citizen);
        let ead = "Employment Authorization Document (Form I-766)";
        assert_eq!(
            follow_up_expiry(alien, Some(day(5)), ead, Some(day(9))),
            Some(day(5))
        );
        assert_eq!(
            follow_up_expiry(alien, None, ead, Some(day(9))),
            Some(day(9))
        );
        // A temporary I-551 is followed, for a permanent resident too.
        assert_eq!(
            follow_up_expiry(resident, None, TEMPORARY_I551, Some(day(4))),
            Some(day(4))
        );
        assert_eq!(
            follow_up_expiry(None, None, TEMPORARY_I551, Some(day(4))),
            Some(day(4))
        );
        // Never for a citizen, whatever the document; never a document that
        // is never reverified, whoever shows it.
        assert_eq!(
            follow_up_expiry(citizen, None, "U.S. Passport", Some(day(4))),
            None
        );
        assert_eq!(
            follow_up_expiry(citizen, None, TEMPORARY_I551, Some(day(4))),
            None
        );
        assert_eq!(
            follow_up_expiry(None, None, "U.S. Passport", Some(day(4))),
            None
        );
        assert_eq!(
            follow_up_expiry(
                alien,
                None,
                "Permanent Resident Card (Form I-551)",
                Some(day(4))
            ),
            None
        );
        assert_eq!(follow_up_expiry(resident, None, ead, Some(day(4))), None);
    }

    #[test]
    fn every_step_has_its_audit_name() {
        let names: Vec<&str> = Step::ALL.into_iter().map(action).collect();
        assert_eq!(
            names,
            [
                "i9.section1",
                "i9.section2",
                "i9.complete",
                "i9.approve",
                "i9.park"
            ]
        );
    }
}
