//! `send_remote_hire_email`: email a remote hire the Section 1 link of its
//! I-9, in English or Spanish (`languagePreference`).
//!
//! Reads `i9_requests` and `employees`; writes `processed_jobs` (the email
//! is sent once: [`super::claim`]).

use askama::Template;
use i9_common::{
    crypto::{DecryptError, Purpose},
    links,
};
use uuid::Uuid;

use super::{claim, render, JobError, JobResult};
use crate::{mailer::Email, Context};

pub const KIND: &str = "send_remote_hire_email";

pub async fn run(ctx: &Context, job_id: Uuid, request_id: Uuid) -> JobResult {
    if !claim::begin(&ctx.pool, job_id, KIND, claim::EMAIL_HOLD).await? {
        return Ok(());
    }
    let sent = send(ctx, job_id, request_id).await;
    claim::finish(&ctx.pool, job_id, KIND, sent).await
}

/// The employee a remote-hire email goes to, and the Section 1 link's token
/// (encrypted).
struct Recipient {
    section1_token_ciphertext: Vec<u8>,
    first_name: String,
    email_address: Option<String>,
    language_preference: Option<i16>,
}

async fn send(ctx: &Context, job_id: Uuid, request_id: Uuid) -> JobResult {
    let row = sqlx::query_as!(
        Recipient,
        "SELECT r.section1_token_ciphertext, e.first_name, e.email_address, e.language_preference
         FROM i9_requests r JOIN employees e ON e.id = r.employee_id WHERE r.id = $1",
        request_id,
    )
    .fetch_optional(&ctx.pool)
    .await?;
    let Some(Recipient {
        section1_token_ciphertext: token_ct,
        first_name,
        email_address: Some(to),
        language_preference: language,
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
    let (subject, intro, action) = if language == Some(2) {
        (
            "Complete la Sección 1 de su Formulario I-9",
            "Su empleador le pide completar y firmar la Sección 1 del Formulario I-9 antes de su primer día de trabajo.",
            "Abrir la Sección 1",
        )
    } else {
        (
            "Complete Section 1 of your Form I-9",
            "Your employer asks you to complete and sign Section 1 of Form I-9 by your first day of work.",
            "Open Section 1",
        )
    };
    let text = RemoteHireText {
        first_name: &first_name,
        intro,
        action,
        link: &link,
    };
    let email = Email {
        to,
        subject: subject.into(),
        text: render(&text)?,
        html: render(&RemoteHireHtml { mail: &text })?,
        message_id: format!("<{job_id}@i9.invalid>"),
    };
    ctx.mailer.send(&email).await.map_err(JobError::Retryable)?;
    tracing::info!(%request_id, %job_id, "remote-hire email sent");
    Ok(())
}

/// The plain-text part (`workers/templates/remote_hire_email.txt`).
#[derive(Template)]
#[template(path = "remote_hire_email.txt")]
struct RemoteHireText<'a> {
    first_name: &'a str,
    intro: &'a str,
    action: &'a str,
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

    #[test]
    fn the_text_is_as_written_and_the_html_escapes_the_values() {
        let text = RemoteHireText {
            first_name: "José <i>&</i>",
            intro: "Su empleador le pide completar y firmar la Sección 1.",
            action: "Abrir la Sección 1",
            link: "https://i9.example/i9/section1/s1_x?a=1&b=2",
        };
        assert_eq!(
            text.render().unwrap(),
            "José <i>&</i>,\n\nSu empleador le pide completar y firmar la Sección 1.\n\n\
             Abrir la Sección 1: https://i9.example/i9/section1/s1_x?a=1&b=2\n"
        );
        assert_eq!(
            RemoteHireHtml { mail: &text }.render().unwrap(),
            "<p>José &#60;i&#62;&#38;&#60;/i&#62;,</p><p>Su empleador le pide completar y firmar la Sección 1.</p>\
             <p><a href=\"https://i9.example/i9/section1/s1_x?a=1&#38;b=2\">Abrir la Sección 1</a></p>"
        );
    }
}
