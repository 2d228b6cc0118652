//! `send_revocation_email`: email one of the employer's notification
//! addresses of an employee (`notificationEmail1` or `2`) that E-Verify's
//! Status Change Report named the EAD on one of its I-9s as revoked, and
//! reverification is due (docs/everify.md, "The Status Change Report
//! (2025)"). Sent as the reminders' emails are (docs/reminders.md): it names
//! the employee (first and last name, nothing more) and how HR finds them,
//! the due date and the API calls that show and record it; never the case
//! number or the document's number. In English (the addresses are the
//! employer's).
//!
//! Nothing is sent, and the job succeeds, when the address was removed, the
//! request was cleared meanwhile (a Supplement B recorded), or it is gone.
//!
//! Reads `i9_reverification_requests`, `i9s`, `employees` and
//! `legal_entities`; writes `processed_jobs` (the email is sent once:
//! [`super::claim`]).

use askama::Template;
use chrono::NaiveDate;
use uuid::Uuid;

use super::{claim, render, JobError, JobResult};
use crate::{mailer::Email, wording, Context};

pub const KIND: &str = "send_revocation_email";

pub async fn run(ctx: &Context, job_id: Uuid, request_id: i64, recipient: u8) -> JobResult {
    if !claim::begin(&ctx.pool, job_id, KIND, claim::EMAIL_HOLD).await? {
        return Ok(());
    }
    let sent = send(ctx, job_id, request_id, recipient).await;
    claim::finish(&ctx.pool, job_id, KIND, sent).await
}

/// A request, its I-9's employee and the address it goes to.
struct Request {
    i9_id: i64,
    employee_id: i64,
    due_on: NaiveDate,
    cleared: bool,
    first_name: String,
    last_name: String,
    profile_id: Option<String>,
    to: Option<String>,
    employer: Option<String>,
}

async fn send(ctx: &Context, job_id: Uuid, request_id: i64, recipient: u8) -> JobResult {
    let row = sqlx::query_as!(
        Request,
        r#"SELECT r.i9_id, i.employee_id, r.due_on, r.cleared_at IS NOT NULL AS "cleared!",
                  e.first_name, e.last_name, NULLIF(btrim(e.profile_id), '') AS "profile_id?",
                  NULLIF(btrim(CASE $2::INT WHEN 1 THEN e.notification_email1
                                            WHEN 2 THEN e.notification_email2 END), '') AS "to",
                  l.entity_name AS "employer?"
           FROM i9_reverification_requests r JOIN i9s i ON i.id = r.i9_id
           JOIN employees e ON e.id = i.employee_id
           LEFT JOIN legal_entities l ON l.id = r.legal_entity_id
           WHERE r.id = $1"#,
        request_id,
        i32::from(recipient),
    )
    .fetch_optional(&ctx.pool)
    .await?;
    let Some(r) = row else {
        tracing::info!(request_id, %job_id, "revocation email not sent: the request is gone");
        return Ok(());
    };
    let Some(to) = r.to.clone() else {
        tracing::info!(request_id, recipient, %job_id, "revocation email not sent: the notification address was removed");
        return Ok(());
    };
    if r.cleared {
        tracing::info!(request_id, %job_id, "revocation email not sent: reverified meanwhile");
        return Ok(());
    }
    let email = compose(&r, &ctx.config.public_base_url, to, job_id)?;
    ctx.mailer.send(&email).await.map_err(JobError::Retryable)?;
    tracing::info!(request_id, recipient, %job_id, "revocation email sent");
    Ok(())
}

fn compose(r: &Request, base_url: &str, to: String, job_id: Uuid) -> Result<Email, JobError> {
    let employee = format!("{} {}", r.first_name, r.last_name);
    let due = wording::date(r.due_on, false);
    let text = RevocationText {
        employee: &employee,
        due: &due,
        employee_id: r.employee_id,
        profile_id: r.profile_id.as_deref(),
        i9_id: r.i9_id,
        api: base_url,
        employer: r.employer.as_deref().unwrap_or("Your organization"),
    };
    Ok(Email {
        to,
        subject: format!("Form I-9 reverification due {due}: EAD revoked: {employee}"),
        text: render(&text)?,
        html: render(&RevocationHtml { mail: &text })?,
        message_id: format!("<{job_id}@i9.invalid>"),
    })
}

/// The plain-text part (`workers/templates/revocation_email.txt`).
#[derive(Template)]
#[template(path = "revocation_email.txt")]
struct RevocationText<'a> {
    /// The employee's first and last name.
    employee: &'a str,
    /// The due date, written out.
    due: &'a str,
    /// The employee's record id, and the employer's own id for them.
    employee_id: i64,
    profile_id: Option<&'a str>,
    /// The I-9's record id.
    i9_id: i64,
    /// The API's base URL (`PUBLIC_BASE_URL`).
    api: &'a str,
    /// The legal entity's name, or "Your organization".
    employer: &'a str,
}

/// The HTML part (`workers/templates/revocation_email.html`), of the same values, escaped.
#[derive(Template)]
#[template(path = "revocation_email.html")]
struct RevocationHtml<'a> {
    mail: &'a RevocationText<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_email_names_the_due_date_and_the_step_and_escapes_the_html() {
        let r = Request {
            i9_id: 9,
            employee_id: 4,
            due_on: NaiveDate::from_ymd_opt(2026, 12, 9).unwrap(),
            cleared: false,
            first_name: "Zoë".into(),
            last_name: "<b>O'Neil</b>".into(),
            profile_id: None,
            to: None,
            employer: Some("Acme & Sons".into()),
        };
        let mail = compose(
            &r,
            "https://i9.example",
            "hr@acme.example".into(),
            Uuid::nil(),
        )
        .unwrap();
        assert_eq!(
            mail.subject,
            "Form I-9 reverification due December 9, 2026: EAD revoked: Zoë <b>O'Neil</b>"
        );
        assert!(mail
            .text
            .contains("POST https://i9.example/v1/i9s/9/reverify records the reverification"),);
        assert!(
            mail.text.contains(
                "POST https://i9.example/v1/i9s/9/complete first, if the I-9 is not Completed"
            ) && mail.html.contains("/v1/i9s/9/complete</code> first"),
            "{}",
            mail.text
        );
        assert!(
            mail.html.contains("Zoë &#60;b&#62;O&#39;Neil&#60;/b&#62;")
                && mail.html.contains("Acme &#38; Sons"),
            "{}",
            mail.html
        );
    }
}
