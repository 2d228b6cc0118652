//! Web pages for employees (no API token): setting the password of a new
//! sign-in, and the Section 1 link. Server-rendered HTML that works without
//! JavaScript; labels, `lang` and error messages tied to their fields.

use axum::{
    body::Bytes,
    extract::{rejection::PathRejection, Path, State},
    http::StatusCode,
    response::{Html, IntoResponse, Response},
};
use i9_common::{
    crypto::token_hash,
    domain::password::{self, MIN_CHARS},
};

use i9_common::html::escape;

use crate::{error::ApiError, middleware::RequestId, page_security, state::AppState};

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    page_lang(status, "en", title, body, None)
}

/// The pages' one style sheet, inline: their Content-Security-Policy allows
/// it by its hash and nothing else (`api/src/page_security.rs`).
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;line-height:1.5}\
label{display:block;margin-top:1rem;font-weight:600}input{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box}\
.error{color:#a40000;font-weight:600}.hint{color:#444;margin:.2rem 0}\
.summary{border:2px solid #a40000;padding:.5rem 1rem;margin:1rem 0}fieldset{margin-top:1rem}\
fieldset label{font-weight:400}input[type=radio],input[type=checkbox]{width:auto}button{margin-top:1.5rem;font-size:1rem;padding:.5rem 1.2rem}";

/// A page in `lang` (`en` or `es`). A form on it may post to the page itself,
/// and be redirected on to `form_target`'s origin.
pub(crate) fn page_lang(
    status: StatusCode,
    lang: &str,
    title: &str,
    body: &str,
    form_target: Option<&str>,
) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"{lang}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>{t}</title><style>{STYLE}</style>\
         </head><body><main><h1>{t}</h1>{body}</main></body></html>",
        t = escape(title)
    );
    let mut r = (status, Html(html)).into_response();
    r.headers_mut().insert(
        axum::http::header::CONTENT_SECURITY_POLICY,
        page_security::page_policy(STYLE, form_target),
    );
    r
}

/// A set-password token that is known, unused and unexpired: its user's login.
/// The user a set-password link is for: id, login, and what a password must
/// not lean on (login, names, email).
async fn password_token(
    state: &AppState,
    token: &str,
) -> Result<Option<(i64, String, Vec<String>)>, ApiError> {
    Ok(sqlx::query_as(
        "SELECT u.id, u.login,
                ARRAY_REMOVE(ARRAY[u.login, u.first_name, u.last_name, u.email_address], NULL)
         FROM password_set_tokens t JOIN users u ON u.id = t.user_id
         WHERE t.token_hash = $1 AND t.used_at IS NULL AND t.expires_at > now() AND NOT u.retired",
    )
    .bind(token_hash(token))
    .fetch_optional(&state.pool)
    .await?)
}

pub(crate) fn invalid_link() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "This link does not work",
        "<p>The link is wrong, was already used, or has expired. Ask your employer for a new one.</p>",
    )
}

/// Every hashing turn stayed taken: the form is not lost, the employee
/// sends it again (the link still works).
fn busy() -> Response {
    crate::overload::shed(crate::overload::SET_PASSWORD);
    let mut response = page(
        StatusCode::SERVICE_UNAVAILABLE,
        "Please try again",
        "<p>The service is busy right now. Go back and send the form again in a moment; your link still works.</p>",
    );
    response.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("5"),
    );
    response
}

fn password_form(login: &str, errors: &[(&str, &str)]) -> String {
    let err = |field: &str| {
        errors
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, m)| format!("<p class=\"error\" id=\"{field}-error\">{}</p>", escape(m)))
            .unwrap_or_default()
    };
    let described = |field: &str| {
        if errors.iter().any(|(f, _)| *f == field) {
            format!(" aria-invalid=\"true\" aria-describedby=\"{field}-error\"")
        } else {
            String::new()
        }
    };
    format!(
        "<p>Your login is <strong>{login}</strong>. Choose a password of at least {MIN_CHARS} characters.</p>\
         <form method=\"post\">\
         <label for=\"password\">New password</label>\
         <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"new-password\" required minlength=\"{MIN_CHARS}\"{d1}>{e1}\
         <label for=\"confirm\">Repeat the password</label>\
         <input id=\"confirm\" name=\"confirm\" type=\"password\" autocomplete=\"new-password\" required{d2}>{e2}\
         <button type=\"submit\">Set password</button></form>",
        login = escape(login),
        d1 = described("password"),
        e1 = err("password"),
        d2 = described("confirm"),
        e2 = err("confirm"),
    )
}

pub async fn set_password_form(
    State(state): State<AppState>,
    token: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Ok(Path(token)) = token else {
        return Ok(invalid_link());
    };
    match password_token(&state, &token).await? {
        Some((_, login, _)) => Ok(page(
            StatusCode::OK,
            "Set your password",
            &password_form(&login, &[]),
        )),
        None => Ok(invalid_link()),
    }
}

pub async fn set_password(
    State(state): State<AppState>,
    RequestId(request_id): RequestId,
    token: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let Ok(Path(token)) = token else {
        return Ok(invalid_link());
    };
    let Some((user_id, login, personal)) = password_token(&state, &token).await? else {
        return Ok(invalid_link());
    };
    let (form, unreadable) = crate::text::decode_form(&body);
    let get = |k: &str| {
        form.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    let (password, confirm) = (get("password").to_owned(), get("confirm"));
    // Not UTF-8, or with NUL: a password nobody could sign in with (text.rs).
    let mut errors: Vec<(&str, String)> = ["password", "confirm"]
        .into_iter()
        .filter(|field| unreadable.iter().any(|u| u.field == *field))
        .map(|field| {
            (
                field,
                "This holds characters that cannot be used; type it again.".to_owned(),
            )
        })
        .collect();
    if errors.is_empty() {
        let personal: Vec<&str> = personal.iter().map(String::as_str).collect();
        if let Err(weakness) = password::check(&password, &personal) {
            errors.push(("password", weakness.to_string()));
        }
        if confirm != password {
            errors.push(("confirm", "The two passwords differ.".to_owned()));
        }
    }
    if !errors.is_empty() {
        let errors: Vec<(&str, &str)> = errors.iter().map(|(f, m)| (*f, m.as_str())).collect();
        return Ok(page(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Set your password",
            &password_form(&login, &errors),
        ));
    }
    // Hashing waits its turn with the token endpoint's (api/src/hashing.rs).
    let Ok(turn) = state.hashing.turn().await else {
        return Ok(busy());
    };
    let hash = turn
        .hash(password)
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    let mut tx = state.pool.begin().await?;
    let used = sqlx::query(
        "UPDATE password_set_tokens SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL",
    )
    .bind(token_hash(&token))
    .execute(&mut *tx)
    .await?;
    if used.rows_affected() == 0 {
        return Ok(invalid_link());
    }
    sqlx::query("UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1")
        .bind(user_id)
        .bind(&hash)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO audit_log (user_id, action, resource_type, resource_id, request_id) VALUES ($1, 'password.set', 'user', $2, $3)",
    )
    .bind(user_id)
    .bind(user_id.to_string())
    .bind(&request_id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(page(
        StatusCode::OK,
        "Password set",
        &format!(
            "<p>Your password is set. Sign in as <strong>{}</strong>.</p>",
            escape(&login)
        ),
    ))
}
