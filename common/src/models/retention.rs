//! Retention and purge of I-9s (docs/retention.md).
//!
//! The retention rule itself is written once, in SQL
//! (`i9_retention_date`, migration `20261124200601_retention.sql`), and
//! stored in `i9s.retention_date` by triggers in the transaction of every
//! write that changes what it depends on. This module holds the rest: which
//! I-9s are due ([`due`], the one eligibility query), purging them
//! ([`purge_round`]: personal data removed, one destruction record each, the
//! employee too once nothing of it is left), and legal holds ([`set_hold`],
//! [`lift_hold`]).

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::json;
use sqlx::{PgConnection, PgPool};

use super::audit::{self, Actor, Entry};
use super::WriteError;
use crate::domain::I9Status;

/// The rule a purge is made under, recorded in every destruction record.
pub const RULE: &str = "8 CFR 274a.2(b)(2)(i)(A)";

/// I-9s purged per transaction.
pub const BATCH: i64 = 500;
/// Batches per round at most (a backlog finishes next round).
const MAX_BATCHES: usize = 200;

/// The advisory lock that lets one worker purge records at a time.
pub const ROUND_LOCK_KEY: i64 = 0x0069_3972_6574_6e00; // "i9retn"
/// Taken shared by each purge transaction and exclusively by every write of
/// a legal hold: a hold committed before a purge transaction starts is seen
/// by it, one set during it waits for it to end.
const HOLDS_LOCK_KEY: i64 = 0x0069_3968_6f6c_6400; // "i9hold"

/// Tables holding personal data of an I-9 in rows of their own, each with an
/// `i9_id` column: their rows of a purged I-9 are deleted. A table added
/// later (Supplement A preparers and translators, Supplement B
/// reverifications) is one more line here. The names are constants, never
/// input.
pub const I9_PERSONAL_TABLES: &[&str] = &[
    // The Section 1 links (their token, encrypted).
    "i9_requests",
    // Supplement A: the preparers' and translators' names and addresses.
    "i9_preparers",
    // Status Change Report requests: the revoked document's number
    // (docs/everify.md). Before Supplement B, whose entries they point at.
    "i9_reverification_requests",
    // Supplement B: new names, document numbers, signatures.
    "i9_supplement_b",
    // E-Verify cases (docs/everify.md): the case creator, reason texts; their
    // history goes with them (ON DELETE CASCADE).
    "everify_cases",
];

/// Who purged: the worker's daily round or `i9-admin purge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgedBy {
    Worker,
    Admin,
}

impl PurgedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Worker => "worker",
            Self::Admin => "admin",
        }
    }
}

/// An I-9 due for the purge: no personal data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    pub i9_id: i64,
    pub employee_id: i64,
    pub legal_entity_id: Option<i64>,
    pub retention_date: NaiveDate,
}

/// The I-9s due for the purge on `today`, at most `limit`, locked (skipping
/// those another transaction holds). THE eligibility rule, used by the purge
/// and by `--dry-run` alike (docs/retention.md, "What is purged"):
/// - its retention date is stored and on or before `today` (an I-9 of a
///   current employee, or whose date of hire is unknown, has none);
/// - it is not in progress (`Section 1 Incomplete`, `Signed Sec 1`,
///   `Signed Sec 2`) and not purged already;
/// - no legal hold is active on its employee or the employee's legal entity;
/// - no verification case is open on it (see the marked place below).
pub async fn due(
    conn: &mut PgConnection,
    today: NaiveDate,
    limit: i64,
) -> Result<Vec<Due>, sqlx::Error> {
    let open = I9Status::OPEN.map(I9Status::as_str);
    sqlx::query_as!(
        Due,
        r#"SELECT i.id AS i9_id, i.employee_id, e.legal_entity_id,
                  i.retention_date AS "retention_date!"
           FROM i9s i JOIN employees e ON e.id = i.employee_id
           WHERE i.purged_at IS NULL
             AND i.retention_date IS NOT NULL
             AND i.retention_date <= $1
             AND i.status <> ALL($3)
             AND NOT EXISTS (
                 SELECT 1 FROM legal_holds h
                 WHERE h.lifted_at IS NULL
                   AND (h.employee_id = i.employee_id OR h.legal_entity_id = e.legal_entity_id))
             -- OPEN VERIFICATION CASE: when E-Verify cases arrive (a later
             -- issue), the condition goes here, e.g.
             --   AND NOT EXISTS (SELECT 1 FROM everify_cases c
             --                   WHERE c.i9_id = i.id AND c.closed_at IS NULL)
           ORDER BY i.retention_date, i.id
           LIMIT $2
           FOR UPDATE OF i SKIP LOCKED"#,
        today,
        limit,
        &open[..] as &[&str],
    )
    .fetch_all(&mut *conn)
    .await
}

/// An I-9 past its retention date that an active legal hold keeps from the
/// purge, one per hold that applies (ids only, no personal data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub i9_id: i64,
    pub employee_id: i64,
    pub retention_date: NaiveDate,
    pub hold_id: i64,
    /// What the hold is on: the I-9's employee or the employee's legal entity.
    pub on: HoldOn,
}

/// The I-9s that [`due`] would take on `today` but for an active legal
/// hold: past their date, not in progress, not purged, and held. One row per
/// hold that applies (an I-9 held twice is listed twice), by retention date,
/// I-9 and hold. The hold's reason is not read (docs/retention.md, "The
/// daily purge").
pub async fn kept_by_hold<'e>(
    db: impl sqlx::PgExecutor<'e>,
    today: NaiveDate,
) -> Result<Vec<Kept>, sqlx::Error> {
    let open = I9Status::OPEN.map(I9Status::as_str);
    let rows = sqlx::query!(
        r#"SELECT i.id AS i9_id, i.employee_id, i.retention_date AS "retention_date!",
                  h.id AS hold_id, h.employee_id AS hold_employee_id,
                  h.legal_entity_id AS hold_legal_entity_id
           FROM i9s i JOIN employees e ON e.id = i.employee_id
           JOIN legal_holds h ON h.lifted_at IS NULL
                AND (h.employee_id = i.employee_id OR h.legal_entity_id = e.legal_entity_id)
           WHERE i.purged_at IS NULL
             AND i.retention_date IS NOT NULL
             AND i.retention_date <= $1
             AND i.status <> ALL($2)
           ORDER BY i.retention_date, i.id, h.id"#,
        today,
        &open[..] as &[&str],
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Kept {
            i9_id: r.i9_id,
            employee_id: r.employee_id,
            retention_date: r.retention_date,
            hold_id: r.hold_id,
            on: match (r.hold_employee_id, r.hold_legal_entity_id) {
                (Some(e), _) => HoldOn::Employee(e),
                (None, l) => HoldOn::LegalEntity(l.unwrap_or_default()),
            },
        })
        .collect())
}

/// How many distinct I-9s `kept` names.
pub fn count_i9s(kept: &[Kept]) -> usize {
    kept.iter()
        .map(|k| k.i9_id)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// What `--dry-run` shows (ids and dates only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DryRun {
    /// The I-9s a round would purge, in order.
    pub i9s: Vec<Due>,
    /// The employees the same round would purge after them
    /// ([`employees_due`], counting the I-9s above as purged).
    pub employees: Vec<i64>,
    /// The I-9s past their date that a legal hold keeps ([`kept_by_hold`]).
    pub kept: Vec<Kept>,
}

/// What a round on `today` would do, without changing anything (the
/// listing's transaction is rolled back): the same queries as the purge.
pub async fn dry_run(pool: &PgPool, today: NaiveDate) -> Result<DryRun, sqlx::Error> {
    let mut tx = pool.begin().await?;
    // One query with a large limit: a dry run reads, it does not batch.
    let i9s = due(&mut tx, today, BATCH * MAX_BATCHES as i64).await?;
    let ids: Vec<i64> = i9s.iter().map(|d| d.i9_id).collect();
    let employees = employees_due(&mut tx, &ids).await?;
    let kept = kept_by_hold(&mut *tx, today).await?;
    tx.rollback().await?;
    Ok(DryRun {
        i9s,
        employees,
        kept,
    })
}

/// What one round purged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// The I-9s purged, in order.
    pub i9s: Vec<Due>,
    /// The employees whose own personal data was purged too.
    pub employees: Vec<i64>,
    /// The I-9s past their date that a legal hold kept, after the round
    /// ([`kept_by_hold`]).
    pub kept: Vec<Kept>,
}

impl Round {
    /// The round's log line: counts only, never personal data, e.g.
    /// "purged 1 I-9 and 0 employees; kept by legal hold: 2".
    pub fn summary(&self) -> String {
        format!(
            "purged {} and {}; kept by legal hold: {}",
            counted(self.i9s.len(), "I-9", "I-9s"),
            counted(self.employees.len(), "employee", "employees"),
            count_i9s(&self.kept),
        )
    }
}

/// `n` and its noun, `one` or `many`: "1 I-9", "0 I-9s", "2 employees".
pub fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// When a round on `today` stamps what it purges (`purged_at` of the I-9s,
/// the employees and the destruction records): `today` at the current time
/// of day (UTC). `today` is the day the round decided on
/// ([`crate::Config::today`], moved by `CLOCK_OFFSET_DAYS` in a trial), so a
/// record never reads as purged before its retention date
/// (docs/retention.md, "The daily purge").
pub fn stamp(today: NaiveDate) -> DateTime<Utc> {
    today.and_time(Utc::now().time()).and_utc()
}

/// One round on `today`: purge every I-9 due ([`due`]), [`BATCH`] per
/// transaction, then the employees left with nothing to keep
/// ([`purge_employees`]). Safe beside another round: each batch claims its
/// rows (`FOR UPDATE SKIP LOCKED`), and an I-9 has one destruction record
/// (its primary key).
pub async fn purge_round(
    pool: &PgPool,
    today: NaiveDate,
    by: PurgedBy,
) -> Result<Round, sqlx::Error> {
    let mut round = Round::default();
    let at = stamp(today);
    for _ in 0..MAX_BATCHES {
        let mut tx = pool.begin().await?;
        sqlx::query!("SELECT pg_advisory_xact_lock_shared($1)", HOLDS_LOCK_KEY)
            .execute(&mut *tx)
            .await?;
        let batch = due(&mut tx, today, BATCH).await?;
        purge_i9s(&mut tx, &batch, by, at).await?;
        tx.commit().await?;
        let n = batch.len();
        round.i9s.extend(batch);
        if (n as i64) < BATCH {
            break;
        }
    }
    round.employees = purge_employees(pool, by, at).await?;
    round.kept = kept_by_hold(pool, today).await?;
    Ok(round)
}

/// One round, unless another process is running one now (`None`).
pub async fn purge_round_if_first(
    pool: &PgPool,
    today: NaiveDate,
    by: PurgedBy,
) -> Result<Option<Round>, sqlx::Error> {
    let mut lock = pool.acquire().await?;
    let got = sqlx::query_scalar!(
        r#"SELECT pg_try_advisory_lock($1) AS "got!""#,
        ROUND_LOCK_KEY
    )
    .fetch_one(&mut *lock)
    .await?;
    if !got {
        return Ok(None);
    }
    let round = purge_round(pool, today, by).await;
    let _ = sqlx::query_scalar!("SELECT pg_advisory_unlock($1)", ROUND_LOCK_KEY)
        .fetch_one(&mut *lock)
        .await;
    round.map(Some)
}

/// Purge `batch` (rows [`due`] locked in `tx`): a destruction record each,
/// every personal column emptied, the rows of [`I9_PERSONAL_TABLES`]
/// deleted, and an `i9.purge` audit entry (no personal data). `at` is the
/// round's [`stamp`].
async fn purge_i9s(
    tx: &mut PgConnection,
    batch: &[Due],
    by: PurgedBy,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    if batch.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = batch.iter().map(|d| d.i9_id).collect();
    sqlx::query!(
        "INSERT INTO i9_destructions (i9_id, employee_id, legal_entity_id, retention_date, rule,
                                     purged_by, purged_at)
         SELECT i.id, i.employee_id, e.legal_entity_id, i.retention_date, $2, $3, $4
         FROM i9s i JOIN employees e ON e.id = i.employee_id
         WHERE i.id = ANY($1)",
        &ids,
        RULE,
        by.as_str(),
        at,
    )
    .execute(&mut *tx)
    .await?;
    // Every column that holds what the employee, the employer's
    // representative or a translator wrote, and the documents. What stays:
    // ids, status, form edition, the dates of the process and of
    // employment, the retention date.
    sqlx::query!(
        "UPDATE i9s SET purged_at = $2, updated_at = now(),
             first_name = '', last_name = '', middle_initial = NULL, other_name = NULL,
             date_of_birth = NULL, ssn_ciphertext = NULL, ssn_last4 = NULL,
             email_address = NULL, phone_number = NULL,
             address_street = NULL, address_apartment = NULL, address_city = NULL,
             address_state = NULL, address_zip = NULL,
             attestation = NULL, work_authorization = NULL, work_authorization_expiration = NULL,
             alien_number = NULL, admission_number = NULL,
             foreign_passport_number = NULL, foreign_passport_country = NULL,
             i9_notes = NULL, section1_differences = NULL,
             employer_first_name = NULL, employer_last_name = NULL, employer_title = NULL,
             employer_business = NULL, employer_address = NULL, employer_city = NULL,
             employer_state = NULL, employer_zip = NULL,
             translator_first_name = NULL, translator_last_name = NULL, translator_address = NULL,
             translator_city = NULL, translator_state = NULL, translator_zip = NULL,
             list_a1_doc_title = NULL, list_a1_doc_issuer = NULL, list_a1_doc_number = NULL,
             list_a1_doc_expiration = NULL,
             list_a2_doc_title = NULL, list_a2_doc_issuer = NULL, list_a2_doc_number = NULL,
             list_a2_doc_expiration = NULL,
             list_a3_doc_title = NULL, list_a3_doc_issuer = NULL, list_a3_doc_number = NULL,
             list_a3_doc_expiration = NULL,
             list_b_doc_title = NULL, list_b_doc_issuer = NULL, list_b_doc_number = NULL,
             list_b_doc_expiration = NULL,
             list_c_doc_title = NULL, list_c_doc_issuer = NULL, list_c_doc_number = NULL,
             list_c_doc_expiration = NULL,
             i9_expiration = NULL, receipt_due_date = NULL
         WHERE id = ANY($1)",
        &ids,
        at,
    )
    .execute(&mut *tx)
    .await?;
    for table in I9_PERSONAL_TABLES {
        // A constant table name (above), the ids bound.
        sqlx::query(&format!("DELETE FROM {table} WHERE i9_id = ANY($1)"))
            .bind(&ids)
            .execute(&mut *tx)
            .await?;
    }
    let actor = Actor::default();
    for d in batch {
        audit::record(
            &mut *tx,
            &actor,
            Entry::new("i9.purge", "i9", d.i9_id).detail(json!({
                "rule": RULE,
                "retentionDate": d.retention_date,
                "purgedBy": by.as_str(),
            })),
        )
        .await?;
    }
    Ok(())
}

/// The employees a round would purge, locked (skipping those another
/// transaction holds): not purged, terminated (their latest period has
/// ended), at least one I-9 and every one of them purged (or among
/// `purging`, the I-9s the round purges first: a dry run's), none being
/// created, no legal hold on them or their legal entity (docs/retention.md,
/// "The employee"). THE rule for the employee, used by the purge and the dry
/// run alike; the purge checks it again in its update.
pub async fn employees_due(
    conn: &mut PgConnection,
    purging: &[i64],
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT e.id FROM employees e
         WHERE e.purged_at IS NULL
           AND EXISTS (SELECT 1 FROM i9s i WHERE i.employee_id = e.id)
           AND NOT EXISTS (SELECT 1 FROM i9s i
                           WHERE i.employee_id = e.id AND i.purged_at IS NULL
                             AND i.id <> ALL($1))
           AND NOT EXISTS (SELECT 1 FROM i9_requests r WHERE r.employee_id = e.id AND r.i9_id IS NULL)
           AND (SELECT p.terminated_date IS NOT NULL FROM employment_periods p
                WHERE p.employee_id = e.id ORDER BY p.id DESC LIMIT 1)
           AND NOT EXISTS (
               SELECT 1 FROM legal_holds h
               WHERE h.lifted_at IS NULL
                 AND (h.employee_id = e.id OR h.legal_entity_id = e.legal_entity_id))
         ORDER BY e.id
         LIMIT $2
         FOR UPDATE OF e SKIP LOCKED",
        purging,
        BATCH * MAX_BATCHES as i64,
    )
    .fetch_all(&mut *conn)
    .await
}

/// Purge the employees left with nothing to keep ([`employees_due`]),
/// stamped `at` (the round's [`stamp`]). Their personal data (names, SSN,
/// date of birth, contact details, HR and partner keys, their own sign-in)
/// was kept only for the I-9 (docs/retention.md, "The employee"). The row
/// stays, with its ids, periods of employment and history.
pub async fn purge_employees(
    pool: &PgPool,
    by: PurgedBy,
    at: DateTime<Utc>,
) -> Result<Vec<i64>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query!("SELECT pg_advisory_xact_lock_shared($1)", HOLDS_LOCK_KEY)
        .execute(&mut *tx)
        .await?;
    // Lock the candidates first, then decide again in the update itself: a
    // statement that starts after the locks sees a re-hire or a hold
    // committed meanwhile.
    let candidates = employees_due(&mut tx, &[]).await?;
    if candidates.is_empty() {
        tx.rollback().await?;
        return Ok(candidates);
    }
    let ids = sqlx::query_scalar!(
        "UPDATE employees e SET purged_at = $2, updated_at = now(),
             first_name = '', last_name = '', middle_name = NULL,
             ssn_ciphertext = NULL, ssn_hash = NULL, ssn_last4 = NULL, date_of_birth = NULL,
             profile_id = NULL, other_name = NULL, job_title = NULL, email_address = NULL,
             custom1 = NULL, custom2 = NULL, custom3 = NULL, custom4 = NULL,
             custom5 = NULL, custom6 = NULL, custom7 = NULL, custom8 = NULL,
             notification_email1 = NULL, notification_email2 = NULL,
             address_street = NULL, address_street2 = NULL, address_apartment = NULL,
             address_city = NULL, address_state = NULL, address_country = NULL, address_zip = NULL,
             work_number = NULL, work_extension = NULL, home_number = NULL, home_extension = NULL,
             cell_number = NULL, cell_extension = NULL,
             integration_candidate_id = NULL, employee_return_url = NULL
         WHERE e.id = ANY($1)
           AND e.purged_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM i9s i WHERE i.employee_id = e.id AND i.purged_at IS NULL)
           AND NOT EXISTS (SELECT 1 FROM i9_requests r WHERE r.employee_id = e.id AND r.i9_id IS NULL)
           AND (SELECT p.terminated_date IS NOT NULL FROM employment_periods p
                WHERE p.employee_id = e.id ORDER BY p.id DESC LIMIT 1)
           AND NOT EXISTS (
               SELECT 1 FROM legal_holds h
               WHERE h.lifted_at IS NULL
                 AND (h.employee_id = e.id OR h.legal_entity_id = e.legal_entity_id))
         RETURNING e.id",
        &candidates,
        at,
    )
    .fetch_all(&mut *tx)
    .await?;
    // The employee's own sign-in (its login is the employee's email); its
    // sessions and tokens go with it (ON DELETE CASCADE).
    sqlx::query!("DELETE FROM users WHERE employee_id = ANY($1)", &ids)
        .execute(&mut *tx)
        .await?;
    sqlx::query!("DELETE FROM i9_requests WHERE employee_id = ANY($1)", &ids)
        .execute(&mut *tx)
        .await?;
    let actor = Actor::default();
    for id in &ids {
        audit::record(
            &mut *tx,
            &actor,
            Entry::new("employee.purge", "employee", id).detail(json!({"purgedBy": by.as_str()})),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(ids)
}

/// A legal hold as stored.
#[derive(Debug, Clone)]
pub struct Hold {
    pub id: i64,
    pub employee_id: Option<i64>,
    pub legal_entity_id: Option<i64>,
    pub reason: String,
    pub set_by: Option<i64>,
    pub set_at: DateTime<Utc>,
    pub lifted_by: Option<i64>,
    pub lifted_at: Option<DateTime<Utc>>,
}

/// What a hold is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldOn {
    Employee(i64),
    LegalEntity(i64),
}

/// Set a legal hold on `on` for `reason` (already checked: 1 to 500
/// characters), audited `legal_hold.set`. `NotFound` when the employee or
/// legal entity does not exist.
pub async fn set_hold(
    tx: &mut PgConnection,
    actor: &Actor,
    on: HoldOn,
    reason: &str,
) -> Result<Hold, WriteError> {
    sqlx::query!("SELECT pg_advisory_xact_lock($1)", HOLDS_LOCK_KEY)
        .execute(&mut *tx)
        .await?;
    let (employee, entity) = match on {
        HoldOn::Employee(id) => (Some(id), None),
        HoldOn::LegalEntity(id) => (None, Some(id)),
    };
    let exists = sqlx::query_scalar!(
        r#"SELECT (EXISTS (SELECT 1 FROM employees WHERE id = $1)
                OR EXISTS (SELECT 1 FROM legal_entities WHERE id = $2)) AS "exists!""#,
        employee,
        entity,
    )
    .fetch_one(&mut *tx)
    .await?;
    if !exists {
        return Err(WriteError::NotFound);
    }
    let hold = sqlx::query_as!(
        Hold,
        "INSERT INTO legal_holds (employee_id, legal_entity_id, reason, set_by)
         VALUES ($1, $2, $3, $4)
         RETURNING id, employee_id, legal_entity_id, reason, set_by, set_at, lifted_by, lifted_at",
        employee,
        entity,
        reason,
        actor.user_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    audit::record(&mut *tx, actor, hold_entry("legal_hold.set", &hold)).await?;
    Ok(hold)
}

/// Lift legal hold `id`, audited `legal_hold.lift`; the hold stays as
/// history. `NotFound` when there is no such hold, `Conflict` when it was
/// lifted already.
pub async fn lift_hold(tx: &mut PgConnection, actor: &Actor, id: i64) -> Result<Hold, WriteError> {
    sqlx::query!("SELECT pg_advisory_xact_lock($1)", HOLDS_LOCK_KEY)
        .execute(&mut *tx)
        .await?;
    let Some(was) = find_hold(&mut *tx, id).await? else {
        return Err(WriteError::NotFound);
    };
    if was.lifted_at.is_some() {
        return Err(WriteError::Conflict(
            "The legal hold was lifted already.".into(),
        ));
    }
    let hold = sqlx::query_as!(
        Hold,
        "UPDATE legal_holds SET lifted_at = now(), lifted_by = $2 WHERE id = $1
         RETURNING id, employee_id, legal_entity_id, reason, set_by, set_at, lifted_by, lifted_at",
        id,
        actor.user_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    audit::record(&mut *tx, actor, hold_entry("legal_hold.lift", &hold)).await?;
    Ok(hold)
}

/// The audit entry `action` of `hold`, on the record it holds (so that it is
/// in the employee's history), naming the hold and what it is on
/// (`employee` or `legalEntity`): the history shows both
/// (docs/api.md, "History of a record"). Never the reason.
fn hold_entry<'a>(action: &'a str, hold: &Hold) -> Entry<'a> {
    let (entry, on) = match (hold.employee_id, hold.legal_entity_id) {
        (Some(e), _) => (Entry::new(action, "employee", e), "employee"),
        (None, l) => (
            Entry::new(action, "legal_entity", l.unwrap_or_default()),
            "legalEntity",
        ),
    };
    entry.detail(json!({"legalHoldId": hold.id, "on": on}))
}

/// Legal hold `id`.
pub async fn find_hold(conn: &mut PgConnection, id: i64) -> Result<Option<Hold>, sqlx::Error> {
    sqlx::query_as!(
        Hold,
        "SELECT id, employee_id, legal_entity_id, reason, set_by, set_at, lifted_by, lifted_at
         FROM legal_holds WHERE id = $1",
        id,
    )
    .fetch_optional(&mut *conn)
    .await
}

/// How many employees hold `hold` is on, counted now, lifted or not: `1`
/// for a hold on an employee (`0` once that employee is purged), the
/// employees not purged whose legal entity (`employees.legal_entity_id`,
/// which is also their I-9s' legal entity: an I-9 has none of its own) is
/// the held one for a hold on a legal entity (docs/retention.md, "Legal
/// holds"). Only those of groups `groups` (`None`: every group) and, for a
/// partner client `client`, created through it: what the caller sees.
pub async fn employees_covered<'e>(
    db: impl sqlx::PgExecutor<'e>,
    hold: &Hold,
    groups: Option<&[i64]>,
    client: Option<i64>,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM employees e
           WHERE e.purged_at IS NULL AND (e.id = $1 OR e.legal_entity_id = $2)
             AND ($3::BIGINT[] IS NULL OR e.location_id = ANY($3))
             AND ($4::BIGINT IS NULL OR e.integration_client_id = $4)"#,
        hold.employee_id,
        hold.legal_entity_id,
        groups,
        client,
    )
    .fetch_one(db)
    .await
}

/// Whether a legal hold is active on employee `employee`, directly or
/// through its legal entity (shown on the employee's and its I-9s' records):
/// the view `employee_holds` (migrations/20261125100000_read_folds.sql),
/// which the employee record's single read reads too.
pub async fn held<'e>(db: impl sqlx::PgExecutor<'e>, employee: i64) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM employee_holds h WHERE h.employee_id = $1) AS "held!""#,
        employee,
    )
    .fetch_one(db)
    .await
}

/// When I-9 `id` was purged, with what its destruction record says (`None`:
/// not purged, or no such I-9).
#[derive(Debug, Clone)]
pub struct Destruction {
    pub purged_at: DateTime<Utc>,
    pub retention_date: NaiveDate,
    pub rule: String,
}

/// The destruction record of I-9 `id`, if it was purged.
pub async fn destruction<'e>(
    db: impl sqlx::PgExecutor<'e>,
    id: i64,
) -> Result<Option<Destruction>, sqlx::Error> {
    sqlx::query_as!(
        Destruction,
        "SELECT purged_at, retention_date, rule FROM i9_destructions WHERE i9_id = $1",
        id,
    )
    .fetch_optional(db)
    .await
}

/// When employee `employee` was purged (`None`: it was not), as the
/// destruction record of its latest purged I-9 tells.
pub async fn employee_destruction<'e>(
    db: impl sqlx::PgExecutor<'e>,
    employee: i64,
) -> Result<Option<Destruction>, sqlx::Error> {
    sqlx::query_as!(
        Destruction,
        "SELECT d.purged_at, d.retention_date, d.rule
         FROM employees e JOIN i9_destructions d ON d.employee_id = e.id
         WHERE e.id = $1 AND e.purged_at IS NOT NULL
         ORDER BY d.purged_at DESC, d.i9_id DESC LIMIT 1",
        employee,
    )
    .fetch_optional(db)
    .await
}
