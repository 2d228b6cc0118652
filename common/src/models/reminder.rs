//! Expiring-document reminders (docs/reminders.md): which I-9s have a
//! reverification or receipt date within the widest threshold ([`due`]), and
//! sending one reminder ([`send`]): its row in `reminders`, the email jobs
//! and the partner event, in the caller's transaction, once.

use chrono::NaiveDate;
use sqlx::{PgConnection, PgPool};

use crate::{
    domain::{DueKind, Stage},
    events::document_due,
    jobs::Job,
    outbox,
};

/// A date of an I-9 within the widest threshold (or passed), and the
/// thresholds already recorded for it.
#[derive(Debug, Clone)]
pub struct Due {
    pub i9_id: i64,
    pub kind: DueKind,
    pub due_date: NaiveDate,
    /// `reminders.threshold` of the rows of this I-9, kind and due date.
    pub recorded: Vec<String>,
}

/// Every reverification and receipt date of an I-9 still followed up
/// (`i9_awaits_follow_up`: not Parked, employee still employed) that falls
/// at most `widest` days after `today`, passed ones included; the soonest
/// first.
pub async fn due(pool: &PgPool, today: NaiveDate, widest: u16) -> Result<Vec<Due>, sqlx::Error> {
    sqlx::query_as!(
        Due,
        r#"SELECT d.i9_id AS "i9_id!", d.kind AS "kind!: DueKind", d.due_date AS "due_date!",
                ARRAY(SELECT r.threshold FROM reminders r
                      WHERE r.i9_id = d.i9_id AND r.kind = d.kind AND r.due_date = d.due_date) AS "recorded!"
         FROM (SELECT i.id AS i9_id, 'reverification' AS kind, i.i9_expiration AS due_date
               FROM i9s i
               WHERE i.i9_expiration <= $1::DATE + $2::INT AND i.status <> 'Parked'
                 AND i9_awaits_follow_up(i.status, i.employee_id, $1)
               UNION ALL
               SELECT i.id, 'receipt', i.receipt_due_date
               FROM i9s i
               WHERE i.receipt_due_date <= $1::DATE + $2::INT AND i.status <> 'Parked'
                 AND i9_awaits_follow_up(i.status, i.employee_id, $1)) AS d
         ORDER BY d.due_date, d.i9_id, d.kind"#,
        today,
        i32::from(widest),
    )
    .fetch_all(pool)
    .await
}

/// What sending one reminder queued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    /// Email jobs: one per notification address set.
    pub emails: usize,
    /// Whether a partner event was recorded (a partner's employee).
    pub event: bool,
}

/// Send the reminder of `due` for `stages` (the stages reached, the tightest
/// first: [`crate::domain::Thresholds::stages`]) in `tx`: the tightest is
/// recorded as sent, with an email job per notification address and, for a
/// partner's employee, an `i9.document_due` event; the wider ones as passed.
/// `None` when there is nothing to send: the tightest is recorded already
/// (another worker sent it), or the I-9 changed since [`due`] read it (its
/// date, its status, its employment). The I-9's row is share-locked until
/// the caller commits, so its date cannot change in between.
pub async fn send(
    tx: &mut PgConnection,
    due: &Due,
    stages: &[Stage],
    today: NaiveDate,
    public_base_url: &str,
) -> Result<Option<Sent>, sqlx::Error> {
    let Some((tightest, wider)) = stages.split_first() else {
        return Ok(None);
    };
    let still = sqlx::query_scalar!(
        r#"SELECT (CASE $2 WHEN 'reverification' THEN i9_expiration ELSE receipt_due_date END) = $3
                  AND i9_awaits_follow_up(status, employee_id, $4) AS "still!"
         FROM i9s WHERE id = $1 FOR SHARE"#,
        due.i9_id,
        due.kind.as_str(),
        due.due_date,
        today,
    )
    .fetch_optional(&mut *tx)
    .await?;
    if still != Some(true) {
        return Ok(None);
    }
    let Some(reminder_id) = sqlx::query_scalar!(
        "INSERT INTO reminders (i9_id, kind, due_date, threshold, sent, reached_on)
         VALUES ($1, $2, $3, $4, TRUE, $5)
         ON CONFLICT (i9_id, kind, due_date, threshold) DO NOTHING RETURNING id",
        due.i9_id,
        due.kind.as_str(),
        due.due_date,
        tightest.as_text(),
        today,
    )
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(None);
    };
    let passed: Vec<String> = wider.iter().map(|s| s.as_text()).collect();
    sqlx::query!(
        "INSERT INTO reminders (i9_id, kind, due_date, threshold, sent)
         SELECT $1, $2, $3, t, FALSE FROM unnest($4::TEXT[]) AS t
         ON CONFLICT (i9_id, kind, due_date, threshold) DO NOTHING",
        due.i9_id,
        due.kind.as_str(),
        due.due_date,
        &passed,
    )
    .execute(&mut *tx)
    .await?;
    let addresses = sqlx::query!(
        r#"SELECT NULLIF(btrim(e.notification_email1), '') IS NOT NULL AS "first!",
                  NULLIF(btrim(e.notification_email2), '') IS NOT NULL AS "second!"
         FROM i9s i JOIN employees e ON e.id = i.employee_id WHERE i.id = $1"#,
        due.i9_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    let mut sent = Sent::default();
    for (recipient, set) in [(1u8, addresses.first), (2u8, addresses.second)] {
        if set {
            outbox::enqueue(
                tx,
                Job::SendReminderEmail {
                    reminder_id,
                    recipient,
                },
            )
            .await?;
            sent.emails += 1;
        }
    }
    sent.event = document_due::record(
        tx,
        due.i9_id,
        due.kind,
        due.due_date,
        Some(*tightest),
        public_base_url,
    )
    .await?
    .is_some();
    Ok(Some(sent))
}
