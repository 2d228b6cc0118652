//! `send_login_email`: email a new employee sign-in its login name and a
//! one-time link to set a password. No password is ever sent.
//!
//! Reads `users`; writes `password_set_tokens` and `processed_jobs` (the
//! email is sent once: [`super::claim`]).

use chrono::Utc;
use i9_common::{
    crypto::{new_token, token_hash},
    links,
};
use uuid::Uuid;

use i9_common::html::escape;

use super::{claim, JobError, JobResult};
use crate::{mailer::Email, Context};

pub const KIND: &str = "send_login_email";

pub async fn run(ctx: &Context, job_id: Uuid, user_id: i64) -> JobResult {
    if !claim::begin(&ctx.pool, job_id, KIND, claim::EMAIL_HOLD).await? {
        return Ok(());
    }
    let sent = send(ctx, job_id, user_id).await;
    claim::finish(&ctx.pool, job_id, KIND, sent).await
}

async fn send(ctx: &Context, job_id: Uuid, user_id: i64) -> JobResult {
    let user: Option<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT login, first_name, email_address FROM users WHERE id = $1 AND NOT retired",
    )
    .bind(user_id)
    .fetch_optional(&ctx.pool)
    .await?;
    let Some((login, first_name, Some(to))) = user else {
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
    sqlx::query(
        "INSERT INTO password_set_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, $3)",
    )
    .bind(token_hash(&token))
    .bind(user_id)
    .bind(expires)
    .execute(&ctx.pool)
    .await?;
    let link = links::set_password(&ctx.config.public_base_url, &token);
    let hours = ctx.config.password_link_ttl.as_secs() / 3600;
    let email = Email {
        to,
        subject: "Your sign-in to the I-9 records service".into(),
        text: format!(
            "Hello {first_name},\n\nA sign-in was created for you.\n\nLogin: {login}\n\n\
             Choose your password here (the link works once, for {hours} hours):\n{link}\n\n\
             If you did not expect this email, ignore it.\n"
        ),
        html: format!(
            "<p>Hello {name},</p><p>A sign-in was created for you.</p><p>Login: <strong>{login_html}</strong></p>\
             <p><a href=\"{link_html}\">Choose your password</a> (the link works once, for {hours} hours).</p>\
             <p>If you did not expect this email, ignore it.</p>",
            name = escape(&first_name),
            login_html = escape(&login),
            link_html = escape(&link),
        ),
        message_id: format!("<{job_id}@i9.invalid>"),
    };
    ctx.mailer.send(&email).await.map_err(JobError::Retryable)?;
    tracing::info!(user_id, %job_id, "login email sent");
    Ok(())
}
