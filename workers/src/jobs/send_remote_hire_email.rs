//! `send_remote_hire_email`: email a remote hire the Section 1 link of its
//! I-9, in English or Spanish (`languagePreference`), naming the employer,
//! when Section 1 is due and when the link expires (docs/api.md, "Emails").
//!
//! Reads `i9_requests`, `employees`, `legal_entities` and `i9s`; writes `processed_jobs` (the email
//! is sent once: [`super::claim`]).

use askama::Template;
use chrono::{DateTime, NaiveDate, Utc};
use i9_common::{
    crypto::{DecryptError, Purpose},
    links,
};
use uuid::Uuid;

use super::{claim, render, JobError, JobResult};
use crate::{mailer::Email, wording, Context};

pub const KIND: &str = "send_remote_hire_email";

pub async fn run(ctx: &Context, job_id: Uuid, request_id: Uuid) -> JobResult {
    if !claim::begin(&ctx.pool, job_id, KIND, claim::EMAIL_HOLD).await? {
        return Ok(());
    }
    let sent = send(ctx, job_id, request_id).await;
    claim::finish(&ctx.pool, job_id, KIND, sent).await
}

/// The employee a remote-hire email goes to, its employer, when Section 1
/// is due, and the Section 1 link's token (encrypted) and expiry.
struct Recipient {
    section1_token_ciphertext: Vec<u8>,
    section1_expires_at: DateTime<Utc>,
    first_name: String,
    email_address: Option<String>,
    language_preference: Option<i16>,
    employer: Option<String>,
    start_date: Option<NaiveDate>,
}

async fn send(ctx: &Context, job_id: Uuid, request_id: Uuid) -> JobResult {
    // Section 1 is due by the first day of work: the I-9's start date (the
    // I-9 exists before its email is queued: create_i9.rs).
    let row = sqlx::query_as!(
        Recipient,
        r#"SELECT r.section1_token_ciphertext, r.section1_expires_at, e.first_name, e.email_address,
                  e.language_preference, l.entity_name AS "employer?", i.start_date AS "start_date?"
           FROM i9_requests r JOIN employees e ON e.id = r.employee_id
           LEFT JOIN legal_entities l ON l.id = e.legal_entity_id
           LEFT JOIN i9s i ON i.id = r.i9_id
           WHERE r.id = $1"#,
        request_id,
    )
    .fetch_optional(&ctx.pool)
    .await?;
    let Some(Recipient {
        section1_token_ciphertext: token_ct,
        section1_expires_at: expires,
        first_name,
        email_address: Some(to),
        language_preference: language,
        employer,
        start_date,
    }) = row
    else {
        return Err(JobError::Fatal(anyhow::anyhow!(
            "I-9 request {request_id} is gone or its employee has no email address"
        )));
    };
    let token = ctx
        .cipher
        .decrypt(Purpose::Section1Token, &token_ct)
        .and_then(|b| String::from_utf8(b).map_err(|_| DecryptError::Invalid))
        .map_err(|e| {
            JobError::from(e).context(format!("the Section 1 token of request {request_id}"))
        })?;
    let link = links::section1(&ctx.config.public_base_url, &token);
    let spanish = language == Some(2);
    // Mid-sentence, an employer without a legal entity is "your employer".
    let asked = employer.clone().unwrap_or_else(|| {
        if spanish {
            "su empleador"
        } else {
            "your employer"
        }
        .to_owned()
    });
    let employer = employer.unwrap_or_else(|| {
        if spanish {
            "Su empleador"
        } else {
            "Your employer"
        }
        .to_owned()
    });
    let subject = if spanish {
        format!("{employer}: complete la Sección 1 de su Formulario I-9")
    } else {
        format!("{employer}: complete Section 1 of your Form I-9")
    };
    let text = RemoteHireText {
        spanish,
        first_name: &first_name,
        employer: &employer,
        asked: &asked,
        due: start_date.map(|d| wording::date(d, spanish)),
        expires: wording::moment(expires, spanish),
        link: &link,
    };
    let email = Email {
        to,
        subject,
        text: render(&text)?,
        html: render(&RemoteHireHtml { mail: &text })?,
        message_id: format!("<{job_id}@i9.invalid>"),
    };
    ctx.mailer.send(&email).await.map_err(JobError::Retryable)?;
    tracing::info!(%request_id, %job_id, "remote-hire email sent");
    Ok(())
}

/// The plain-text part (`workers/templates/remote_hire_email.txt`), in
/// English or Spanish.
#[derive(Template)]
#[template(path = "remote_hire_email.txt")]
struct RemoteHireText<'a> {
    spanish: bool,
    first_name: &'a str,
    /// The legal entity's name, or "Your employer".
    employer: &'a str,
    /// The same mid-sentence: the legal entity's name, or "your employer".
    asked: &'a str,
    /// The first day of work, written out, when known.
    due: Option<String>,
    /// When the link stops working, written out.
    expires: String,
    link: &'a str,
}

/// The HTML part (`workers/templates/remote_hire_email.html`), of the same values, escaped.
#[derive(Template)]
#[template(path = "remote_hire_email.html")]
struct RemoteHireHtml<'a> {
    mail: &'a RemoteHireText<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(spanish: bool, due: Option<&str>) -> RemoteHireText<'static> {
        RemoteHireText {
            spanish,
            first_name: "José <i>&</i>",
            employer: "Acme & Sons",
            asked: "Acme & Sons",
            due: due.map(str::to_owned),
            expires: "December 15, 2026 at 09:05 UTC".into(),
            link: "https://i9.example/i9/section1/s1_x?a=1&b=2",
        }
    }

    #[test]
    fn the_text_is_as_written_and_the_html_escapes_the_values() {
        let text = mail(false, Some("December 1, 2026"));
        assert_eq!(
            text.render().unwrap(),
            "Hello José <i>&</i>,\n\nAcme & Sons asks you to complete and sign Section 1 of Form I-9 \
             (employment eligibility verification) by December 1, 2026, your first day of work.\n\n\
             Open Section 1: https://i9.example/i9/section1/s1_x?a=1&b=2\n\n\
             The link is yours alone and works until December 15, 2026 at 09:05 UTC. \
             If it no longer works, ask Acme & Sons for a new one.\n"
        );
        assert_eq!(
            RemoteHireHtml { mail: &text }.render().unwrap(),
            "<p>Hello José &#60;i&#62;&#38;&#60;/i&#62;,</p><p>Acme &#38; Sons asks you to complete and sign \
             Section 1 of Form I-9 (employment eligibility verification) by <strong>December 1, 2026</strong>, \
             your first day of work.</p><p><a href=\"https://i9.example/i9/section1/s1_x?a=1&#38;b=2\">Open Section 1</a></p>\
             <p>The link is yours alone and works until December 15, 2026 at 09:05 UTC. \
             If it no longer works, ask Acme &#38; Sons for a new one.</p>"
        );
    }

    #[test]
    fn spanish_and_no_start_date() {
        let text = mail(true, None).render().unwrap();
        assert!(
            text.starts_with(
                "Hola José <i>&</i>:\n\nAcme & Sons le pide completar y firmar la Sección 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("a más tardar en su primer día de trabajo."),
            "{text}"
        );
        assert!(text.contains("Abrir la Sección 1: https://"), "{text}");
        let html = RemoteHireHtml {
            mail: &mail(true, Some("1 de diciembre de 2026")),
        }
        .render()
        .unwrap();
        assert!(
            html.contains("a más tardar el <strong>1 de diciembre de 2026</strong>"),
            "{html}"
        );
    }
}
