//! `send_login_email`: email a new employee sign-in its login name, a
//! one-time link to set a password and where to sign in then, naming the
//! employer and when the link expires, in the employee's language
//! (docs/api.md, "Emails"). No password is ever sent.
//!
//! Reads `users`, `employees` and `legal_entities`; writes `password_set_tokens` and `processed_jobs` (the
//! email is sent once: [`super::claim`]).

use askama::Template;
use chrono::Utc;
use i9_common::{
    crypto::{new_token, token_hash},
    links,
};
use uuid::Uuid;

use super::{claim, render, JobError, JobResult};
use crate::{mailer::Email, wording, Context};

pub const KIND: &str = "send_login_email";

pub async fn run(ctx: &Context, job_id: Uuid, user_id: i64) -> JobResult {
    if !claim::begin(&ctx.pool, job_id, KIND, claim::EMAIL_HOLD).await? {
        return Ok(());
    }
    let sent = send(ctx, job_id, user_id).await;
    claim::finish(&ctx.pool, job_id, KIND, sent).await
}

/// The user a login email goes to, and the language of its employee record
/// (an employee's own sign-in; other users have none).
struct Recipient {
    login: String,
    first_name: String,
    email_address: Option<String>,
    language_preference: Option<i16>,
    /// The employee's legal entity's name.
    employer: Option<String>,
    /// The first day of work of the current period, when a Section 1 of the
    /// employee waits (its due date).
    section1_due: Option<chrono::NaiveDate>,
}

async fn send(ctx: &Context, job_id: Uuid, user_id: i64) -> JobResult {
    let user = sqlx::query_as!(
        Recipient,
        r#"SELECT u.login, u.first_name, u.email_address,
                  e.language_preference AS "language_preference?", l.entity_name AS "employer?",
                  CASE WHEN EXISTS (
                      SELECT 1 FROM i9_requests r LEFT JOIN i9s i ON i.id = r.i9_id
                      WHERE r.employee_id = e.id AND r.section1_used_at IS NULL
                        AND (i.id IS NULL OR i.status = 'Section 1 Incomplete'))
                  THEN (SELECT p.start_date FROM employment_periods p WHERE p.employee_id = e.id
                        ORDER BY p.id DESC LIMIT 1) END AS "section1_due?"
           FROM users u LEFT JOIN employees e ON e.id = u.employee_id
           LEFT JOIN legal_entities l ON l.id = e.legal_entity_id
           WHERE u.id = $1 AND NOT u.retired"#,
        user_id,
    )
    .fetch_optional(&ctx.pool)
    .await?;
    let Some(Recipient {
        login,
        first_name,
        email_address: Some(to),
        language_preference: language,
        employer,
        section1_due,
    }) = user
    else {
        return Err(JobError::Fatal(anyhow::anyhow!(
            "user {user_id} is gone, retired or has no email address"
        )));
    };
    // A fresh one-time token each attempt; earlier unused ones of this job's
    // attempts stay valid until they expire.
    let token = new_token("pw_");
    let expires = Utc::now()
        + chrono::Duration::from_std(ctx.config.password_link_ttl)
            .unwrap_or(chrono::Duration::hours(72));
    sqlx::query!(
        "INSERT INTO password_set_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, $3)",
        token_hash(&token),
        user_id,
        expires,
    )
    .execute(&ctx.pool)
    .await?;
    let link = links::set_password(&ctx.config.public_base_url, &token);
    let spanish = language == Some(2);
    let employer = employer.unwrap_or_else(|| {
        if spanish {
            "Su empleador"
        } else {
            "Your employer"
        }
        .to_owned()
    });
    let text = LoginText {
        spanish,
        first_name: &first_name,
        employer: &employer,
        login: &login,
        link: &link,
        expires: wording::moment(expires, spanish),
        due: section1_due.map(|d| wording::date(d, spanish)),
        sign_in: &links::sign_in(&ctx.config.public_base_url, spanish),
    };
    let email = Email {
        to,
        subject: if spanish {
            format!("{employer}: su acceso para completar sus formularios de empleo")
        } else {
            format!("{employer}: your sign-in to complete your employment forms")
        },
        text: render(&text)?,
        html: render(&LoginHtml { mail: &text })?,
        message_id: format!("<{job_id}@i9.invalid>"),
    };
    ctx.mailer.send(&email).await.map_err(JobError::Retryable)?;
    tracing::info!(user_id, %job_id, "login email sent");
    Ok(())
}

/// The plain-text part (`workers/templates/login_email.txt`).
#[derive(Template)]
#[template(path = "login_email.txt")]
struct LoginText<'a> {
    /// `languagePreference` 2 of the employee the sign-in is for.
    spanish: bool,
    first_name: &'a str,
    /// The legal entity's name, or "Your employer".
    employer: &'a str,
    login: &'a str,
    link: &'a str,
    /// When the link stops working, written out (UTC).
    expires: String,
    /// The first day of work, written out: Section 1 is due then.
    due: Option<String>,
    /// Where the employee signs in once the password is set.
    sign_in: &'a str,
}

/// The HTML part (`workers/templates/login_email.html`), of the same values, escaped.
#[derive(Template)]
#[template(path = "login_email.html")]
struct LoginHtml<'a> {
    mail: &'a LoginText<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_as_written_and_the_html_escapes_the_values() {
        let text = LoginText {
            spanish: false,
            first_name: "Zoë <b>O'Neil</b>",
            employer: "Acme & Sons",
            login: "zoe&co@mail.example",
            link: "https://i9.example/account/set-password/pw_x?a=1&b=2",
            expires: "November 27, 2026 at 16:00 UTC".into(),
            due: None,
            sign_in: "https://i9.example/account/sign-in?lang=en",
        };
        assert_eq!(
            text.render().unwrap(),
            "Hello Zoë <b>O'Neil</b>,\n\nAcme & Sons created a sign-in for you, to complete your employment forms.\n\n\
             Login: zoe&co@mail.example\n\n\
             Choose your password here (the link works once, until November 27, 2026 at 16:00 UTC):\n\
             https://i9.example/account/set-password/pw_x?a=1&b=2\n\n\
             Then sign in here to complete the forms your employer asks you for:\n\
             https://i9.example/account/sign-in?lang=en\n\n\
             If you did not expect this email, ignore it.\n"
        );
        assert_eq!(
            LoginHtml { mail: &text }.render().unwrap(),
            "<p>Hello Zoë &#60;b&#62;O&#39;Neil&#60;/b&#62;,</p>\
             <p>Acme &#38; Sons created a sign-in for you, to complete your employment forms.</p>\
             <p>Login: <strong>zoe&#38;co@mail.example</strong></p>\
             <p><a href=\"https://i9.example/account/set-password/pw_x?a=1&#38;b=2\">Choose your password</a> \
             (the link works once, until November 27, 2026 at 16:00 UTC).</p><p>Then <a href=\"https://i9.example/account/sign-in?lang=en\">sign in</a> \
             to complete the forms your employer asks you for: https://i9.example/account/sign-in?lang=en</p>\
             <p>If you did not expect this email, ignore it.</p>"
        );
    }
}
