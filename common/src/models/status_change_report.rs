//! E-Verify's Status Change Report (docs/everify.md, "The Status Change
//! Report (2025)"): since 2025 an EAD that DHS revokes no longer shows as a
//! case alert; the employer pulls this report (a CSV download) and
//! reverifies each current employee it names whose EAD is still the one
//! revoked. [`import`] reads one file for one legal entity and, for each
//! row: finds the case by its number in that legal entity, its I-9 and
//! employee; reports a row it cannot apply (not found, not current, the
//! I-9's EAD is another document now) and does nothing for it; else opens
//! a reverification request on the I-9 (`i9_reverification_requests`), due
//! `EVERIFY_REVOCATION_DUE_BUSINESS_DAYS` business days after the import
//! day, emails the employer (`send_revocation_email`, one job per
//! notification address) and, for a partner's employee, records the event
//! `i9.document_due` (`dueKind` `revocation`). A row already applied (legal
//! entity, case number, revoked document number) does nothing again.
//!
//! The columns are matched by header through [`COLUMNS`], ignoring case,
//! spaces and punctuation: no real report's header row was found
//! (docs/everify.md, open question 1), so the aliases are guesses, and a
//! header the table does not know refuses the file, naming it. The file is
//! never stored or logged; the answer names rows by number and outcome,
//! never by a value.
//!
//! `i9-admin everify import-status-change-report` and `POST
//! /v1/eins/{id}/everify/status-change-reports` both call [`import`].

use chrono::NaiveDate;
use serde::Serialize;
use serde_json::json;
use sqlx::PgConnection;
use utoipa::ToSchema;

use super::{
    audit::{self, Actor, Entry},
    FieldError, WriteError,
};
use crate::{
    domain::{
        calendar::Calendar,
        remote_examination::{legal_entity_allows_alternative_procedure, Enrollment, Refusal},
        DueKind,
    },
    events::document_due,
    jobs::Job,
    outbox,
};

/// The largest file read (the API's body limit for the route too).
pub const MAX_BYTES: usize = 5 * 1024 * 1024;

/// The EAD's title as Section 2 and Supplement B record it.
const EAD: &str = "Employment Authorization Document (Form I-766)";

/// What a column of the report is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// E-Verify's case number (required).
    CaseNumber,
    /// The number of the revoked EAD (required: the comparison E-Verify
    /// asks for rests on it).
    RevokedDocumentNumber,
    /// The day DHS revoked the EAD (optional).
    RevocationDate,
    /// A column the report has that the import does not read (names,
    /// A-Number, dates of the case): known, so not refused, and never read.
    Ignored,
}

/// The columns known, each with its header as the program is reported to
/// write it first and the other spellings accepted. Compared by
/// [`header_key`] (letters and digits only, in lower case): "Case Number",
/// "CASE_NUMBER" and "case-number" are one header.
pub const COLUMNS: &[(Column, &[&str])] = &[
    (
        Column::CaseNumber,
        &[
            "Case Number",
            "Case Verification Number",
            "E-Verify Case Number",
            "Case No",
            "Case #",
            "Case ID",
        ],
    ),
    (
        Column::RevokedDocumentNumber,
        &[
            "Revoked Document Number",
            "Document Number",
            "Revoked EAD Number",
            "EAD Number",
            "EAD Card Number",
            "Card Number",
            "Revoked Card Number",
            "Document #",
        ],
    ),
    (
        Column::RevocationDate,
        &[
            "Revocation Date",
            "Date Revoked",
            "EAD Revocation Date",
            "Date of Revocation",
            "Revoked Date",
            "Revoked On",
        ],
    ),
    (
        Column::Ignored,
        &[
            "A-Number",
            "Alien Number",
            "Alien Registration Number",
            "USCIS Number",
            "A-Number/USCIS Number",
            "Last Name",
            "First Name",
            "Middle Initial",
            "Middle Name",
            "Employee Name",
            "Employee Last Name",
            "Employee First Name",
            "Name",
            "Hire Date",
            "Date of Hire",
            "Case Creation Date",
            "Case Created Date",
            "Date Case Created",
            "Case Status",
            "Case Result",
            "Case Closure Date",
            "Document Type",
            "Document Expiration Date",
            "Expiration Date",
            "Company ID",
            "Company Name",
            "Employer Name",
            "Client Company ID",
            "Client Company Name",
            "Site",
            "Hiring Site",
            "Status Change",
            "Status Change Date",
            "Employee ID",
        ],
    ),
];

/// A header as compared: its letters and digits, in lower case.
pub fn header_key(header: &str) -> String {
    header
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The column a header stands for, if the table knows it.
pub fn column_of(header: &str) -> Option<Column> {
    let key = header_key(header);
    COLUMNS
        .iter()
        .find(|(_, aliases)| aliases.iter().any(|a| header_key(a) == key))
        .map(|(c, _)| *c)
}

/// A document or case number as compared and stored: letters and digits,
/// in upper case (`SRC-123 456` and `src123456` are one number).
pub fn number_key(number: &str) -> String {
    number
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// One row of the report, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportRow {
    /// The line of the file it starts on, the header's being 1 (blank
    /// lines counted, as a spreadsheet shows them).
    pub row: u64,
    pub case_number: String,
    /// [`number_key`] of the revoked document's number.
    pub revoked_document_number: String,
    pub revoked_on: Option<NaiveDate>,
}

/// A header shown back in a refusal: as written, unless it holds digits
/// (a file without a header row would put a person's number there).
fn shown(header: &str) -> String {
    if header.chars().any(|c| c.is_ascii_digit()) {
        "(a header with digits, not shown)".to_owned()
    } else {
        format!("{:?}", header.trim())
    }
}

fn expected() -> String {
    COLUMNS
        .iter()
        .filter(|(c, _)| *c != Column::Ignored)
        .map(|(_, aliases)| format!("{:?}", aliases[0]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A date of the report: `YYYY-MM-DD` or `MM/DD/YYYY` (one-digit month and
/// day allowed).
fn parse_date(text: &str) -> Option<NaiveDate> {
    let t = text.trim();
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .or_else(|_| NaiveDate::parse_from_str(t, "%m/%d/%Y"))
        .ok()
}

/// The line numbers of a file, counted forward: a line break is `\r\n`,
/// `\r` or `\n`, as the CSV reader takes them.
struct Lines<'a> {
    bytes: &'a [u8],
    /// The offset counted up to, and the line it is on (the first is 1).
    at: usize,
    line: u64,
}

impl<'a> Lines<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            at: 0,
            line: 1,
        }
    }

    /// The line of the first byte at or after `offset` that is not a line
    /// break: where a record read from `offset` starts (the CSV reader
    /// skips blank lines before a record, and gives as its position the
    /// end of the record before, so the blank lines are counted here).
    fn of_record_at(&mut self, offset: u64) -> u64 {
        let mut start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        while start < self.bytes.len() && matches!(self.bytes[start], b'\r' | b'\n') {
            start += 1;
        }
        while self.at < start {
            let i = self.at;
            match self.bytes[i] {
                b'\r' => self.line += 1,
                b'\n' if i == 0 || self.bytes[i - 1] != b'\r' => self.line += 1,
                _ => {}
            }
            self.at += 1;
        }
        self.line
    }
}

/// Read the report: its header row by [`COLUMNS`], then each row, on
/// `today` (a revocation date after it is refused: the report lists
/// revocations that happened). `Err` names every problem (field `file` for
/// the file as a whole and its headers, `row N` for a row's value, N the
/// line of the file the row starts on), never a value of a row.
pub fn parse(bytes: &[u8], today: NaiveDate) -> Result<Vec<ReportRow>, Vec<FieldError>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if std::str::from_utf8(bytes).is_err() {
        return Err(vec![FieldError::new(
            "file",
            "not_utf8",
            "The file is not UTF-8 text: send the report as E-Verify's CSV download.",
        )]);
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(vec![FieldError::new(
            "file",
            "empty",
            "The file is empty: send the report as E-Verify's CSV download, its header row \
             first.",
        )]);
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(bytes);
    let headers = match reader.headers() {
        Ok(h) => h.clone(),
        Err(_) => {
            return Err(vec![FieldError::new(
                "file",
                "not_csv",
                "The file is not CSV: send the report as E-Verify's CSV download.",
            )])
        }
    };
    let mut at = [None::<usize>; 3];
    let mut unknown = Vec::new();
    let mut twice = Vec::new();
    for (i, h) in headers.iter().enumerate() {
        if h.trim().is_empty() {
            // A trailing separator: an empty column, read as nothing.
            continue;
        }
        let slot = match column_of(h) {
            None => {
                unknown.push(shown(h));
                continue;
            }
            Some(Column::Ignored) => continue,
            Some(Column::CaseNumber) => 0,
            Some(Column::RevokedDocumentNumber) => 1,
            Some(Column::RevocationDate) => 2,
        };
        if at[slot].replace(i).is_some() {
            twice.push(shown(h));
        }
    }
    let found = headers
        .iter()
        .filter(|h| !h.trim().is_empty())
        .map(shown)
        .collect::<Vec<_>>()
        .join(", ");
    let mut errors = Vec::new();
    if !unknown.is_empty() {
        errors.push(FieldError::new(
            "file",
            "unknown_header",
            format!(
                "Headers not known: {}. Headers found: {found}. Expected: {} (the revocation \
                 date optional), and the report's other columns (names, A-Number, case dates), \
                 which are not read (docs/everify.md, \"The Status Change Report (2025)\").",
                unknown.join(", "),
                expected()
            ),
        ));
    }
    for (slot, name) in [(0, "case number"), (1, "revoked document number")] {
        if at[slot].is_none() {
            errors.push(FieldError::new(
                "file",
                "missing_header",
                format!(
                    "No {name} column. Headers found: {found}. Expected: {}.",
                    expected()
                ),
            ));
        }
    }
    if !twice.is_empty() {
        errors.push(FieldError::new(
            "file",
            "repeated_header",
            format!(
                "Two columns stand for the same value: {}. Headers found: {found}.",
                twice.join(", ")
            ),
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let (Some(case_at), Some(doc_at)) = (at[0], at[1]) else {
        return Err(errors);
    };
    let mut rows = Vec::new();
    let mut lines = Lines::new(bytes);
    // The row a record without a position would be given: the line after
    // the last one numbered.
    let mut last = 1;
    for record in reader.records() {
        let position = match &record {
            Ok(r) => r.position(),
            Err(e) => e.position(),
        };
        let row = position.map_or(last + 1, |p| lines.of_record_at(p.byte()));
        last = row;
        let field = format!("row {row}");
        let record = match record {
            Ok(r) => r,
            Err(_) => {
                errors.push(FieldError::new(field, "not_csv", "This row is not CSV."));
                continue;
            }
        };
        if record.iter().all(|v| v.trim().is_empty()) {
            continue;
        }
        let case_number = record.get(case_at).unwrap_or("").trim();
        let document = number_key(record.get(doc_at).unwrap_or(""));
        let mut ok = true;
        if case_number.is_empty() || case_number.chars().count() > 40 {
            errors.push(FieldError::new(
                field.clone(),
                "case_number",
                "The case number is missing or longer than 40 characters.",
            ));
            ok = false;
        }
        if document.is_empty() || document.len() > 60 {
            errors.push(FieldError::new(
                field.clone(),
                "revoked_document_number",
                "The revoked document number is missing or longer than 60 letters and digits.",
            ));
            ok = false;
        }
        let revoked_on = match at[2].and_then(|i| record.get(i)).map(str::trim) {
            None | Some("") => None,
            Some(text) => match parse_date(text) {
                Some(d) if d > today => {
                    errors.push(FieldError::new(
                        field.clone(),
                        "revocation_date",
                        format!(
                            "The revocation date is after today ({today}): the report lists \
                             revocations that happened."
                        ),
                    ));
                    ok = false;
                    None
                }
                Some(d) => Some(d),
                None => {
                    errors.push(FieldError::new(
                        field.clone(),
                        "revocation_date",
                        "The revocation date is not a date (YYYY-MM-DD or MM/DD/YYYY).",
                    ));
                    ok = false;
                    None
                }
            },
        };
        if ok {
            rows.push(ReportRow {
                row,
                case_number: case_number.to_owned(),
                revoked_document_number: document,
                revoked_on,
            });
        }
    }
    if errors.is_empty() && rows.is_empty() {
        errors.push(FieldError::new(
            "file",
            "no_rows",
            "The file has a header row and no rows: nothing to import (a report without \
             revocations need not be imported).",
        ));
    }
    if errors.is_empty() {
        Ok(rows)
    } else {
        Err(errors)
    }
}

/// What became of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A reverification request was opened on the I-9; the employer (and a
    /// partner) notified.
    Applied,
    /// The same row (legal entity, case number, revoked document number)
    /// was applied by an earlier import: nothing done again.
    AlreadyApplied,
    /// The employee is no longer employed, or the case's I-9 is parked,
    /// purged, or no longer the employee's latest: nothing done.
    NotCurrent,
    /// The I-9's EAD (the latest Supplement B document, else Section 2's
    /// I-766) is not the revoked document: nothing done.
    DocumentMismatch,
    /// No case of that number in this legal entity: nothing done.
    NotFound,
}

impl Outcome {
    fn reason(self) -> &'static str {
        match self {
            Self::Applied => "Reverification requested on the case's I-9; the employer notified.",
            Self::AlreadyApplied => "Applied by an earlier import: nothing done again.",
            Self::NotCurrent => {
                "The employee is no longer employed, or the case's I-9 is parked, purged or \
                 replaced by a later I-9: nothing done."
            }
            Self::DocumentMismatch => {
                "The I-9's EAD is not the revoked document (another document was presented \
                 since, or none was an EAD): nothing done."
            }
            Self::NotFound => "No E-Verify case of this number in this legal entity: nothing done.",
        }
    }
}

/// One row's outcome: its number in the file, never its values.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RowOutcome {
    /// The line of the file the row starts on, the header's being 1 (blank
    /// lines counted, as a spreadsheet shows them).
    pub row: u64,
    pub outcome: Outcome,
    pub reason: String,
}

/// What an import did: the answer of the API and of `i9-admin`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Imported {
    /// The import's record.
    pub import_id: i64,
    pub legal_entity_id: i64,
    /// The import day: reverification is due a number of business days after it.
    pub imported_on: NaiveDate,
    /// The day each request opened by this import is due.
    pub due_date: NaiveDate,
    /// The rows read (blank rows aside).
    pub rows: usize,
    pub applied: usize,
    pub already_applied: usize,
    pub not_current: usize,
    pub document_mismatch: usize,
    pub not_found: usize,
    /// Email jobs queued (one per applied row and notification address).
    pub emails: usize,
    /// Partner events recorded (one per applied row of a partner's employee).
    pub events: usize,
    /// Each row's outcome, in the file's order.
    pub results: Vec<RowOutcome>,
}

/// The case a row names, its I-9 as it stands now.
struct Found {
    case_number: String,
    i9_id: i64,
    current: bool,
    /// The I-9's EAD number: the latest Supplement B document when it is an
    /// EAD ('' when it is another document), else Section 2's I-766.
    ead_number: Option<String>,
}

/// Why a legal entity cannot import a report, in this feature's words.
fn not_enrolled(refusal: &Refusal) -> String {
    const RULE: &str = "A Status Change Report lists E-Verify cases of an employer enrolled in \
                        E-Verify in good standing (its legal entity's everifyId, everifyStatus \
                        Active), as the cases are opened; nothing was imported.";
    match refusal {
        Refusal::NoLegalEntity => format!("No legal entity. {RULE}"),
        Refusal::Inactive { entity } => format!("The legal entity {entity:?} is inactive. {RULE}"),
        Refusal::NotEnrolled { entity } => format!(
            "The legal entity {entity:?} is not enrolled in E-Verify (it has no everifyId). {RULE}"
        ),
        Refusal::NotYetEnrolled { entity, effective } => format!(
            "The E-Verify enrollment of the legal entity {entity:?} takes effect on {effective}. \
             {RULE}"
        ),
        Refusal::NotInGoodStanding { entity, status } => format!(
            "The legal entity {entity:?} is not enrolled in E-Verify in good standing: its \
             everifyStatus is {status:?}, not \"Active\". {RULE}"
        ),
    }
}

/// Import the Status Change Report `bytes` for legal entity `legal_entity`
/// on `today`, in the caller's transaction (one transaction: a refused file
/// writes nothing). 404 when the legal entity does not exist; 409 when it is
/// not enrolled in E-Verify in good standing; 422 naming every problem of
/// the file (empty, no rows, its headers, a row's value).
pub async fn import(
    conn: &mut PgConnection,
    actor: &Actor,
    legal_entity: i64,
    bytes: &[u8],
    today: NaiveDate,
    due_business_days: u32,
    public_base_url: &str,
) -> Result<Imported, WriteError> {
    let (entity_name, everify_id, everify_effective_date, everify_status, active) =
        sqlx::query_as::<_, (String, Option<String>, Option<NaiveDate>, String, bool)>(
            "SELECT entity_name, everify_id, everify_effective_date, everify_status, active
             FROM legal_entities WHERE id = $1",
        )
        .bind(legal_entity)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(WriteError::NotFound)?;
    let enrollment = Enrollment {
        entity_name,
        everify_id,
        everify_effective_date,
        everify_status,
        active,
    };
    if bytes.len() > MAX_BYTES {
        return Err(WriteError::invalid(
            "file",
            "too_large",
            format!("The file is larger than {} MB.", MAX_BYTES / 1024 / 1024),
        ));
    }
    // Only an employer enrolled in E-Verify has cases, and a report: the
    // rule that opens a case (docs/everify.md, "The Status Change Report
    // (2025)"). A 409, as every refusal for the state of the resource.
    if let Err(refusal) = legal_entity_allows_alternative_procedure(Some(&enrollment), today) {
        return Err(WriteError::Conflict(not_enrolled(&refusal)));
    }
    let rows = parse(bytes, today).map_err(WriteError::Invalid)?;
    let due = Calendar::load(&mut *conn, today)
        .await?
        .business_days_after(today, due_business_days);
    let import_id = sqlx::query_scalar!(
        "INSERT INTO everify_status_change_imports (legal_entity_id, imported_on,
                imported_by_user_id, imported_by_client_id, rows_total, applied, already_applied,
                not_current, document_mismatch, not_found)
         VALUES ($1, $2, $3, $4, 0, 0, 0, 0, 0, 0) RETURNING id",
        legal_entity,
        today,
        actor.user_id,
        actor.client_id,
    )
    .fetch_one(&mut *conn)
    .await?;
    let mut done = Imported {
        import_id,
        legal_entity_id: legal_entity,
        imported_on: today,
        due_date: due,
        rows: rows.len(),
        applied: 0,
        already_applied: 0,
        not_current: 0,
        document_mismatch: 0,
        not_found: 0,
        emails: 0,
        events: 0,
        results: Vec::with_capacity(rows.len()),
    };
    for row in &rows {
        let outcome = apply(
            conn,
            legal_entity,
            import_id,
            row,
            today,
            due,
            public_base_url,
            &mut done,
        )
        .await?;
        *match outcome {
            Outcome::Applied => &mut done.applied,
            Outcome::AlreadyApplied => &mut done.already_applied,
            Outcome::NotCurrent => &mut done.not_current,
            Outcome::DocumentMismatch => &mut done.document_mismatch,
            Outcome::NotFound => &mut done.not_found,
        } += 1;
        done.results.push(RowOutcome {
            row: row.row,
            outcome,
            reason: outcome.reason().to_owned(),
        });
    }
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    sqlx::query!(
        "UPDATE everify_status_change_imports SET rows_total = $2, applied = $3,
                already_applied = $4, not_current = $5, document_mismatch = $6, not_found = $7
         WHERE id = $1",
        import_id,
        count(done.rows),
        count(done.applied),
        count(done.already_applied),
        count(done.not_current),
        count(done.document_mismatch),
        count(done.not_found),
    )
    .execute(&mut *conn)
    .await?;
    audit::record(
        &mut *conn,
        actor,
        Entry::new(
            "everify.status_change_report_imported",
            "legal_entity",
            legal_entity,
        )
        .detail(json!({
            "importId": import_id,
            "rows": done.rows,
            "applied": done.applied,
            "alreadyApplied": done.already_applied,
            "notCurrent": done.not_current,
            "documentMismatch": done.document_mismatch,
            "notFound": done.not_found,
        })),
    )
    .await?;
    Ok(done)
}

/// One row: its outcome, and when applied its request, emails and event.
#[allow(clippy::too_many_arguments)]
async fn apply(
    conn: &mut PgConnection,
    legal_entity: i64,
    import_id: i64,
    row: &ReportRow,
    today: NaiveDate,
    due: NaiveDate,
    public_base_url: &str,
    done: &mut Imported,
) -> Result<Outcome, sqlx::Error> {
    // The latest case of that number in the legal entity, its I-9 locked
    // (Supplement B waits for this import's commit, and the reverse).
    let found = sqlx::query_as!(
        Found,
        r#"SELECT c.case_number AS "case_number!", i.id AS i9_id,
                  (i.purged_at IS NULL
                   AND i9_awaits_follow_up(i.status, i.employee_id, $3)
                   AND i.id = (SELECT max(l.id) FROM i9s l WHERE l.employee_id = i.employee_id))
                      AS "current!",
                  COALESCE(
                      (SELECT CASE WHEN s.document_title = $4 THEN s.document_number ELSE '' END
                       FROM i9_supplement_b s
                       WHERE s.i9_id = i.id AND s.document_title IS NOT NULL
                         AND s.document_list <> 'B'
                       ORDER BY s.id DESC LIMIT 1),
                      CASE WHEN i.list_a1_doc_title = $4 THEN i.list_a1_doc_number
                           WHEN i.list_a2_doc_title = $4 THEN i.list_a2_doc_number
                           WHEN i.list_a3_doc_title = $4 THEN i.list_a3_doc_number END)
                      AS ead_number
           FROM everify_cases c JOIN i9s i ON i.id = c.i9_id
           WHERE c.legal_entity_id = $1 AND upper(c.case_number) = upper($2)
           ORDER BY c.id DESC LIMIT 1
           FOR UPDATE OF i"#,
        legal_entity,
        row.case_number,
        today,
        EAD,
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(found) = found else {
        return Ok(Outcome::NotFound);
    };
    let already = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM i9_reverification_requests
                          WHERE legal_entity_id = $1 AND case_number = $2
                            AND revoked_document_number = $3) AS "already!""#,
        legal_entity,
        found.case_number,
        row.revoked_document_number,
    )
    .fetch_one(&mut *conn)
    .await?;
    if already {
        return Ok(Outcome::AlreadyApplied);
    }
    if !found.current {
        return Ok(Outcome::NotCurrent);
    }
    if found.ead_number.as_deref().map(number_key) != Some(row.revoked_document_number.clone()) {
        return Ok(Outcome::DocumentMismatch);
    }
    // Another import of the same row at once: the key lets one in.
    let Some(request_id) = sqlx::query_scalar!(
        "INSERT INTO i9_reverification_requests (i9_id, legal_entity_id, reason, revoked_on,
                requested_on, due_on, case_number, revoked_document_number, import_id)
         VALUES ($1, $2, 'ead_revoked', $3, $4, $5, $6, $7, $8)
         ON CONFLICT (legal_entity_id, case_number, revoked_document_number) DO NOTHING
         RETURNING id",
        found.i9_id,
        legal_entity,
        row.revoked_on,
        today,
        due,
        found.case_number,
        row.revoked_document_number,
        import_id,
    )
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(Outcome::AlreadyApplied);
    };
    // The employer's email, as a reminder's (docs/reminders.md): one per
    // notification address set.
    let addresses = sqlx::query!(
        r#"SELECT NULLIF(btrim(e.notification_email1), '') IS NOT NULL AS "first!",
                  NULLIF(btrim(e.notification_email2), '') IS NOT NULL AS "second!"
         FROM i9s i JOIN employees e ON e.id = i.employee_id WHERE i.id = $1"#,
        found.i9_id,
    )
    .fetch_one(&mut *conn)
    .await?;
    for (recipient, set) in [(1u8, addresses.first), (2u8, addresses.second)] {
        if set {
            outbox::enqueue(
                conn,
                Job::SendRevocationEmail {
                    request_id,
                    recipient,
                },
            )
            .await?;
            done.emails += 1;
        }
    }
    if document_due::record(
        conn,
        found.i9_id,
        DueKind::Revocation,
        due,
        None,
        public_base_url,
    )
    .await?
    .is_some()
    {
        done.events += 1;
    }
    Ok(Outcome::Applied)
}

/// The open reverification request of an I-9 (the earliest due), as the
/// I-9's record shows it (`reverificationRequired`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReverificationRequired {
    /// `ead_revoked`: E-Verify's Status Change Report named the I-9's EAD as revoked.
    #[schema(example = "ead_revoked")]
    pub reason: String,
    /// The revocation date the report gave, if any.
    pub revoked_on: Option<NaiveDate>,
    /// The day the report was imported.
    pub requested_on: NaiveDate,
    /// The day reverification is due (`EVERIFY_REVOCATION_DUE_BUSINESS_DAYS` business days on).
    pub due_date: NaiveDate,
    /// The E-Verify case the report named.
    pub case_number: String,
}

/// The open request of I-9 `i9`, if any.
pub async fn open_request(
    conn: &mut PgConnection,
    i9: i64,
) -> Result<Option<ReverificationRequired>, sqlx::Error> {
    sqlx::query_as!(
        ReverificationRequired,
        "SELECT reason, revoked_on, requested_on, due_on AS due_date, case_number
         FROM i9_reverification_requests WHERE i9_id = $1 AND cleared_at IS NULL
         ORDER BY due_on, id LIMIT 1",
        i9,
    )
    .fetch_optional(conn)
    .await
}

/// Whether `number` is a document a Status Change Report named as revoked
/// on I-9 `i9` (open or cleared: a revoked EAD stays revoked). Supplement B
/// refuses it (`revoked`).
pub async fn is_revoked(
    conn: &mut PgConnection,
    i9: i64,
    number: &str,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM i9_reverification_requests
                          WHERE i9_id = $1 AND revoked_document_number = $2) AS "revoked!""#,
        i9,
        number_key(number),
    )
    .fetch_one(conn)
    .await
}

/// Clear the open requests of I-9 `i9`: the Supplement B entry `entry`
/// reverified it. Returns how many.
pub async fn clear(conn: &mut PgConnection, i9: i64, entry: i64) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query!(
        "UPDATE i9_reverification_requests SET cleared_at = now(), cleared_by_supplement_b_id = $2
         WHERE i9_id = $1 AND cleared_at IS NULL",
        i9,
        entry,
    )
    .execute(conn)
    .await?
    .rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 25).unwrap()
    }

    fn codes(r: Result<Vec<ReportRow>, Vec<FieldError>>) -> Vec<(String, &'static str)> {
        r.unwrap_err()
            .into_iter()
            .map(|e| (e.field, e.code))
            .collect()
    }

    #[test]
    fn headers_are_matched_ignoring_case_spaces_and_punctuation() {
        for h in [
            "Case Number",
            "CASE_NUMBER",
            "case-number",
            " Case #",
            "casenumber",
        ] {
            assert_eq!(column_of(h), Some(Column::CaseNumber), "{h}");
        }
        assert_eq!(
            column_of("REVOKED DOCUMENT NUMBER"),
            Some(Column::RevokedDocumentNumber)
        );
        assert_eq!(column_of("A-Number"), Some(Column::Ignored));
        assert_eq!(column_of("Favourite Colour"), None);
        // Every alias is one column's only.
        let mut keys: Vec<String> = COLUMNS
            .iter()
            .flat_map(|(_, a)| a.iter().map(|h| header_key(h)))
            .collect();
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n);
    }

    #[test]
    fn rows_are_read_with_their_numbers_and_values_normalized() {
        let file = "\u{feff}Case Number,Last Name,Revoked Document Number,Revocation Date,\n\
                    SIM000000000042,Doe,src-123 456,07/08/2025,\n\
                    ,,,,\n\
                    SIM000000000043,Roe,EAD9,2025-07-24,\n";
        let rows = parse(file.as_bytes(), today()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].row, 2);
        assert_eq!(rows[0].revoked_document_number, "SRC123456");
        assert_eq!(rows[0].revoked_on, NaiveDate::from_ymd_opt(2025, 7, 8));
        assert_eq!(rows[1].row, 4);
    }

    #[test]
    fn unknown_or_missing_headers_refuse_the_file_naming_them_and_no_value() {
        let e = parse(b"Case Number,Shoe Size,Document Number\nX1,9,Y\n", today()).unwrap_err();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].code, "unknown_header");
        assert!(e[0].message.contains("\"Shoe Size\""), "{}", e[0].message);
        assert!(e[0].message.contains("\"Case Number\""), "{}", e[0].message);
        assert!(
            e[0].message.contains(
                "Expected: \"Case Number\", \"Revoked Document Number\", \"Revocation Date\""
            ),
            "{}",
            e[0].message
        );
        assert_eq!(
            codes(parse(b"Last Name,A-Number\nDoe,A1\n", today())),
            [
                ("file".into(), "missing_header"),
                ("file".into(), "missing_header")
            ]
        );
        // A file without a header row: its values are not echoed.
        let e = parse(b"SIM000000000042,Q55555\n", today()).unwrap_err();
        assert!(e.iter().all(|e| !e.message.contains("55555")), "{e:?}");
        assert_eq!(
            codes(parse(
                b"Case Number,Document Number,Revocation Date\n,X,someday\n",
                today()
            )),
            [
                ("row 2".into(), "case_number"),
                ("row 2".into(), "revocation_date")
            ]
        );
    }

    #[test]
    fn rows_are_numbered_by_the_line_they_start_on() {
        let numbers = |file: &str| -> Vec<u64> {
            parse(file.as_bytes(), today())
                .unwrap()
                .iter()
                .map(|r| r.row)
                .collect()
        };
        // Two blank lines, then a row: line 4, as a spreadsheet shows it.
        for file in [
            "Case Number,Document Number\n\n\nC1,D1\nC2,D2\n",
            "Case Number,Document Number\r\n\r\n\r\nC1,D1\r\nC2,D2\r\n",
            "Case Number,Document Number\r\rC1,D1\r\rC2,D2",
        ] {
            let expected: &[u64] = if file.contains("\r\r") {
                &[3, 5]
            } else {
                &[4, 5]
            };
            assert_eq!(numbers(file), expected, "{file:?}");
        }
        // A quoted value over two lines: its row is the line it starts on,
        // and the next row's the line after the value's last.
        assert_eq!(
            numbers("Case Number,Document Number,Last Name\nC1,D1,\"two\nlines\"\n\nC2,D2,x\n"),
            [2, 5]
        );
        // Blank lines before the header count too.
        assert_eq!(numbers("\n\nCase Number,Document Number\nC1,D1\n"), [4]);
        // A bad row after two blank lines is named by its line.
        assert_eq!(
            codes(parse(b"Case Number,Document Number\n\n\n,D1\n", today())),
            [("row 4".into(), "case_number")]
        );
    }

    #[test]
    fn an_empty_file_or_one_without_rows_is_one_error() {
        for file in ["", "\u{feff}", " \r\n\n"] {
            assert_eq!(
                codes(parse(file.as_bytes(), today())),
                [("file".into(), "empty")],
                "{file:?}"
            );
        }
        for file in [
            "Case Number,Document Number",
            "Case Number,Document Number\n\n\n",
            "Case Number,Document Number\n,,\n",
        ] {
            assert_eq!(
                codes(parse(file.as_bytes(), today())),
                [("file".into(), "no_rows")],
                "{file:?}"
            );
        }
    }

    #[test]
    fn a_revocation_date_after_today_is_refused() {
        let file =
            "Case Number,Document Number,Revocation Date\nC1,D1,2026-11-25\nC2,D2,11/26/2026\n";
        let e = parse(file.as_bytes(), today()).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(
            (e[0].field.as_str(), e[0].code),
            ("row 3", "revocation_date")
        );
        assert!(e[0].message.contains("after today"), "{}", e[0].message);
    }
}
