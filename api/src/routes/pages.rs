//! Web pages for employees (no API token): setting the password of a new
//! sign-in, and the Section 1 link. Server-rendered HTML from the templates
//! in `api/templates/` (askama: checked when built, every value escaped) that
//! works without JavaScript; labels, `lang` and error messages tied to their
//! fields. Their forms are read whole or not at all ([`crate::page_form`]).
//! What every employee page shares is here: the layout's style sheet and
//! rendering, the one-paragraph page, the language ([`Lang`], `?lang=`) and
//! the page of a link that does not work. The Section 1 form is
//! [`super::section1`], the employee's own page [`super::account`].

use askama::Template;
use axum::{
    extract::{
        rejection::{PathRejection, QueryRejection},
        Path, Query, State,
    },
    http::StatusCode,
    response::{Html, IntoResponse, Response},
};
use i9_common::{
    crypto::token_hash,
    domain::password::{self, Weakness, MAX_CHARS, MIN_CHARS},
    models::audit::{self, Actor, Entry},
};
use serde::Deserialize;

use crate::{
    error::ApiError,
    middleware::RequestId,
    page_form::{PageForm, Unreadable},
    page_security,
    state::AppState,
};

/// The language of an employee page (docs/api.md, "Web pages for employees").
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    En,
    Es,
}

impl Lang {
    /// Spanish for a `languagePreference` of 2, else English.
    pub(crate) fn of_preference(preference: Option<i16>) -> Self {
        if preference == Some(2) {
            Lang::Es
        } else {
            Lang::En
        }
    }

    pub(crate) fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Es => "es",
        }
    }

    pub(crate) fn other(self) -> Lang {
        match self {
            Lang::En => Lang::Es,
            Lang::Es => Lang::En,
        }
    }
}

/// A page's `?lang=`.
#[derive(Deserialize)]
pub struct LangQuery {
    /// `en` or `es`.
    lang: Option<String>,
}

/// The language asked for with `?lang=`; a query that cannot be read asks for none.
pub(crate) fn chosen(q: &Result<Query<LangQuery>, QueryRejection>, default: Lang) -> Lang {
    asked(q).unwrap_or(default)
}

/// The language `?lang=` asks for, if it asks for one.
pub(crate) fn asked(q: &Result<Query<LangQuery>, QueryRejection>) -> Option<Lang> {
    match q.as_ref().ok().and_then(|q| q.lang.as_deref()) {
        Some("es") => Some(Lang::Es),
        Some("en") => Some(Lang::En),
        _ => None,
    }
}

/// The pages' one style sheet, inline (`api/templates/base.html`): their
/// Content-Security-Policy allows it by its hash and nothing else
/// (`api/src/page_security.rs`).
pub(crate) const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;line-height:1.5}\
label{display:block;margin-top:1rem;font-weight:600}input,select{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box}\
.error{color:#a40000;font-weight:600}.hint{color:#444;margin:.2rem 0}\
.summary{border:2px solid #a40000;padding:.5rem 1rem;margin:1rem 0}fieldset{margin-top:1rem}\
fieldset label{font-weight:400}input[type=radio],input[type=checkbox]{width:auto}button{margin-top:1.5rem;font-size:1rem;padding:.5rem 1.2rem}";

/// A page (a template extending `base.html`) answered with `status` and its
/// Content-Security-Policy. A form on it may post to the page itself, and be
/// redirected on to `form_target`'s origin.
pub(crate) fn render(
    status: StatusCode,
    page: &impl Template,
    form_target: Option<&str>,
) -> Response {
    let html = match page.render() {
        Ok(html) => html,
        Err(e) => {
            return ApiError::Internal(anyhow::Error::new(e).context("rendering a page"))
                .into_response()
        }
    };
    let mut r = (status, Html(html)).into_response();
    r.headers_mut().insert(
        axum::http::header::CONTENT_SECURITY_POLICY,
        page_security::page_policy(STYLE, form_target),
    );
    r
}

/// A page of one paragraph (`api/templates/message.html`).
#[derive(Template)]
#[template(path = "message.html")]
pub(crate) struct Message {
    pub lang: &'static str,
    pub title: &'static str,
    pub text: &'static str,
}

/// A set-password token that is known, unused and unexpired: its user's login.
/// The user a set-password link is for: id, login, and what a password must
/// not lean on (login, names, email).
async fn password_token(state: &AppState, token: &str) -> Result<Option<TokenUser>, ApiError> {
    Ok(sqlx::query_as!(
        TokenUser,
        r#"SELECT u.id AS user_id, u.login,
                ARRAY_REMOVE(ARRAY[u.login, u.first_name, u.last_name, u.email_address], NULL)
                  AS "personal!",
                e.language_preference AS "language_preference?"
         FROM password_set_tokens t JOIN users u ON u.id = t.user_id
         LEFT JOIN employees e ON e.id = u.employee_id
         WHERE t.token_hash = $1 AND t.used_at IS NULL AND t.expires_at > now() AND NOT u.retired"#,
        token_hash(token),
    )
    .fetch_optional(&state.pool)
    .await?)
}

/// The user of a live set-password link: id, login, and what a password
/// must not be made of (login, names, email address).
struct TokenUser {
    user_id: i64,
    login: String,
    personal: Vec<String>,
    /// The employee's, for an employee's own sign-in.
    language_preference: Option<i16>,
}

/// The words of the set-password pages, in English and Spanish (the
/// employee's `languagePreference`, or `?lang=en|es`).
pub(crate) struct PasswordText {
    title: &'static str,
    /// Around the login, then around the least number of characters.
    intro: (&'static str, &'static str, &'static str),
    password: &'static str,
    confirm: &'static str,
    submit: &'static str,
    differ: &'static str,
    unusable: &'static str,
    done_title: &'static str,
    /// Before the sign-in link, its text, between it and the login, after.
    done: (&'static str, &'static str, &'static str, &'static str),
    busy_title: &'static str,
    busy: &'static str,
    other_lang: &'static str,
}

const PASSWORD_EN: PasswordText = PasswordText {
    title: "Set your password",
    intro: ("Your login is", ". Choose a password of at least", "characters."),
    password: "New password",
    confirm: "Repeat the password",
    submit: "Set password",
    differ: "The two passwords differ.",
    unusable: "This holds characters that cannot be used; type it again.",
    done_title: "Password set",
    done: ("Your password is set.", "Sign in", "as", "to complete the forms your employer asks you for."),
    busy_title: "Please try again",
    busy: "The service is busy right now. Go back and send the form again in a moment; your link still works.",
    other_lang: "Ver en español",
};

const PASSWORD_ES: PasswordText = PasswordText {
    title: "Elija su contraseña",
    intro: ("Su usuario es", ". Elija una contraseña de al menos", "caracteres."),
    password: "Contraseña nueva",
    confirm: "Repita la contraseña",
    submit: "Guardar la contraseña",
    differ: "Las dos contraseñas no coinciden.",
    unusable: "Contiene caracteres que no se pueden usar; escríbala de nuevo.",
    done_title: "Contraseña guardada",
    done: ("Su contraseña está guardada.", "Inicie sesión", "como", "para completar los formularios que su empleador le pida."),
    busy_title: "Inténtelo de nuevo",
    busy: "El servicio está ocupado. Vuelva atrás y envíe el formulario de nuevo en un momento; su enlace sigue funcionando.",
    other_lang: "View in English",
};

fn password_text(lang: Lang) -> &'static PasswordText {
    match lang {
        Lang::En => &PASSWORD_EN,
        Lang::Es => &PASSWORD_ES,
    }
}

/// Why a password is refused, in `lang` (zxcvbn's advice is English only,
/// so the Spanish page gives the rule without it).
fn weakness(w: &Weakness, lang: Lang) -> String {
    match (lang, w) {
        (Lang::En, w) => w.to_string(),
        (Lang::Es, Weakness::TooShort) => {
            format!("La contraseña necesita al menos {MIN_CHARS} caracteres.")
        }
        (Lang::Es, Weakness::TooLong) => {
            format!("La contraseña puede tener como máximo {MAX_CHARS} caracteres.")
        }
        (Lang::Es, Weakness::Guessable(_)) => "Esta contraseña es demasiado fácil de adivinar. \
             Unas cuantas palabras sin relación entre sí forman una buena contraseña."
            .to_owned(),
    }
}

pub(crate) fn invalid_link() -> Response {
    invalid_link_in(Lang::En)
}

/// The page of a link that does not work, in `lang` (the `?lang=` of a
/// link whose employee is unknown).
pub(crate) fn invalid_link_in(lang: Lang) -> Response {
    let page = match lang {
        Lang::En => Message {
            lang: "en",
            title: "This link does not work",
            text: "The link is wrong, was already used, or has expired. Ask your employer for a new one.",
        },
        Lang::Es => Message {
            lang: "es",
            title: "Este enlace no funciona",
            text: "El enlace es incorrecto, ya se usó o venció. Pida uno nuevo a su empleador.",
        },
    };
    render(StatusCode::NOT_FOUND, &page, None)
}

/// A page's form that could not be read ([`crate::page_form`]), in `lang`
/// (`en` or `es`): the employee goes back and sends it again.
pub(crate) fn unreadable_form(why: Unreadable, lang: &str) -> Response {
    let page = if lang == "es" {
        Message {
            lang: "es",
            title: "No se pudo leer el formulario",
            text: "Su navegador envió el formulario de una forma que esta página no puede leer. \
                   Vuelva atrás y envíelo de nuevo; su enlace sigue funcionando.",
        }
    } else {
        Message {
            lang: "en",
            title: "The form could not be read",
            text: "Your browser sent the form in a way this page cannot read. \
                   Go back and send it again; your link still works.",
        }
    };
    render(why.status(), &page, None)
}

/// Every hashing turn stayed taken: the form is not lost, the employee
/// sends it again (the link still works).
fn busy(lang: Lang) -> Response {
    crate::overload::shed(crate::overload::SET_PASSWORD);
    let t = password_text(lang);
    let page = Message {
        lang: lang.code(),
        title: t.busy_title,
        text: t.busy,
    };
    let mut response = render(StatusCode::SERVICE_UNAVAILABLE, &page, None);
    response.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("5"),
    );
    response
}

/// The set-password form (`api/templates/set_password.html`).
#[derive(Template)]
#[template(path = "set_password.html")]
struct PasswordPage<'a> {
    lang: &'static str,
    other: &'static str,
    title: &'static str,
    t: &'static PasswordText,
    login: &'a str,
    min_chars: usize,
    password_error: Option<&'a str>,
    confirm_error: Option<&'a str>,
}

impl<'a> PasswordPage<'a> {
    fn new(lang: Lang, login: &'a str) -> Self {
        let t = password_text(lang);
        Self {
            lang: lang.code(),
            other: lang.other().code(),
            title: t.title,
            t,
            login,
            min_chars: MIN_CHARS,
            password_error: None,
            confirm_error: None,
        }
    }
}

/// The set-password page once it is done (`api/templates/password_set.html`).
#[derive(Template)]
#[template(path = "password_set.html")]
struct PasswordSet<'a> {
    lang: &'static str,
    title: &'static str,
    t: &'static PasswordText,
    login: &'a str,
}

/// What the set-password form sends.
#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PasswordForm {
    password: String,
    confirm: String,
}

pub async fn set_password_form(
    State(state): State<AppState>,
    token: Result<Path<String>, PathRejection>,
    q: Result<Query<LangQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Ok(Path(token)) = token else {
        return Ok(invalid_link());
    };
    match password_token(&state, &token).await? {
        Some(TokenUser {
            login,
            language_preference,
            ..
        }) => {
            let lang = chosen(&q, Lang::of_preference(language_preference));
            Ok(render(
                StatusCode::OK,
                &PasswordPage::new(lang, &login),
                None,
            ))
        }
        None => Ok(invalid_link_in(chosen(&q, Lang::En))),
    }
}

pub async fn set_password(
    State(state): State<AppState>,
    RequestId(request_id): RequestId,
    token: Result<Path<String>, PathRejection>,
    q: Result<Query<LangQuery>, QueryRejection>,
    form: Result<PageForm<PasswordForm>, Unreadable>,
) -> Result<Response, ApiError> {
    let Ok(Path(token)) = token else {
        return Ok(invalid_link());
    };
    let Some(TokenUser {
        user_id,
        login,
        personal,
        language_preference,
    }) = password_token(&state, &token).await?
    else {
        return Ok(invalid_link_in(chosen(&q, Lang::En)));
    };
    let lang = chosen(&q, Lang::of_preference(language_preference));
    let t = password_text(lang);
    let PasswordForm { password, confirm } = match form {
        Ok(PageForm(form)) => form,
        Err(why) => return Ok(unreadable_form(why, lang.code())),
    };
    // With NUL: a password nobody could sign in with (text.rs).
    let refusal;
    let mut page = PasswordPage::new(lang, &login);
    if crate::text::check(&password).is_err() {
        page.password_error = Some(t.unusable);
    }
    if crate::text::check(&confirm).is_err() {
        page.confirm_error = Some(t.unusable);
    }
    if page.password_error.is_none() && page.confirm_error.is_none() {
        let personal: Vec<&str> = personal.iter().map(String::as_str).collect();
        if let Err(w) = password::check(&password, &personal) {
            refusal = weakness(&w, lang);
            page.password_error = Some(&refusal);
        }
        if confirm != password {
            page.confirm_error = Some(t.differ);
        }
    }
    if page.password_error.is_some() || page.confirm_error.is_some() {
        return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page, None));
    }
    // Hashing waits its turn with the token endpoint's (api/src/hashing.rs).
    let Ok(turn) = state.hashing.turn().await else {
        return Ok(busy(lang));
    };
    let hash = turn
        .hash(password)
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    let mut tx = state.pool.begin().await?;
    let used = sqlx::query!(
        "UPDATE password_set_tokens SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL",
        token_hash(&token),
    )
    .execute(&mut *tx)
    .await?;
    if used.rows_affected() == 0 {
        return Ok(invalid_link());
    }
    sqlx::query!(
        "UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1",
        user_id,
        &hash,
    )
    .execute(&mut *tx)
    .await?;
    // A new password ends the sign-in's sessions on the employee's page
    // (docs/api.md, "The employee's own page").
    sqlx::query!("DELETE FROM account_sessions WHERE user_id = $1", user_id)
        .execute(&mut *tx)
        .await?;
    // The user acts on the page, through no client.
    let actor = Actor {
        user_id: Some(user_id),
        client_id: None,
        request_id,
    };
    audit::record(
        &mut *tx,
        &actor,
        Entry::new("password.set", "user", user_id),
    )
    .await?;
    tx.commit().await?;
    let done = PasswordSet {
        lang: lang.code(),
        title: t.done_title,
        t,
        login: &login,
    };
    Ok(render(StatusCode::OK, &done, None))
}
