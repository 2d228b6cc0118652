//! Supplement B of Form I-9, "Reverification and Rehire"
//! (docs/reverification.md): each entry recorded on a Completed or Approved
//! I-9 and kept as history (`i9_supplement_b`, never updated), with the
//! I-9's current `i9_expiration` and `receipt_due_date` recomputed in the
//! same transaction. Three kinds:
//!
//! - [`Kind::Reverification`]: the work authorization or its List A / List
//!   C document expires; the employee presents a List A or a List C
//!   document (or a receipt for one lost, stolen or damaged). Refused for
//!   whom and what the handbook exempts ([`exemption`]).
//! - [`Kind::ReceiptUpdate`]: the real document replaces the receipt; the
//!   pending `receipt_due_date` is cleared.
//! - [`Kind::Rehire`]: a re-hire within three years of the I-9's execution
//!   ([`rehire_window_ends`]) recorded on it instead of a new I-9; the I-9
//!   then covers the new period of employment.
//!
//! Each is audited (`i9.reverify`, `i9.receipt_update`, `i9.rehire`).

use chrono::{Days, Months, NaiveDate};
use serde_json::json;
use sqlx::PgConnection;

use super::{
    audit::{self, Actor, Entry},
    FieldError, WriteError,
};
use crate::domain::{remote_examination, Attestation, I9Status};

/// A receipt for a lost, stolen or damaged document is valid this long
/// (I-9 Central, "Receipts"; M-274 "Acceptable Receipts"; docs/reverification.md).
pub const RECEIPT_DAYS: u64 = 90;

/// A rehire may be recorded on the I-9 this long after its execution
/// (M-274 6.0, "Completing Supplement B, Reverification and Rehire of Form
/// I-9"; E-Verify; docs/reverification.md, "Sources").
pub const REHIRE_MONTHS: u32 = 36;

/// The kind of a Supplement B entry, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Reverification,
    Rehire,
    ReceiptUpdate,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reverification => "reverification",
            Self::Rehire => "rehire",
            Self::ReceiptUpdate => "receipt_update",
        }
    }

    /// The audit action (docs/api.md, "History of a record").
    pub fn action(self) -> &'static str {
        match self {
            Self::Reverification => "i9.reverify",
            Self::Rehire => "i9.rehire",
            Self::ReceiptUpdate => "i9.receipt_update",
        }
    }
}

/// The list of the document presented: List A or C; List B (identity
/// only) only as the replacement of a List B document shown as a receipt
/// in Section 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentList {
    A,
    B,
    C,
}

impl DocumentList {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::A => "A",
            Self::B => "B",
            Self::C => "C",
        }
    }
}

/// The document the employee presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    pub list: DocumentList,
    pub title: String,
    pub issuer: Option<String>,
    pub number: String,
    pub expiration: Option<NaiveDate>,
    /// A receipt for the replacement of a lost, stolen or damaged document.
    pub receipt: bool,
}

/// "New Name (if applicable)": each part given only when it changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewName {
    pub last_name: Option<String>,
    pub first_name: Option<String>,
    pub middle_initial: Option<String>,
}

/// Who signs the entry, and when: "Name of Employer or Authorized
/// Representative", "Signature of Employer or Authorized Representative",
/// "Today's Date".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub employer_name: String,
    pub employer_signature: String,
    pub signed_on: NaiveDate,
}

/// A reverification or a receipt update, as the representative signs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reverification {
    pub document: Presented,
    pub new_name: NewName,
    pub signed: Signed,
    pub additional_information: Option<String>,
    pub alternative_procedure: bool,
}

/// The day a receipt presented on `from` (the date of hire, or the
/// reverification's date) must be replaced by the real document.
pub fn receipt_due(from: NaiveDate) -> NaiveDate {
    from.checked_add_days(Days::new(RECEIPT_DAYS))
        .unwrap_or(NaiveDate::MAX)
}

/// The last day a rehire may be recorded on an I-9 executed on `executed`:
/// three years later (29 February: 28 February three years on).
pub fn rehire_window_ends(executed: NaiveDate) -> NaiveDate {
    executed
        .checked_add_months(Months::new(REHIRE_MONTHS))
        .unwrap_or(NaiveDate::MAX)
}

/// The List A titles of documents never reverified, even once expired
/// (M-274 6.0 and 7.1; docs/reverification.md, "Sources"): a U.S. passport or
/// passport card, a Permanent Resident Card.
pub const NEVER_REVERIFIED: [&str; 3] = [
    "U.S. Passport",
    "U.S. Passport Card",
    "Permanent Resident Card (Form I-551)",
];

/// The List A titles that always carry an expiration date, the date
/// reverification falls due: an EAD ("Card Expires") and the temporary
/// I-551 stamp. Recorded without one (and not as a receipt), an I-9 would
/// never be followed up: Section 2 and Supplement B require it
/// (docs/reverification.md, "Reverification").
pub const ALWAYS_EXPIRE: [&str; 2] = [
    "Employment Authorization Document (Form I-766)",
    TEMPORARY_I551,
];

/// Why a document titled `title` (a `receipt` or not) must be recorded
/// with its expiration: the message of a `required`, or `None`.
pub fn expiration_required(title: &str, receipt: bool) -> Option<String> {
    (!receipt && ALWAYS_EXPIRE.contains(&title)).then(|| {
        format!(
            "This document ({title}) always has an expiration date: give it (reverification \
             falls due on it)."
        )
    })
}

/// The temporary evidence of permanent residence that IS reverified when
/// its stamp expires (M-274 7.1, "Temporary Form I-551 Requires
/// Reverification").
pub const TEMPORARY_I551: &str = "Foreign Passport with I-551 Stamp";

/// Why the I-9 of an employee attesting `attestation`, whose employment
/// authorization rests on the document titled `document` (the latest
/// Supplement B document, else Section 2's first List A or its List C
/// document) and expires on `expires`, is not reverified; `None` when it
/// is. One rule, the handbook's (M-274 6.0, 7.1; docs/reverification.md).
pub fn exemption(
    attestation: Option<Attestation>,
    document: Option<&str>,
    expires: Option<NaiveDate>,
) -> Option<FieldError> {
    let refused = |field: &str, code: &'static str, message: &str| {
        Some(FieldError::new(field, code, message))
    };
    match attestation {
        Some(Attestation::Citizen) => {
            return refused(
                "attestation",
                "citizen_not_reverified",
                "The employee attested U.S. citizenship: a U.S. citizen is never reverified.",
            )
        }
        Some(Attestation::NoncitizenNational) => {
            return refused(
                "attestation",
                "national_not_reverified",
                "The employee attested U.S. noncitizen nationality: a noncitizen national is never reverified.",
            )
        }
        Some(Attestation::PermanentResident) if document != Some(TEMPORARY_I551) => {
            return refused(
                "attestation",
                "permanent_resident_not_reverified",
                "The employee attested lawful permanent residence: a permanent resident is never \
                 reverified, except one who presented a temporary I-551 (a foreign passport with an \
                 I-551 stamp) whose stamp expires.",
            )
        }
        _ => {}
    }
    if let Some(title) = document.filter(|t| NEVER_REVERIFIED.contains(t)) {
        return refused(
            "i9",
            "document_not_reverified",
            &format!("The I-9's document ({title}) is never reverified, even after it expires."),
        );
    }
    if expires.is_none() {
        return refused(
            "i9",
            "nothing_expires",
            "The I-9 records no expiring work authorization or List A / List C document: there is nothing to reverify.",
        );
    }
    None
}

/// The statuses on which Supplement B is recorded.
const RECORDED_ON: [I9Status; 2] = [I9Status::Completed, I9Status::Approved];

fn check_status(status: I9Status) -> Result<(), WriteError> {
    if RECORDED_ON.contains(&status) {
        Ok(())
    } else {
        Err(WriteError::Conflict(format!(
            "The I-9 is {status}; Supplement B is recorded on a Completed or Approved I-9."
        )))
    }
}

/// The I-9 as Supplement B finds it, its row locked.
struct Current {
    status: I9Status,
    attestation: Option<Attestation>,
    i9_expiration: Option<NaiveDate>,
    receipt_due_date: Option<NaiveDate>,
    /// The latest Supplement B document of List A or C, else Section 2's
    /// List A or C.
    document: Option<String>,
    /// The pending receipt was recorded in Supplement B (a reverification
    /// with a receipt, for a List A or C document), not in Section 2.
    receipt_in_supplement_b: bool,
}

async fn lock(conn: &mut PgConnection, id: i64) -> Result<Current, WriteError> {
    sqlx::query_as!(
        Current,
        r#"SELECT i.status AS "status: I9Status", i.attestation AS "attestation: Attestation",
                  i.i9_expiration, i.receipt_due_date,
                  COALESCE((SELECT s.document_title FROM i9_supplement_b s
                            WHERE s.i9_id = i.id AND s.document_title IS NOT NULL
                              AND s.document_list <> 'B'
                            ORDER BY s.id DESC LIMIT 1),
                           i.list_a1_doc_title, i.list_c_doc_title) AS document,
                  EXISTS (SELECT 1 FROM i9_supplement_b s
                          WHERE s.i9_id = i.id AND s.receipt
                            AND s.receipt_due_date = i.receipt_due_date) AS "receipt_in_supplement_b!"
           FROM i9s i WHERE i.id = $1 FOR UPDATE"#,
        id,
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(WriteError::NotFound)
}

/// The alternative procedure (remote examination of the documents) is
/// allowed only to an E-Verify employer in good standing: Section 2's rule
/// (`i9::alternative_procedure_allowed`, docs/remote-examination.md), the
/// same refusal on `alternativeProcedure`.
async fn alternative_procedure_error(
    conn: &mut PgConnection,
    id: i64,
    asked: bool,
    on: NaiveDate,
) -> Result<Option<FieldError>, sqlx::Error> {
    if !asked {
        return Ok(None);
    }
    Ok(super::i9::alternative_procedure_allowed(&mut *conn, id, on)
        .await?
        .err()
        .map(|refusal| {
            let invalid = refusal.invalid();
            FieldError::new(remote_examination::FIELD, invalid.code, invalid.message)
        }))
}

/// Record a reverification (`kind` [`Kind::Reverification`]) or the real
/// document replacing a receipt ([`Kind::ReceiptUpdate`]) on I-9 `id`.
/// 409: the I-9 is not Completed or Approved; a reverification while a
/// receipt is pending; a receipt update with none pending. 422: what the
/// handbook exempts ([`exemption`]), the alternative procedure without
/// E-Verify.
pub async fn reverify(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    kind: Kind,
    r: &Reverification,
) -> Result<(), WriteError> {
    let current = lock(conn, id).await?;
    check_status(current.status)?;
    let mut errors = Vec::new();
    match kind {
        Kind::ReceiptUpdate => {
            if current.receipt_due_date.is_none() {
                // What to do instead, only when there is something to do: an
                // I-9 never reverified says why (the 422's reason).
                let instead = match exemption(
                    current.attestation,
                    current.document.as_deref(),
                    current.i9_expiration,
                ) {
                    None => format!(
                        " When its document expires, record a reverification with \
                         POST /v1/i9s/{id}/reverify."
                    ),
                    Some(why) => format!(" It is not reverified either. {}", why.message),
                };
                return Err(WriteError::Conflict(format!(
                    "No receipt is pending on this I-9, so there is nothing to update.{instead}"
                )));
            }
            if r.document.list == DocumentList::B && current.receipt_in_supplement_b {
                errors.push(FieldError::new(
                    "documentTitle",
                    "list_b",
                    "The receipt pending was recorded in Supplement B, for a List A or List C \
                     document: its replacement is a List A or List C document.",
                ));
            }
        }
        _ => {
            if let Some(due) = current.receipt_due_date {
                return Err(WriteError::Conflict(format!(
                    "A receipt is pending on this I-9 until {due}: record the real document \
                     with POST /v1/i9s/{id}/receipt-update."
                )));
            }
            errors.extend(exemption(
                current.attestation,
                current.document.as_deref(),
                current.i9_expiration,
            ));
        }
    }
    errors.extend(
        alternative_procedure_error(conn, id, r.alternative_procedure, r.signed.signed_on).await?,
    );
    // An EAD that E-Verify's Status Change Report named as revoked on this
    // I-9 is never the document that reverifies it (docs/everify.md, "The
    // Status Change Report (2025)").
    if super::status_change_report::is_revoked(conn, id, &r.document.number).await? {
        errors.push(FieldError::new(
            "documentNumber",
            "revoked",
            "This document was revoked (E-Verify's Status Change Report names it): the \
             employee presents another List A or List C document.",
        ));
    }
    if !errors.is_empty() {
        return Err(WriteError::Invalid(errors));
    }
    // A receipt at reverification is valid 90 days from the date the
    // employment authorization expires (I-9 Central, "Receipts"), however
    // early or late it is recorded; meanwhile no document expiry is known,
    // and the I-9's deadline is the receipt's (docs/reverification.md,
    // "Receipts"). `exemption` refused an I-9 with no expiry above.
    // The real document replacing a List B receipt proves identity only:
    // the I-9's reverification date stays as it was. A List A or C
    // document sets it by the one rule of Section 2 (`i9::follow_up_expiry`):
    // never for a citizen, a permanent resident (but a temporary I-551) or
    // a document never reverified.
    let d = &r.document;
    let (i9_expiration, receipt_due_date) = if d.receipt {
        let expired = current.i9_expiration.unwrap_or(r.signed.signed_on);
        (None, Some(receipt_due(expired)))
    } else if d.list == DocumentList::B {
        (current.i9_expiration, None)
    } else {
        let follows =
            super::i9::follow_up_expiry(current.attestation, None, &d.title, d.expiration);
        (follows, None)
    };
    let entry = insert(
        conn,
        actor,
        id,
        kind,
        &Row {
            rehire_date: None,
            new_name: &r.new_name,
            document: Some(d),
            receipt_due_date,
            signed: &r.signed,
            additional_information: r.additional_information.as_deref(),
            alternative_procedure: r.alternative_procedure,
            previous_period: None,
            period: None,
            i9_expiration,
        },
    )
    .await?;
    sqlx::query!(
        "UPDATE i9s SET i9_expiration = $2, receipt_due_date = $3, updated_at = now() WHERE id = $1",
        id,
        i9_expiration,
        receipt_due_date,
    )
    .execute(&mut *conn)
    .await?;
    // A reverification answers the Status Change Report's request, if one
    // is open (docs/everify.md): the request is cleared by this entry.
    if kind == Kind::Reverification {
        super::status_change_report::clear(conn, id, entry).await?;
    }
    Ok(())
}

/// The I-9 a rehire is recorded on: the employee's latest.
struct Latest {
    id: i64,
    status: I9Status,
    employment_period_id: Option<i64>,
    executed: Option<NaiveDate>,
    i9_expiration: Option<NaiveDate>,
    receipt_due_date: Option<NaiveDate>,
}

/// Record the re-hire of `employee` on `rehire_date` (the start of its
/// latest period of employment, `period`, just begun) as Supplement B of its latest I-9 instead of a new
/// I-9: the I-9 then covers `period` (its `employment_period_id`), the one
/// it covered before kept in the entry. Named under `field` (the request's
/// choice), a 422 when the law requires a new I-9: no Completed or Approved
/// I-9; more than three years since its execution (Section 2's date,
/// [`rehire_window_ends`]); a work authorization (or a receipt) that has
/// expired by the rehire, which needs a document the re-hire does not
/// carry. Returns the I-9's id.
pub async fn rehire(
    conn: &mut PgConnection,
    actor: &Actor,
    employee: i64,
    signed_on: NaiveDate,
    field: &str,
) -> Result<i64, WriteError> {
    let new = sqlx::query!(
        "SELECT id, start_date FROM employment_periods WHERE employee_id = $1 ORDER BY id DESC LIMIT 1",
        employee,
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some((period, Some(rehire_date))) = new.map(|p| (p.id, p.start_date)) else {
        return Err(WriteError::invalid(
            "startDate",
            "required",
            "A re-hire needs the new startDate.",
        ));
    };
    let signed = &signer(conn, actor, signed_on).await?;
    let latest = sqlx::query_as!(
        Latest,
        r#"SELECT id, status AS "status: I9Status", employment_period_id,
                  COALESCE(signed_date_employer, (date_completed AT TIME ZONE 'UTC')::DATE) AS executed,
                  i9_expiration, receipt_due_date
           FROM i9s WHERE employee_id = $1 ORDER BY id DESC LIMIT 1 FOR UPDATE"#,
        employee,
    )
    .fetch_optional(&mut *conn)
    .await?;
    let refused = |code: &'static str, message: String| {
        Err(WriteError::Invalid(vec![FieldError::new(
            field, code, message,
        )]))
    };
    let Some(latest) = latest.filter(|l| RECORDED_ON.contains(&l.status)) else {
        return refused(
            "no_completed_i9",
            "The employee's latest I-9 is not Completed or Approved: a rehire needs a new I-9 (leave out rehireI9).".into(),
        );
    };
    let id = latest.id;
    match latest.executed.map(rehire_window_ends) {
        Some(end) if rehire_date <= end => {}
        _ => {
            return refused(
                "new_i9_required",
                format!(
                    "The rehire is more than three years after I-9 {id} was completed \
                     ({}): a new I-9 is required (leave out rehireI9).",
                    latest
                        .executed
                        .map_or_else(|| "no date".into(), |d| d.to_string())
                ),
            )
        }
    }
    if let Some(expired) = [latest.i9_expiration, latest.receipt_due_date]
        .into_iter()
        .flatten()
        .filter(|d| *d < rehire_date)
        .min()
    {
        return refused(
            "reverification_required",
            format!(
                "The work authorization on I-9 {id} expired on {expired}: a rehire on it must \
                 also reverify (a List A or List C document), which a rehire does not carry. \
                 Re-hire with a new I-9 instead: leave out rehireI9 (a new I-9 is the default)."
            ),
        );
    }
    let new_name = name_change(conn, id).await?;
    insert(
        conn,
        actor,
        id,
        Kind::Rehire,
        &Row {
            rehire_date: Some(rehire_date),
            new_name: &new_name,
            document: None,
            receipt_due_date: None,
            signed,
            additional_information: None,
            alternative_procedure: false,
            previous_period: latest.employment_period_id,
            period: Some(period),
            i9_expiration: latest.i9_expiration,
        },
    )
    .await?;
    sqlx::query!(
        "UPDATE i9s SET employment_period_id = $2, updated_at = now() WHERE id = $1",
        id,
        period,
    )
    .execute(&mut *conn)
    .await?;
    Ok(id)
}

/// The parts of the employee's name (as the re-hire just wrote it) that
/// differ from the name I-9 `id` knows (Section 1's, as changed by its
/// latest Supplement B entries): Supplement B's "New Name (if applicable)"
/// of a rehire (docs/reverification.md, "Rehire"). A part the employee
/// record no longer has (no middle name) is not recorded as a change.
async fn name_change(conn: &mut PgConnection, id: i64) -> Result<NewName, sqlx::Error> {
    let names = sqlx::query!(
        r#"SELECT e.last_name AS "employee_last!", e.first_name AS "employee_first!",
                  upper(left(NULLIF(btrim(e.middle_name), ''), 1)) AS employee_initial,
                  COALESCE((SELECT s.new_last_name FROM i9_supplement_b s
                            WHERE s.i9_id = i.id AND s.new_last_name IS NOT NULL
                            ORDER BY s.id DESC LIMIT 1), i.last_name) AS "i9_last!",
                  COALESCE((SELECT s.new_first_name FROM i9_supplement_b s
                            WHERE s.i9_id = i.id AND s.new_first_name IS NOT NULL
                            ORDER BY s.id DESC LIMIT 1), i.first_name) AS "i9_first!",
                  COALESCE((SELECT s.new_middle_initial FROM i9_supplement_b s
                            WHERE s.i9_id = i.id AND s.new_middle_initial IS NOT NULL
                            ORDER BY s.id DESC LIMIT 1), i.middle_initial) AS i9_initial
           FROM i9s i JOIN employees e ON e.id = i.employee_id WHERE i.id = $1"#,
        id,
    )
    .fetch_one(&mut *conn)
    .await?;
    let changed =
        |now: Option<String>, known: Option<String>| now.filter(|n| Some(n) != known.as_ref());
    Ok(NewName {
        last_name: changed(Some(names.employee_last), Some(names.i9_last)),
        first_name: changed(Some(names.employee_first), Some(names.i9_first)),
        middle_initial: changed(names.employee_initial, names.i9_initial),
    })
}

/// The signature of a Supplement B entry that a request records without a
/// typed one (a rehire): the authenticated caller signs, under the user's
/// name, or the API client's id for a client acting without a user
/// (docs/reverification.md, "Rehire").
async fn signer(
    conn: &mut PgConnection,
    actor: &Actor,
    signed_on: NaiveDate,
) -> Result<Signed, WriteError> {
    let name = sqlx::query_scalar!(
        r#"SELECT COALESCE((SELECT first_name || ' ' || last_name FROM users WHERE id = $1),
                           (SELECT client_id FROM oauth_clients WHERE id = $2),
                           'system') AS "name!""#,
        actor.user_id,
        actor.client_id,
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(Signed {
        employer_signature: name.clone(),
        employer_name: name,
        signed_on,
    })
}

/// One row of `i9_supplement_b`.
struct Row<'a> {
    rehire_date: Option<NaiveDate>,
    new_name: &'a NewName,
    document: Option<&'a Presented>,
    receipt_due_date: Option<NaiveDate>,
    signed: &'a Signed,
    additional_information: Option<&'a str>,
    alternative_procedure: bool,
    previous_period: Option<i64>,
    period: Option<i64>,
    i9_expiration: Option<NaiveDate>,
}

/// Insert the entry and its audit entry (the names of the fields recorded);
/// returns the entry's id.
async fn insert(
    conn: &mut PgConnection,
    actor: &Actor,
    id: i64,
    kind: Kind,
    r: &Row<'_>,
) -> Result<i64, WriteError> {
    let d = r.document;
    let entry = sqlx::query_scalar!(
        "INSERT INTO i9_supplement_b (i9_id, kind, rehire_date, new_last_name, new_first_name,
                new_middle_initial, document_list, document_title, document_issuer, document_number,
                document_expiration, receipt, receipt_due_date, employer_name, employer_signature,
                signed_on, additional_information, alternative_procedure,
                previous_employment_period_id, employment_period_id, i9_expiration,
                recorded_by_user_id, recorded_by_client_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
                 $19, $20, $21, $22, $23)
         RETURNING id",
        id,
        kind.as_str(),
        r.rehire_date,
        r.new_name.last_name.as_deref(),
        r.new_name.first_name.as_deref(),
        r.new_name.middle_initial.as_deref(),
        d.map(|d| d.list.as_str()),
        d.map(|d| d.title.as_str()),
        d.and_then(|d| d.issuer.as_deref()),
        d.map(|d| d.number.as_str()),
        d.and_then(|d| d.expiration),
        d.is_some_and(|d| d.receipt),
        r.receipt_due_date,
        &r.signed.employer_name,
        &r.signed.employer_signature,
        r.signed.signed_on,
        r.additional_information,
        r.alternative_procedure,
        r.previous_period,
        r.period,
        r.i9_expiration,
        actor.user_id,
        actor.client_id,
    )
    .fetch_one(&mut *conn)
    .await?;
    let mut fields = vec!["employerName", "employerSignature"];
    if r.rehire_date.is_some() {
        fields.push("rehireDate");
    }
    let name = r.new_name;
    for (given, field) in [
        (name.last_name.is_some(), "newLastName"),
        (name.first_name.is_some(), "newFirstName"),
        (name.middle_initial.is_some(), "newMiddleInitial"),
    ] {
        if given {
            fields.push(field);
        }
    }
    if let Some(d) = d {
        fields.extend(["documentTitle", "documentNumber"]);
        if d.issuer.is_some() {
            fields.push("documentIssuer");
        }
        if d.expiration.is_some() {
            fields.push("documentExpiration");
        }
        if d.receipt {
            fields.push("documentReceipt");
        }
    }
    if r.additional_information.is_some() {
        fields.push("additionalInformation");
    }
    if r.alternative_procedure {
        fields.push("alternativeProcedure");
    }
    audit::record(
        &mut *conn,
        actor,
        Entry::new(kind.action(), "i9", id).detail(json!({ "fields": fields })),
    )
    .await?;
    Ok(entry)
}

/// One Supplement B entry as read back.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub id: i64,
    pub kind: String,
    pub rehire_date: Option<NaiveDate>,
    pub new_last_name: Option<String>,
    pub new_first_name: Option<String>,
    pub new_middle_initial: Option<String>,
    pub document_list: Option<String>,
    pub document_title: Option<String>,
    pub document_issuer: Option<String>,
    pub document_number: Option<String>,
    pub document_expiration: Option<NaiveDate>,
    pub receipt: bool,
    pub receipt_due_date: Option<NaiveDate>,
    pub employer_name: String,
    pub employer_signature: String,
    pub signed_on: NaiveDate,
    pub additional_information: Option<String>,
    pub alternative_procedure: bool,
    pub previous_employment_period_id: Option<i64>,
    pub employment_period_id: Option<i64>,
    pub i9_expiration: Option<NaiveDate>,
    pub recorded_by_user_id: Option<i64>,
    pub recorded_by_client_id: Option<i64>,
    pub recorded_at: chrono::DateTime<chrono::Utc>,
}

/// The Supplement B entries of I-9 `id`, oldest first.
pub async fn of_i9(conn: &mut PgConnection, id: i64) -> Result<Vec<Recorded>, sqlx::Error> {
    sqlx::query_as!(
        Recorded,
        "SELECT id, kind, rehire_date, new_last_name, new_first_name, new_middle_initial,
                document_list, document_title, document_issuer, document_number, document_expiration,
                receipt, receipt_due_date, employer_name, employer_signature, signed_on,
                additional_information, alternative_procedure, previous_employment_period_id,
                employment_period_id, i9_expiration, recorded_by_user_id, recorded_by_client_id,
                recorded_at
         FROM i9_supplement_b WHERE i9_id = $1 ORDER BY id",
        id,
    )
    .fetch_all(conn)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn a_receipt_is_due_ninety_days_on_across_the_year_end() {
        assert_eq!(receipt_due(date(2026, 12, 15)), date(2027, 3, 15));
        assert_eq!(receipt_due(date(2027, 12, 31)), date(2028, 3, 30));
        assert_eq!(receipt_due(date(2026, 1, 1)), date(2026, 4, 1));
    }

    #[test]
    fn the_rehire_window_is_three_years_from_execution() {
        assert_eq!(rehire_window_ends(date(2024, 2, 29)), date(2027, 2, 28));
        assert_eq!(rehire_window_ends(date(2023, 12, 31)), date(2026, 12, 31));
    }

    #[test]
    fn the_handbook_exemptions() {
        let soon = Some(date(2030, 1, 1));
        let code = |a, d: Option<&str>, e| exemption(a, d, e).map(|e| e.code);
        let alien = Some(Attestation::AlienAuthorizedToWork);
        assert_eq!(
            code(Some(Attestation::Citizen), Some("U.S. Passport"), soon),
            Some("citizen_not_reverified")
        );
        assert_eq!(
            code(Some(Attestation::NoncitizenNational), None, soon),
            Some("national_not_reverified")
        );
        assert_eq!(
            code(
                Some(Attestation::PermanentResident),
                Some("Permanent Resident Card (Form I-551)"),
                soon
            ),
            Some("permanent_resident_not_reverified")
        );
        // The temporary I-551 stamp is reverified when it expires.
        assert_eq!(
            code(
                Some(Attestation::PermanentResident),
                Some(TEMPORARY_I551),
                soon
            ),
            None
        );
        assert_eq!(
            code(None, Some("Permanent Resident Card (Form I-551)"), soon),
            Some("document_not_reverified")
        );
        assert_eq!(
            code(
                alien,
                Some("Employment Authorization Document (Form I-766)"),
                soon
            ),
            None
        );
        assert_eq!(
            code(
                alien,
                Some("Employment Authorization Document (Form I-766)"),
                None
            ),
            Some("nothing_expires")
        );
    }

    #[test]
    fn each_kind_has_its_action() {
        assert_eq!(
            [Kind::Reverification, Kind::Rehire, Kind::ReceiptUpdate].map(Kind::action),
            ["i9.reverify", "i9.rehire", "i9.receipt_update"]
        );
    }
}
