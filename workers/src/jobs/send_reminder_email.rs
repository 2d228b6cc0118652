//! `send_reminder_email`: email one of the employer's notification addresses
//! of an employee (`notificationEmail1` or `2`) that a reverification or a
//! receipt's replacement is due on one of its I-9s, or overdue
//! (docs/reminders.md). It names the employee (first and last name, nothing
//! more), the due date, what is due and the I-9's URL; in English (the
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
    kind: DueKind,
    due_date: NaiveDate,
    overdue: bool,
    /// The I-9 still has this due date for this kind.
    current: bool,
    first_name: String,
    last_name: String,
    to: Option<String>,
    employer: Option<String>,
}

async fn send(ctx: &Context, job_id: Uuid, reminder_id: i64, recipient: u8) -> JobResult {
    let row = sqlx::query_as!(
        Reminder,
        r#"SELECT r.i9_id, r.kind AS "kind: DueKind", r.due_date, r.threshold = 'overdue' AS "overdue!",
                  (CASE r.kind WHEN 'reverification' THEN i.i9_expiration ELSE i.receipt_due_date END)
                      IS NOT DISTINCT FROM r.due_date AS "current!",
                  e.first_name, e.last_name,
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
    let Some(to) = r.to else {
        tracing::info!(reminder_id, recipient, %job_id, "reminder email not sent: the notification address was removed");
        return Ok(());
    };
    if !r.current {
        tracing::info!(reminder_id, %job_id, "reminder email not sent: the I-9 has another due date now");
        return Ok(());
    }
    let employee = format!("{} {}", r.first_name, r.last_name);
    let due = wording::date(r.due_date, false);
    let receipt = r.kind == DueKind::Receipt;
    let link = format!("{}/v1/i9s/{}", ctx.config.public_base_url, r.i9_id);
    let text = ReminderText {
        receipt,
        overdue: r.overdue,
        employee: &employee,
        due: &due,
        link: &link,
        employer: r.employer.as_deref().unwrap_or("Your organization"),
    };
    let what = if receipt {
        "Form I-9 receipt replacement"
    } else {
        "Form I-9 reverification"
    };
    let when = if r.overdue { "overdue since" } else { "due" };
    let email = Email {
        to,
        subject: format!("{what} {when} {due}: {employee}"),
        text: render(&text)?,
        html: render(&ReminderHtml { mail: &text })?,
        message_id: format!("<{job_id}@i9.invalid>"),
    };
    ctx.mailer.send(&email).await.map_err(JobError::Retryable)?;
    tracing::info!(reminder_id, recipient, %job_id, "reminder email sent");
    Ok(())
}

/// The plain-text part (`workers/templates/reminder_email.txt`).
#[derive(Template)]
#[template(path = "reminder_email.txt")]
struct ReminderText<'a> {
    /// A receipt's replacement is due, not a reverification.
    receipt: bool,
    /// The due date has passed.
    overdue: bool,
    /// The employee's first and last name.
    employee: &'a str,
    /// The due date, written out.
    due: &'a str,
    /// The I-9's record.
    link: &'a str,
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

    #[test]
    fn the_text_says_what_is_due_by_when_and_the_html_escapes_the_values() {
        let text = ReminderText {
            receipt: false,
            overdue: false,
            employee: "Zoë <b>O'Neil</b>",
            due: "March 1, 2027",
            link: "https://i9.example/v1/i9s/9?a=1&b=2",
            employer: "Acme & Sons",
        };
        assert_eq!(
            text.render().unwrap(),
            "Reverification on the Form I-9 of Zoë <b>O'Neil</b> is due by March 1, 2027.\n\n\
             The employee presents an unexpired List A or List C document of their choice showing \
             employment authorization, and you record it in Supplement B (Reverification and Rehire).\n\n\
             Open the I-9: https://i9.example/v1/i9s/9?a=1&b=2\n\n\
             Acme & Sons lists this address to be notified about this employee."
        );
        let html = ReminderHtml { mail: &text }.render().unwrap();
        assert!(
            html.starts_with(
                "<p>Reverification on the Form I-9 of <strong>Zoë &#60;b&#62;O&#39;Neil&#60;/b&#62;</strong> \
                 is due by <strong>March 1, 2027</strong>.</p>"
            ),
            "{html}"
        );
        assert!(
            html.contains("href=\"https://i9.example/v1/i9s/9?a=1&#38;b=2\"")
                && html.contains("Acme &#38; Sons"),
            "{html}"
        );
        let overdue_receipt = ReminderText {
            receipt: true,
            overdue: true,
            ..text
        }
        .render()
        .unwrap();
        assert!(
            overdue_receipt.starts_with(
                "The document a receipt stood for on the Form I-9 of Zoë <b>O'Neil</b> was due on March 1, 2027 and is overdue."
            ) && overdue_receipt.contains("replacement of the lost, stolen or damaged document"),
            "{overdue_receipt}"
        );
    }
}
