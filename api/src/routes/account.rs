//! The employee's own page (docs/api.md, "The employee's own page"): an
//! employee signs in with the login set through `createLogin` and
//! `sendLoginEmail`, sees the forms waiting for them, and completes their
//! Section 1 there (the same form as the link's, [`super::section1`]).
//! Server-rendered, English or Spanish, no JavaScript.
//!
//! - `GET`/`POST /account/sign-in`: the sign-in form. Its password checks
//!   are the token endpoint's ([`crate::sign_in`]): throttled per login and
//!   per address, under the bounded hashing turns.
//! - `GET /account`: the forms of the signed-in employee.
//! - `GET`/`POST /account/i9s/{id}/section1`: Section 1 of one of them.
//! - `POST /account/sign-out`.
//!
//! A session is a random secret in an `HttpOnly`, `SameSite=Strict` cookie
//! (`Secure` when `PUBLIC_BASE_URL` is https), stored only as its SHA-256;
//! it ends after [`IDLE`] without a page, after [`LONGEST`], on signing out,
//! or when its user is retired. Every form of a session carries a token
//! derived from its secret, which a page of another site cannot know.

use askama::Template;
use axum::{
    extract::{
        rejection::{PathRejection, QueryRejection},
        Path, Query, State,
    },
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use chrono::NaiveDate;
use cookie::{Cookie, SameSite};
use i9_common::{
    crypto::{new_token, token_hash},
    domain::I9Status,
};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{
    pages::{asked, chosen, render, unreadable_form, Lang, LangQuery, Message},
    section1::{self, Holder, SignForm},
};
use crate::{
    client_address::ClientAddress,
    error::ApiError,
    middleware::RequestId,
    page_form::{PageForm, Unreadable},
    sign_in::{check_password, Checked, Keys, Refused},
    state::AppState,
};

/// The session cookie's name.
pub const COOKIE: &str = "i9_account";
/// A session ends after this long without a page.
pub const IDLE: std::time::Duration = std::time::Duration::from_secs(30 * 60);
/// A session ends this long after signing in, whatever its use.
pub const LONGEST: std::time::Duration = std::time::Duration::from_secs(12 * 3600);
/// The route of the sign-in page, as metrics name a shed request.
pub const SIGN_IN_ROUTE: &str = "/account/sign-in";

/// A signed-in employee.
pub(crate) struct Session {
    /// The sign-in (`users.id`).
    pub user_id: i64,
    /// The employee it belongs to.
    pub employee_id: i64,
    pub login: String,
    pub language_preference: Option<i16>,
    /// The cookie's secret.
    secret: String,
}

impl Session {
    /// The session of the request's cookie, if it is live (and then seen now).
    async fn of(state: &AppState, headers: &HeaderMap) -> Result<Option<Self>, ApiError> {
        let Some(secret) = cookie_secret(headers) else {
            return Ok(None);
        };
        let row = sqlx::query!(
            r#"UPDATE account_sessions s SET last_seen_at = now()
               FROM users u JOIN employees e ON e.id = u.employee_id
               WHERE s.token_hash = $1 AND u.id = s.user_id AND NOT u.retired
                 AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => $2)
               RETURNING s.user_id, e.id AS employee_id, u.login, e.language_preference"#,
            token_hash(&secret),
            IDLE.as_secs_f64(),
        )
        .fetch_optional(&state.pool)
        .await?;
        Ok(row.map(|r| Session {
            user_id: r.user_id,
            employee_id: r.employee_id,
            login: r.login,
            language_preference: r.language_preference,
            secret,
        }))
    }

    /// The token the session's forms carry: derived from the secret, so
    /// only a page the session was shown can have it.
    pub fn csrf(&self) -> String {
        URL_SAFE_NO_PAD.encode(Sha256::digest(format!("form:{}", self.secret)))
    }

    /// Whether a form's token is this session's (compared by their hashes,
    /// so the comparison's time says nothing of the token).
    pub fn csrf_matches(&self, given: &str) -> bool {
        Sha256::digest(given.as_bytes()) == Sha256::digest(self.csrf().as_bytes())
    }

    fn lang(&self, q: &Result<Query<LangQuery>, QueryRejection>) -> Lang {
        chosen(q, Lang::of_preference(self.language_preference))
    }
}

/// The secret of the request's session cookie, if it sends one.
fn cookie_secret(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == COOKIE)
        .map(|c| c.value().to_owned())
        .filter(|v| !v.is_empty())
}

/// The `Set-Cookie` of a session (`Some(secret)`) or of its end (`None`).
fn set_cookie(state: &AppState, secret: Option<&str>) -> HeaderValue {
    let mut c = Cookie::build((COOKIE, secret.unwrap_or_default().to_owned()))
        .path("/account")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.config.public_base_url.starts_with("https://"));
    c = match secret {
        Some(_) => c.max_age(cookie::time::Duration::seconds(LONGEST.as_secs() as i64)),
        None => c.max_age(cookie::time::Duration::ZERO),
    };
    HeaderValue::from_str(&c.build().to_string()).unwrap_or(HeaderValue::from_static(""))
}

/// `303` to `path` in `lang` (without `?lang=`: the employee's own
/// language), with `cookie` set when given.
fn see_other(path: &str, lang: impl Into<Option<Lang>>, cookie: Option<HeaderValue>) -> Response {
    let location = match lang.into() {
        Some(lang) => format!("{path}?lang={}", lang.code()),
        None => path.to_owned(),
    };
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    if let Some(c) = cookie {
        r.headers_mut().insert(header::SET_COOKIE, c);
    }
    r
}

/// A form of the employee's page that is not waiting for them (`404`).
pub(crate) fn not_waiting(lang: Lang) -> Response {
    let t = text(lang);
    let page = Message {
        lang: lang.code(),
        title: t.home,
        text: t.not_waiting,
    };
    render(StatusCode::NOT_FOUND, &page, None)
}

/// A form posted without its session's token (`400`): from another site,
/// or from a page of an earlier sign-in.
pub(crate) fn stale_form(lang: Lang) -> Response {
    let t = text(lang);
    let page = Message {
        lang: lang.code(),
        title: t.stale_title,
        text: t.stale,
    };
    render(StatusCode::BAD_REQUEST, &page, None)
}

/// `303` to the employee's page, in `lang`.
pub(crate) fn to_home(lang: Lang) -> Response {
    see_other("/account", lang, None)
}

/// The words of the account pages.
struct Text {
    sign_in: &'static str,
    intro: &'static str,
    login: &'static str,
    password: &'static str,
    required: &'static str,
    wrong: &'static str,
    not_employee: &'static str,
    retired: &'static str,
    busy: &'static str,
    home: &'static str,
    signed_in_as: &'static str,
    to_do: &'static str,
    section1: &'static str,
    due: &'static str,
    preparing: &'static str,
    nothing: &'static str,
    done: &'static str,
    signed_on: &'static str,
    sign_out: &'static str,
    other_lang: &'static str,
    not_waiting: &'static str,
    stale_title: &'static str,
    stale: &'static str,
}

const EN: Text = Text {
    sign_in: "Sign in",
    intro: "Sign in with the login and password you chose, to complete the forms your employer asked you for.",
    login: "Login (your email address)",
    password: "Password",
    required: "This field is required.",
    wrong: "The login or password is wrong.",
    not_employee: "This page is for employees completing their own forms. Sign in to your employer's HR system instead.",
    retired: "This sign-in no longer works. Ask your employer.",
    busy: "The service is busy right now. Wait a few seconds, then send the form again.",
    home: "Your forms",
    signed_in_as: "Signed in as",
    to_do: "To complete",
    section1: "Form I-9, Section 1: Employee information and attestation",
    due: "Due by",
    preparing: "Your Form I-9 is being prepared. Reload this page in a few seconds.",
    nothing: "You have no form to complete right now. Your employer will tell you when there is one.",
    done: "Completed",
    signed_on: "Section 1 of your Form I-9, signed on",
    sign_out: "Sign out",
    other_lang: "Ver en español",
    not_waiting: "This form is not waiting for you: it is signed already, or it is not one of yours. Your forms are listed at /account.",
    stale_title: "The form could not be accepted",
    stale: "This form belongs to an earlier sign-in. Go back to your forms at /account, open it again and send it.",
};

const ES: Text = Text {
    sign_in: "Iniciar sesión",
    intro: "Inicie sesión con el usuario y la contraseña que eligió, para completar los formularios que su empleador le pidió.",
    login: "Usuario (su correo electrónico)",
    password: "Contraseña",
    required: "Este campo es obligatorio.",
    wrong: "El usuario o la contraseña no son correctos.",
    not_employee: "Esta página es para empleados que completan sus propios formularios. Inicie sesión en el sistema de recursos humanos de su empleador.",
    retired: "Este acceso ya no funciona. Consulte a su empleador.",
    busy: "El servicio está ocupado. Espere unos segundos y envíe el formulario de nuevo.",
    home: "Sus formularios",
    signed_in_as: "Sesión iniciada como",
    to_do: "Por completar",
    section1: "Formulario I-9, Sección 1: Información y declaración del empleado",
    due: "Fecha límite:",
    preparing: "Su Formulario I-9 se está preparando. Vuelva a cargar esta página en unos segundos.",
    nothing: "No tiene formularios por completar. Su empleador le avisará cuando haya uno.",
    done: "Completados",
    signed_on: "Sección 1 de su Formulario I-9, firmada el",
    sign_out: "Cerrar sesión",
    other_lang: "View in English",
    not_waiting: "Este formulario no le espera: ya está firmado o no es suyo. Sus formularios están en /account.",
    stale_title: "No se pudo aceptar el formulario",
    stale: "Este formulario pertenece a un inicio de sesión anterior. Vuelva a sus formularios en /account, ábralo de nuevo y envíelo.",
};

/// The throttled sign-in's message: how many seconds to wait.
fn wait_message(lang: Lang, secs: u64) -> String {
    let s = if secs == 1 { "" } else { "s" };
    match lang {
        Lang::En => format!("Too many failed sign-ins. Wait {secs} second{s}, then try again."),
        Lang::Es => {
            format!("Demasiados intentos fallidos. Espere {secs} segundo{s} y vuelva a intentarlo.")
        }
    }
}

fn text(lang: Lang) -> &'static Text {
    match lang {
        Lang::En => &EN,
        Lang::Es => &ES,
    }
}

/// The sign-in form (`api/templates/sign_in.html`).
#[derive(Template)]
#[template(path = "sign_in.html")]
struct SignInPage<'a> {
    lang: &'static str,
    /// `?lang=…` when the page was asked for in a language, so that the
    /// form keeps it; empty otherwise.
    keep_lang: &'static str,
    other: &'static str,
    title: &'static str,
    t: &'static Text,
    login: &'a str,
    /// A refusal of the whole sign-in (wrong password, throttled, busy).
    alert: Option<String>,
    login_error: Option<&'static str>,
    password_error: Option<&'static str>,
}

impl<'a> SignInPage<'a> {
    fn new(q: &Result<Query<LangQuery>, QueryRejection>, login: &'a str) -> Self {
        let lang = chosen(q, Lang::En);
        Self {
            lang: lang.code(),
            keep_lang: match asked(q) {
                Some(Lang::En) => "?lang=en",
                Some(Lang::Es) => "?lang=es",
                None => "",
            },
            other: lang.other().code(),
            title: text(lang).sign_in,
            t: text(lang),
            login,
            alert: None,
            login_error: None,
            password_error: None,
        }
    }
}

/// What the sign-in form sends.
#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SignInForm {
    login: String,
    password: String,
}

/// `GET /account/sign-in` (the employee's page when already signed in).
pub async fn sign_in_form(
    State(state): State<AppState>,
    headers: HeaderMap,
    q: Result<Query<LangQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    if let Some(session) = Session::of(&state, &headers).await? {
        return Ok(to_home(session.lang(&q)));
    }
    Ok(render(StatusCode::OK, &SignInPage::new(&q, ""), None))
}

/// `POST /account/sign-in`.
pub async fn sign_in(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    q: Result<Query<LangQuery>, QueryRejection>,
    form: Result<PageForm<SignInForm>, Unreadable>,
) -> Result<Response, ApiError> {
    let lang = chosen(&q, Lang::En);
    let t = text(lang);
    let SignInForm { login, password } = match form {
        Ok(PageForm(f)) => f,
        Err(why) => return Ok(unreadable_form(why, lang.code())),
    };
    let login = login.trim();
    let mut page = SignInPage::new(&q, login);
    if login.is_empty() || crate::text::check(login).is_err() {
        page.login_error = Some(t.required);
    }
    if password.is_empty() || crate::text::check(&password).is_err() {
        page.password_error = Some(t.required);
    }
    if page.login_error.is_some() || page.password_error.is_some() {
        return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page, None));
    }
    let refused = |page: &mut SignInPage, r: Refused| -> Result<Response, ApiError> {
        let (status, alert, retry) = match r {
            Refused::Throttled(wait) => {
                let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    wait_message(lang, secs),
                    secs,
                )
            }
            Refused::Busy(s) => {
                crate::overload::shed(SIGN_IN_ROUTE);
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    t.busy.to_owned(),
                    s.retry_after.as_secs().max(1),
                )
            }
            Refused::Database(e) => return Err(e.into()),
            Refused::Internal(e) => return Err(ApiError::Internal(e)),
        };
        page.alert = Some(alert);
        let mut response = render(status, &*page, None);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(retry));
        Ok(response)
    };
    // The token endpoint's order: a delayed login or address costs no
    // hashing, and a saturated service no query.
    let keys = Keys::new(&state, address, Some(login));
    if let Err(r) = keys.not_delayed_meanwhile(&state) {
        return refused(&mut page, r);
    }
    let _admitted = match state.hashing.admit() {
        Ok(a) => a,
        Err(s) => return refused(&mut page, Refused::Busy(s)),
    };
    if let Err(r) = keys.not_delayed(&state).await {
        return refused(&mut page, r);
    }
    let user_id = match check_password(&state, &keys, login, &password).await {
        Ok(Checked::User(id)) => id,
        Ok(Checked::Retired) => {
            page.alert = Some(t.retired.to_owned());
            return Ok(render(StatusCode::FORBIDDEN, &page, None));
        }
        Ok(Checked::Wrong) => {
            page.alert = Some(t.wrong.to_owned());
            return Ok(render(StatusCode::UNAUTHORIZED, &page, None));
        }
        Err(r) => return refused(&mut page, r),
    };
    let secret = new_token("i9as_");
    let started = sqlx::query_scalar!(
        "INSERT INTO account_sessions (token_hash, user_id, expires_at)
         SELECT $1, u.id, now() + make_interval(secs => $3)
         FROM users u WHERE u.id = $2 AND u.employee_id IS NOT NULL
         RETURNING user_id",
        token_hash(&secret),
        user_id,
        LONGEST.as_secs_f64(),
    )
    .fetch_optional(&state.pool)
    .await?;
    if started.is_none() {
        page.alert = Some(t.not_employee.to_owned());
        return Ok(render(StatusCode::FORBIDDEN, &page, None));
    }
    // In the language asked for on the sign-in page, else the employee's.
    Ok(see_other(
        "/account",
        asked(&q),
        Some(set_cookie(&state, Some(&secret))),
    ))
}

/// One form on the employee's page.
struct Form {
    /// Where it is completed; `None` while it is being prepared.
    href: Option<String>,
    due: Option<NaiveDate>,
}

/// The employee's page (`api/templates/account.html`).
#[derive(Template)]
#[template(path = "account.html")]
struct Home<'a> {
    lang: &'static str,
    other: &'static str,
    title: &'static str,
    t: &'static Text,
    login: &'a str,
    csrf: String,
    to_do: Vec<Form>,
    /// The days Section 1s were signed, newest first.
    signed: Vec<NaiveDate>,
}

/// `GET /account`.
pub async fn home(
    State(state): State<AppState>,
    headers: HeaderMap,
    q: Result<Query<LangQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Some(session) = Session::of(&state, &headers).await? else {
        return Ok(see_other(SIGN_IN_ROUTE, chosen(&q, Lang::En), None));
    };
    let lang = session.lang(&q);
    let rows = sqlx::query!(
        r#"SELECT i.id, i.status AS "status: I9Status", i.start_date, i.signed_date_employee,
                  r.section1_used_at IS NULL AS "open!"
           FROM i9s i JOIN i9_requests r ON r.i9_id = i.id
           WHERE i.employee_id = $1
           ORDER BY i.id DESC LIMIT 50"#,
        session.employee_id,
    )
    .fetch_all(&state.pool)
    .await?;
    let preparing = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM i9_requests WHERE employee_id = $1 AND i9_id IS NULL) AS "exists!""#,
        session.employee_id,
    )
    .fetch_one(&state.pool)
    .await?;
    let mut to_do: Vec<Form> = rows
        .iter()
        .filter(|r| r.open && r.status == I9Status::Section1Incomplete)
        .map(|r| Form {
            href: Some(format!(
                "/account/i9s/{}/section1?lang={}",
                r.id,
                lang.code()
            )),
            due: r.start_date,
        })
        .collect();
    if preparing {
        to_do.push(Form {
            href: None,
            due: None,
        });
    }
    let page = Home {
        lang: lang.code(),
        other: lang.other().code(),
        title: text(lang).home,
        t: text(lang),
        login: &session.login,
        csrf: session.csrf(),
        to_do,
        signed: rows.iter().filter_map(|r| r.signed_date_employee).collect(),
    };
    Ok(render(StatusCode::OK, &page, None))
}

/// What the sign-out form sends.
#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SignOutForm {
    csrf: String,
}

/// `POST /account/sign-out`: the session ends (a sign-out without the
/// session's form token, or without a session, ends nothing).
pub async fn sign_out(
    State(state): State<AppState>,
    headers: HeaderMap,
    q: Result<Query<LangQuery>, QueryRejection>,
    form: Result<PageForm<SignOutForm>, Unreadable>,
) -> Result<Response, ApiError> {
    let lang = chosen(&q, Lang::En);
    let Some(session) = Session::of(&state, &headers).await? else {
        return Ok(see_other(
            SIGN_IN_ROUTE,
            lang,
            Some(set_cookie(&state, None)),
        ));
    };
    match form {
        Ok(PageForm(f)) if session.csrf_matches(&f.csrf) => {}
        Ok(_) => return Ok(stale_form(lang)),
        Err(why) => return Ok(unreadable_form(why, lang.code())),
    }
    sqlx::query!(
        "DELETE FROM account_sessions WHERE token_hash = $1",
        token_hash(&session.secret),
    )
    .execute(&state.pool)
    .await?;
    Ok(see_other(
        SIGN_IN_ROUTE,
        lang,
        Some(set_cookie(&state, None)),
    ))
}

/// `GET /account/i9s/{id}/section1`: the Section 1 form of one of the
/// signed-in employee's I-9s (any other id is the page of a link that does
/// not work).
pub async fn section1_form(
    State(state): State<AppState>,
    headers: HeaderMap,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<LangQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Some(session) = Session::of(&state, &headers).await? else {
        return Ok(see_other(SIGN_IN_ROUTE, chosen(&q, Lang::En), None));
    };
    let Ok(Path(i9_id)) = id else {
        return Ok(super::pages::invalid_link());
    };
    let holder = Holder::Account {
        session: &session,
        i9_id,
    };
    section1::show_form(&state, holder, &q).await
}

/// `POST /account/i9s/{id}/section1`.
pub async fn section1_sign(
    State(state): State<AppState>,
    RequestId(request_id): RequestId,
    headers: HeaderMap,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<LangQuery>, QueryRejection>,
    form: Result<PageForm<SignForm>, Unreadable>,
) -> Result<Response, ApiError> {
    let Some(session) = Session::of(&state, &headers).await? else {
        return Ok(see_other(SIGN_IN_ROUTE, chosen(&q, Lang::En), None));
    };
    let Ok(Path(i9_id)) = id else {
        return Ok(super::pages::invalid_link());
    };
    let holder = Holder::Account {
        session: &session,
        i9_id,
    };
    section1::sign_form(&state, request_id, holder, &q, form).await
}
