//! `send_reminder_email`: email one of the employer's notification addresses
//! of an employee (`notificationEmail1` or `2`) that a reverification or a
//! receipt's replacement is due on one of its I-9s, or overdue
//! (docs/reminders.md). It names the employee (first and last name, nothing
//! more) and how HR finds them (record ids, `profileId`), what is due and
//! when ("in 30 days", "5 days overdue", counted from the day the threshold
//! was reached), and the API calls that show and record it; in English (the
//! addresses are the employer's).
//!
//! Nothing is sent, and the job succeeds, when the address was removed, or
//! the I-9 got another date since the reminder (reverified, receipt
//! replaced), or is gone.
//!
//! Reads `reminders`, `i9s`, `employees` and `legal_entities`; writes
//! `processed_jobs` (the email is sent once: [`super::claim`]).

use askama::Template;
use chrono::NaiveDate;
use i9_common::domain::DueKind;
use uuid::Uuid;

use super::{claim, render, JobError, JobResult};
use crate::{mailer::Email, wording, Context};

pub const KIND: &str = "send_reminder_email";

pub async fn run(ctx: &Context, job_id: Uuid, reminder_id: i64, recipient: u8) -> JobResult {
    if !claim::begin(&ctx.pool, job_id, KIND, claim::EMAIL_HOLD).await? {
        return Ok(());
    }
    let sent = send(ctx, job_id, reminder_id, recipient).await;
    claim::finish(&ctx.pool, job_id, KIND, sent).await
}

/// A reminder, its I-9's employee and the address it goes to.
struct Reminder {
    i9_id: i64,
    employee_id: i64,
    kind: DueKind,
    due_date: NaiveDate,
    overdue: bool,
    /// The day the round found the threshold reached (`None` on rows older
    /// than the column: today then).
    reached_on: Option<NaiveDate>,
    /// The I-9 still has this due date for this kind.
    current: bool,
    first_name: String,
    last_name: String,
    profile_id: Option<String>,
    /// For a receipt: the title of the document it stood for (Supplement
    /// B's receipt, else Section 2's document marked as one).
    receipt_document: Option<String>,
    to: Option<String>,
    employer: Option<String>,
}

async fn send(ctx: &Context, job_id: Uuid, reminder_id: i64, recipient: u8) -> JobResult {
    let row = sqlx::query_as!(
        Reminder,
        r#"SELECT r.i9_id, i.employee_id, r.kind AS "kind: DueKind", r.due_date,
                  r.threshold = 'overdue' AS "overdue!", r.reached_on,
                  (CASE r.kind WHEN 'reverification' THEN i.i9_expiration ELSE i.receipt_due_date END)
                      IS NOT DISTINCT FROM r.due_date AS "current!",
                  e.first_name, e.last_name, NULLIF(btrim(e.profile_id), '') AS "profile_id?",
                  CASE r.kind WHEN 'receipt' THEN COALESCE(
                      (SELECT s.document_title FROM i9_supplement_b s
                       WHERE s.i9_id = i.id AND s.receipt AND s.receipt_due_date = r.due_date
                       ORDER BY s.id DESC LIMIT 1),
                      CASE WHEN i.list_a1_doc_receipt THEN i.list_a1_doc_title
                           WHEN i.list_b_doc_receipt THEN i.list_b_doc_title
                           WHEN i.list_c_doc_receipt THEN i.list_c_doc_title END) END
                      AS "receipt_document?",
                  NULLIF(btrim(CASE $2::INT WHEN 1 THEN e.notification_email1
                                            WHEN 2 THEN e.notification_email2 END), '') AS "to",
                  l.entity_name AS "employer?"
           FROM reminders r JOIN i9s i ON i.id = r.i9_id JOIN employees e ON e.id = i.employee_id
           LEFT JOIN legal_entities l ON l.id = e.legal_entity_id
           WHERE r.id = $1"#,
        reminder_id,
        i32::from(recipient),
    )
    .fetch_optional(&ctx.pool)
    .await?;
    let Some(r) = row else {
        tracing::info!(reminder_id, %job_id, "reminder email not sent: the I-9 is gone");
        return Ok(());
    };
    let Some(to) = r.to.clone() else {
        tracing::info!(reminder_id, recipient, %job_id, "reminder email not sent: the notification address was removed");
        return Ok(());
    };
    if !r.current {
        tracing::info!(reminder_id, %job_id, "reminder email not sent: the I-9 has another due date now");
        return Ok(());
    }
    let email = compose(
        &r,
        &ctx.config.public_base_url,
        ctx.config.today(),
        ctx.config.reminder_thresholds.widest(),
        to,
        job_id,
    )?;
    ctx.mailer.send(&email).await.map_err(JobError::Retryable)?;
    tracing::info!(reminder_id, recipient, %job_id, "reminder email sent");
    Ok(())
}

/// When the date is, from the day the threshold was reached: the words of
/// the subject and of the first sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// Due in so many days (2 or more).
    InDays(i64),
    Tomorrow,
    Today,
    /// Past, by so many days (1 or more).
    Overdue(i64),
}

impl When {
    fn of(due: NaiveDate, on: NaiveDate, overdue: bool) -> Self {
        let left = (due - on).num_days();
        match left {
            _ if overdue || left < 0 => When::Overdue((-left).max(1)),
            0 => When::Today,
            1 => When::Tomorrow,
            n => When::InDays(n),
        }
    }

    /// "in 30 days", "tomorrow", "today"; "5 days overdue".
    fn words(self) -> String {
        match self {
            When::InDays(n) => format!("in {n} days"),
            When::Tomorrow => "tomorrow".to_owned(),
            When::Today => "today".to_owned(),
            When::Overdue(1) => "1 day overdue".to_owned(),
            When::Overdue(n) => format!("{n} days overdue"),
        }
    }
}

fn compose(
    r: &Reminder,
    base_url: &str,
    today: NaiveDate,
    within_days: u16,
    to: String,
    job_id: Uuid,
) -> Result<Email, JobError> {
    let employee = format!("{} {}", r.first_name, r.last_name);
    let due = wording::date(r.due_date, false);
    let receipt = r.kind == DueKind::Receipt;
    let when = When::of(r.due_date, r.reached_on.unwrap_or(today), r.overdue);
    let step = if receipt {
        "receipt-update"
    } else {
        "reverify"
    };
    let text = ReminderText {
        receipt,
        overdue: matches!(when, When::Overdue(_)),
        when: &when.words(),
        employee: &employee,
        due: &due,
        employee_id: r.employee_id,
        profile_id: r.profile_id.as_deref(),
        receipt_document: r.receipt_document.as_deref(),
        i9_id: r.i9_id,
        api: base_url,
        step,
        within_days,
        employer: r.employer.as_deref().unwrap_or("Your organization"),
    };
    let what = if receipt {
        "Form I-9 receipt replacement"
    } else {
        "Form I-9 reverification"
    };
    let subject = match when {
        When::Overdue(_) => format!("Overdue: {what} was due {due}: {employee}"),
        _ => format!("{what} due {} ({due}): {employee}", when.words()),
    };
    Ok(Email {
        to,
        subject,
        text: render(&text)?,
        html: render(&ReminderHtml { mail: &text })?,
        message_id: format!("<{job_id}@i9.invalid>"),
    })
}

/// The plain-text part (`workers/templates/reminder_email.txt`).
#[derive(Template)]
#[template(path = "reminder_email.txt")]
struct ReminderText<'a> {
    /// A receipt's replacement is due, not a reverification.
    receipt: bool,
    /// The due date has passed.
    overdue: bool,
    /// [`When::words`]: "in 30 days", "today", "5 days overdue".
    when: &'a str,
    /// The employee's first and last name.
    employee: &'a str,
    /// The due date, written out.
    due: &'a str,
    /// The employee's record id, and the employer's own id for them
    /// (`profileId`), if any: how HR finds the person.
    employee_id: i64,
    profile_id: Option<&'a str>,
    /// For a receipt: the document it stood for, when known.
    receipt_document: Option<&'a str>,
    /// The I-9's record id.
    i9_id: i64,
    /// The API's base URL (`PUBLIC_BASE_URL`): named as API calls, not as a
    /// link to open (they need a token; docs/reminders.md).
    api: &'a str,
    /// `reverify` or `receipt-update`: the step that records what is due.
    step: &'a str,
    /// The widest reminder threshold: the dashboard's `withinDays`.
    within_days: u16,
    /// The legal entity's name, or "Your organization".
    employer: &'a str,
}

/// The HTML part (`workers/templates/reminder_email.html`), of the same values, escaped.
#[derive(Template)]
#[template(path = "reminder_email.html")]
struct ReminderHtml<'a> {
    mail: &'a ReminderText<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn the_days_left_are_counted_from_the_day_the_threshold_was_reached() {
        let due = day("2027-03-01");
        assert_eq!(
            When::of(due, day("2027-01-30"), false).words(),
            "in 30 days"
        );
        assert_eq!(When::of(due, day("2027-02-22"), false).words(), "in 7 days");
        assert_eq!(When::of(due, day("2027-02-28"), false).words(), "tomorrow");
        assert_eq!(When::of(due, due, false).words(), "today");
        assert_eq!(
            When::of(due, day("2027-03-02"), true).words(),
            "1 day overdue"
        );
        assert_eq!(
            When::of(due, day("2027-03-06"), true).words(),
            "5 days overdue"
        );
    }

    fn reminder(kind: DueKind, overdue: bool, reached_on: &str) -> Reminder {
        Reminder {
            i9_id: 9,
            employee_id: 4,
            kind,
            due_date: day("2027-03-01"),
            overdue,
            reached_on: Some(day(reached_on)),
            current: true,
            first_name: "Zoë".into(),
            last_name: "<b>O'Neil</b>".into(),
            profile_id: Some("EMP-7&8".into()),
            receipt_document: (kind == DueKind::Receipt).then(|| "Driver's License".into()),
            to: None,
            employer: Some("Acme & Sons".into()),
        }
    }

    fn mail(r: &Reminder) -> Email {
        compose(
            r,
            "https://i9.example",
            day("2030-01-01"),
            90,
            "hr@acme.example".into(),
            Uuid::nil(),
        )
        .unwrap()
    }

    #[test]
    fn each_threshold_says_how_far_off_and_the_html_escapes_the_values() {
        let thirty = mail(&reminder(DueKind::Reverification, false, "2027-01-30"));
        let seven = mail(&reminder(DueKind::Reverification, false, "2027-02-22"));
        assert_eq!(
            thirty.subject,
            "Form I-9 reverification due in 30 days (March 1, 2027): Zoë <b>O'Neil</b>"
        );
        assert_eq!(
            seven.subject,
            "Form I-9 reverification due in 7 days (March 1, 2027): Zoë <b>O'Neil</b>"
        );
        assert_eq!(
            thirty.text,
            "Reverification on the Form I-9 of Zoë <b>O'Neil</b> is due in 30 days, by March 1, 2027.\n\n\
             The employee presents an unexpired List A or List C document of their choice showing \
             employment authorization, and you record it in Supplement B (Reverification and Rehire).\n\n\
             Employee: Zoë <b>O'Neil</b>, employee record 4 (your ID EMP-7&8)\n\
             Form I-9: record 9\n\n\
             Through the API (with your HR system's token):\n  \
             GET https://i9.example/v1/i9s/9 shows the I-9\n  \
             POST https://i9.example/v1/i9s/9/reverify records the reverification \
             (a JSON body: documentTitle, documentNumber, documentExpiration, employerName, \
             employerSignature)\n  \
             GET https://i9.example/v1/i9s?queue=expiring&withinDays=90 lists everything due within 90 days\n\n\
             Acme & Sons lists this address to be notified about this employee."
        );
        assert!(
            thirty.html.starts_with(
                "<p>Reverification on the Form I-9 of <strong>Zoë &#60;b&#62;O&#39;Neil&#60;/b&#62;</strong> \
                 is due <strong>in 30 days</strong>, by <strong>March 1, 2027</strong>.</p>"
            ),
            "{}",
            thirty.html
        );
        assert!(
            thirty.html.contains("(your ID EMP-7&#38;8)")
                && thirty.html.contains("Acme &#38; Sons")
                && !thirty.html.contains("<a "),
            "{}",
            thirty.html
        );

        let overdue = mail(&reminder(DueKind::Receipt, true, "2027-03-02"));
        assert_eq!(
            overdue.subject,
            "Overdue: Form I-9 receipt replacement was due March 1, 2027: Zoë <b>O'Neil</b>"
        );
        assert!(
            overdue.text.starts_with(
                "The real document replacing a receipt (Driver's License) on the Form I-9 of Zoë \
                 <b>O'Neil</b> was due on March 1, 2027 and is 1 day overdue."
            ) && overdue
                .text
                .contains("replacement of the lost, stolen or damaged document")
                && overdue.text.contains(
                    "POST https://i9.example/v1/i9s/9/receipt-update records the real document"
                ),
            "{}",
            overdue.text
        );
    }
}
