//! The Section 1 page behind `i9FormSection1Link` / `i9Section1Link`: a
//! server-rendered form, in English or Spanish (the employee's
//! `languagePreference`, or `?lang=en|es`), that works without JavaScript:
//! labels tied to inputs, a fieldset for the attestation, an error summary
//! and each error next to its field (`aria-describedby`). Signing sets the
//! I-9 to `Signed Sec 1`, uses the link up, records the partner event, and
//! sends the browser to `employeeReturnUrl` when there is one.

use axum::{
    body::Bytes,
    extract::{
        rejection::{PathRejection, QueryRejection},
        Path, Query, State,
    },
    http::{header, StatusCode},
    response::{IntoResponse, Response},
};
use chrono::{NaiveDate, Utc};
use i9_common::{
    crypto::{token_hash, Purpose},
    domain::{parse_date, Ssn, SsnError},
    events,
    html::escape,
};
use serde::Deserialize;

use super::pages::page_lang;
use crate::{error::ApiError, middleware::RequestId, state::AppState};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Lang {
    En,
    Es,
}

struct Text {
    title: &'static str,
    intro: &'static str,
    fix: &'static str,
    last: &'static str,
    first: &'static str,
    middle: &'static str,
    other: &'static str,
    street: &'static str,
    apt: &'static str,
    city: &'static str,
    state: &'static str,
    zip: &'static str,
    dob: &'static str,
    ssn: &'static str,
    ssn_hint: &'static str,
    email: &'static str,
    phone: &'static str,
    attest: &'static str,
    citizen: &'static str,
    national: &'static str,
    resident: &'static str,
    alien: &'static str,
    a_number: &'static str,
    expires: &'static str,
    admission: &'static str,
    passport: &'static str,
    country: &'static str,
    signature: &'static str,
    signature_hint: &'static str,
    perjury: &'static str,
    submit: &'static str,
    done: &'static str,
    preparing: &'static str,
    other_lang: &'static str,
    required: &'static str,
    bad_date: &'static str,
    bad_ssn: &'static str,
    never_issued_ssn: &'static str,
    sign_mismatch: &'static str,
    need_a_number: &'static str,
    need_alien_doc: &'static str,
    need_expiry: &'static str,
    expired: &'static str,
    too_long: &'static str,
    unreadable: &'static str,
}

const EN: Text = Text {
    title: "Form I-9, Section 1: Employee information and attestation",
    intro: "Complete and sign this section by your first day of work. Fields marked * are required.",
    fix: "Please correct the following:",
    last: "Last name (family name) *",
    first: "First name (given name) *",
    middle: "Middle initial",
    other: "Other last names used",
    street: "Address (street number and name) *",
    apt: "Apartment number",
    city: "City or town *",
    state: "State *",
    zip: "ZIP code *",
    dob: "Date of birth (YYYY-MM-DD or MM/DD/YYYY) *",
    ssn: "U.S. Social Security number",
    ssn_hint: "###-##-####. Leave blank to keep the number your employer has on file.",
    email: "Email address",
    phone: "Telephone number",
    attest: "I attest, under penalty of perjury, that I am (check one) *",
    citizen: "A citizen of the United States",
    national: "A noncitizen national of the United States",
    resident: "A lawful permanent resident",
    alien: "A noncitizen (other than above) authorized to work",
    a_number: "USCIS A-Number",
    expires: "Work authorization expires (date), if it does",
    admission: "Form I-94 admission number",
    passport: "Foreign passport number",
    country: "Country of issuance",
    signature: "Signature: type your first and last name *",
    signature_hint: "Typing your name is your electronic signature.",
    perjury: "I am aware that federal law provides for imprisonment and/or fines for false statements, or the use of false documents, in connection with the completion of this form. *",
    submit: "Sign Section 1",
    done: "Section 1 is signed. Thank you. Your employer completes the next step.",
    preparing: "Your Form I-9 is being prepared. Reload this page in a moment.",
    other_lang: "Ver en español",
    required: "This field is required.",
    bad_date: "Enter a real date, YYYY-MM-DD or MM/DD/YYYY.",
    bad_ssn: "Enter the number as ###-##-####.",
    never_issued_ssn: "This is not a number the Social Security Administration issues; check it on your card.",
    sign_mismatch: "Type your first and last name exactly as entered above.",
    need_a_number: "A lawful permanent resident gives the USCIS A-Number.",
    need_alien_doc: "Give an A-Number, a Form I-94 admission number, or a foreign passport number with its country.",
    need_expiry: "Give the expiration date of your work authorization, or check that it does not expire.",
    expired: "This date is in the past.",
    too_long: "This is too long.",
    unreadable: "This holds characters that cannot be used; type it again.",
};

const ES: Text = Text {
    title: "Formulario I-9, Sección 1: Información y declaración del empleado",
    intro: "Complete y firme esta sección a más tardar su primer día de trabajo. Los campos con * son obligatorios.",
    fix: "Corrija lo siguiente:",
    last: "Apellido *",
    first: "Nombre *",
    middle: "Inicial del segundo nombre",
    other: "Otros apellidos usados",
    street: "Dirección (número y nombre de la calle) *",
    apt: "Número de apartamento",
    city: "Ciudad o pueblo *",
    state: "Estado *",
    zip: "Código postal *",
    dob: "Fecha de nacimiento (AAAA-MM-DD o MM/DD/AAAA) *",
    ssn: "Número de Seguro Social de EE. UU.",
    ssn_hint: "###-##-####. Déjelo en blanco para conservar el número que su empleador tiene.",
    email: "Correo electrónico",
    phone: "Número de teléfono",
    attest: "Declaro, bajo pena de perjurio, que soy (marque uno) *",
    citizen: "Ciudadano de los Estados Unidos",
    national: "Nacional no ciudadano de los Estados Unidos",
    resident: "Residente permanente legal",
    alien: "Extranjero (distinto de los anteriores) autorizado a trabajar",
    a_number: "Número A de USCIS",
    expires: "Vencimiento de la autorización de empleo (fecha), si vence",
    admission: "Número de admisión del Formulario I-94",
    passport: "Número de pasaporte extranjero",
    country: "País de emisión",
    signature: "Firma: escriba su nombre y apellido *",
    signature_hint: "Escribir su nombre es su firma electrónica.",
    perjury: "Entiendo que la ley federal establece prisión y/o multas por declaraciones falsas o por el uso de documentos falsos al completar este formulario. *",
    submit: "Firmar la Sección 1",
    done: "La Sección 1 está firmada. Gracias. Su empleador completa el siguiente paso.",
    preparing: "Su Formulario I-9 se está preparando. Vuelva a cargar esta página en un momento.",
    other_lang: "View in English",
    required: "Este campo es obligatorio.",
    bad_date: "Escriba una fecha válida, AAAA-MM-DD o MM/DD/AAAA.",
    bad_ssn: "Escriba el número como ###-##-####.",
    never_issued_ssn: "La Administración del Seguro Social no emite este número; compruébelo en su tarjeta.",
    sign_mismatch: "Escriba su nombre y apellido tal como arriba.",
    need_a_number: "Un residente permanente legal indica el número A de USCIS.",
    need_alien_doc: "Indique un número A, un número de admisión del I-94, o un pasaporte extranjero con su país.",
    need_expiry: "Indique la fecha de vencimiento de su autorización, o marque que no vence.",
    expired: "Esta fecha ya pasó.",
    too_long: "Es demasiado largo.",
    unreadable: "Contiene caracteres que no se pueden usar; escríbalo de nuevo.",
};

fn text(lang: Lang) -> &'static Text {
    match lang {
        Lang::En => &EN,
        Lang::Es => &ES,
    }
}

#[derive(Deserialize)]
pub struct LangQuery {
    lang: Option<String>,
}

/// What the page needs of the link's I-9.
struct Link {
    request: uuid::Uuid,
    i9: Option<i64>,
    status: Option<String>,
    lang: Lang,
    return_url: Option<String>,
    values: Vec<(&'static str, String)>,
}

async fn find(state: &AppState, token: &str) -> Result<Option<Link>, ApiError> {
    type Row = (
        uuid::Uuid,
        Option<i64>,
        Option<String>,
        Option<i16>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<NaiveDate>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT r.id, r.i9_id, i.status, e.language_preference, e.employee_return_url,
                COALESCE(i.last_name, e.last_name), COALESCE(i.first_name, e.first_name), i.middle_initial,
                i.other_name, COALESCE(i.date_of_birth, e.date_of_birth), i.address_street, i.address_apartment,
                i.address_city, i.address_state, i.address_zip, i.email_address
         FROM i9_requests r JOIN employees e ON e.id = r.employee_id LEFT JOIN i9s i ON i.id = r.i9_id
         WHERE r.section1_token_hash = $1 AND r.section1_used_at IS NULL AND r.section1_expires_at > now()",
    )
    .bind(token_hash(token))
    .fetch_optional(&state.pool)
    .await?;
    Ok(row.map(|r| {
        let opt = |v: Option<String>| v.unwrap_or_default();
        Link {
            request: r.0,
            i9: r.1,
            status: r.2,
            lang: if r.3 == Some(2) { Lang::Es } else { Lang::En },
            return_url: r.4,
            values: vec![
                ("lastName", opt(r.5)),
                ("firstName", opt(r.6)),
                ("middleInitial", opt(r.7)),
                ("otherLastNames", opt(r.8)),
                (
                    "dateOfBirth",
                    r.9.map(|d| d.to_string()).unwrap_or_default(),
                ),
                ("addressStreet", opt(r.10)),
                ("addressApartment", opt(r.11)),
                ("addressCity", opt(r.12)),
                ("addressState", opt(r.13)),
                ("addressZip", opt(r.14)),
                ("emailAddress", opt(r.15)),
            ],
        }
    }))
}

/// The language asked for with `?lang=`; a query that cannot be read asks for none.
fn chosen(q: &Result<Query<LangQuery>, QueryRejection>, default: Lang) -> Lang {
    match q.as_ref().ok().and_then(|q| q.lang.as_deref()) {
        Some("es") => Lang::Es,
        Some("en") => Lang::En,
        _ => default,
    }
}

fn invalid() -> Response {
    super::pages::invalid_link()
}

fn html(status: StatusCode, lang: Lang, title: &str, body: &str) -> Response {
    form_page(status, lang, title, body, None)
}

/// A page with the Section 1 form, whose signing redirects to `return_url`.
fn form_page(
    status: StatusCode,
    lang: Lang,
    title: &str,
    body: &str,
    return_url: Option<&str>,
) -> Response {
    page_lang(
        status,
        if lang == Lang::Es { "es" } else { "en" },
        title,
        body,
        return_url,
    )
}

pub async fn show(
    State(state): State<AppState>,
    token: Result<Path<String>, PathRejection>,
    q: Result<Query<LangQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Ok(Path(token)) = token else {
        return Ok(invalid());
    };
    let Some(link) = find(&state, &token).await? else {
        return Ok(invalid());
    };
    let lang = chosen(&q, link.lang);
    let t = text(lang);
    if link.i9.is_none() {
        return Ok(html(
            StatusCode::OK,
            lang,
            t.title,
            &format!("<p>{}</p>", t.preparing),
        ));
    }
    if link.status.as_deref() != Some("Section 1 Incomplete") {
        return Ok(invalid());
    }
    Ok(form_page(
        StatusCode::OK,
        lang,
        t.title,
        &form(t, lang, &link.values, &[]),
        link.return_url.as_deref(),
    ))
}

fn form(
    t: &Text,
    lang: Lang,
    values: &[(&str, String)],
    errors: &[(&'static str, &'static str)],
) -> String {
    let v = |k: &str| {
        values
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| escape(v))
            .unwrap_or_default()
    };
    let err = |k: &str| errors.iter().find(|(f, _)| *f == k).map(|(_, m)| *m);
    let input = |name: &str, label: &str, kind: &str, extra: &str, hint: Option<&str>| {
        let mut described = Vec::new();
        let hint_html = hint
            .map(|h| {
                described.push(format!("{name}-hint"));
                format!("<p class=\"hint\" id=\"{name}-hint\">{h}</p>")
            })
            .unwrap_or_default();
        let error_html = err(name)
            .map(|m| {
                described.push(format!("{name}-error"));
                format!("<p class=\"error\" id=\"{name}-error\">{m}</p>")
            })
            .unwrap_or_default();
        let aria = if described.is_empty() {
            String::new()
        } else {
            format!(" aria-describedby=\"{}\"", described.join(" "))
        };
        let invalid = if err(name).is_some() {
            " aria-invalid=\"true\""
        } else {
            ""
        };
        format!(
            "<label for=\"{name}\">{label}</label>{hint_html}<input id=\"{name}\" name=\"{name}\" type=\"{kind}\" value=\"{}\"{extra}{aria}{invalid}>{error_html}",
            v(name)
        )
    };
    let checked = |k: &str, val: &str| if v(k) == val { " checked" } else { "" };
    let summary = if errors.is_empty() {
        String::new()
    } else {
        let items: String = errors
            .iter()
            .map(|(f, m)| format!("<li><a href=\"#{f}\">{m}</a></li>"))
            .collect();
        format!("<div role=\"alert\" class=\"summary\" tabindex=\"-1\"><p><strong>{}</strong></p><ul>{items}</ul></div>", t.fix)
    };
    let other = if lang == Lang::Es { "en" } else { "es" };
    let attestation_error = err("attestation")
        .map(|m| format!("<p class=\"error\" id=\"attestation-error\">{m}</p>"))
        .unwrap_or_default();
    let agree_error = err("agree")
        .map(|m| format!("<p class=\"error\" id=\"agree-error\">{m}</p>"))
        .unwrap_or_default();
    format!(
        "<p><a href=\"?lang={other}\" lang=\"{other}\">{other_lang}</a></p>{summary}<p>{intro}</p>\
         <form method=\"post\" action=\"?lang={cur}\" novalidate>\
         {last}{first}{middle}{othern}{street}{apt}{city}{state}{zip}{dob}{ssn}{email}{phone}\
         <fieldset{att_aria}><legend>{attest}</legend>\
         <label><input type=\"radio\" name=\"attestation\" value=\"citizen\"{c1}> {citizen}</label>\
         <label><input type=\"radio\" name=\"attestation\" value=\"noncitizen national\"{c2}> {national}</label>\
         <label><input type=\"radio\" name=\"attestation\" value=\"permanent resident\"{c3}> {resident}</label>\
         <label><input type=\"radio\" name=\"attestation\" value=\"alien authorized to work\"{c4}> {alien}</label>\
         {attestation_error}{anum}{exp}{adm}{pass}{country}</fieldset>\
         <p><label><input type=\"checkbox\" id=\"agree\" name=\"agree\" value=\"yes\"{agree_aria}> {perjury}</label></p>{agree_error}\
         {signature}<button type=\"submit\">{submit}</button></form>",
        other_lang = t.other_lang,
        intro = t.intro,
        cur = if lang == Lang::Es { "es" } else { "en" },
        last = input("lastName", t.last, "text", " autocomplete=\"family-name\" required", None),
        first = input("firstName", t.first, "text", " autocomplete=\"given-name\" required", None),
        middle = input("middleInitial", t.middle, "text", " maxlength=\"1\"", None),
        othern = input("otherLastNames", t.other, "text", "", None),
        street = input("addressStreet", t.street, "text", " autocomplete=\"address-line1\" required", None),
        apt = input("addressApartment", t.apt, "text", "", None),
        city = input("addressCity", t.city, "text", " autocomplete=\"address-level2\" required", None),
        state = input("addressState", t.state, "text", " autocomplete=\"address-level1\" required", None),
        zip = input("addressZip", t.zip, "text", " autocomplete=\"postal-code\" required", None),
        dob = input("dateOfBirth", t.dob, "text", " autocomplete=\"bday\" required", None),
        ssn = input("socialSecurityNumber", t.ssn, "text", " autocomplete=\"off\" inputmode=\"numeric\"", Some(t.ssn_hint)),
        email = input("emailAddress", t.email, "email", " autocomplete=\"email\"", None),
        phone = input("phoneNumber", t.phone, "tel", " autocomplete=\"tel\"", None),
        att_aria = if err("attestation").is_some() { " aria-describedby=\"attestation-error\"" } else { "" },
        attest = t.attest,
        c1 = checked("attestation", "citizen"),
        c2 = checked("attestation", "noncitizen national"),
        c3 = checked("attestation", "permanent resident"),
        c4 = checked("attestation", "alien authorized to work"),
        citizen = t.citizen,
        national = t.national,
        resident = t.resident,
        alien = t.alien,
        anum = input("alienNumber", t.a_number, "text", "", None),
        exp = input("workAuthorizationExpiration", t.expires, "text", "", None),
        adm = input("admissionNumber", t.admission, "text", "", None),
        pass = input("foreignPassportNumber", t.passport, "text", "", None),
        country = input("foreignPassportCountry", t.country, "text", "", None),
        agree_aria = if err("agree").is_some() { " aria-invalid=\"true\" aria-describedby=\"agree-error\"" } else { "" },
        perjury = t.perjury,
        signature = input("signature", t.signature, "text", " required", Some(t.signature_hint)),
        submit = t.submit,
    )
}

const FIELDS: &[(&str, usize)] = &[
    ("lastName", 40),
    ("firstName", 40),
    ("middleInitial", 1),
    ("otherLastNames", 40),
    ("addressStreet", 80),
    ("addressApartment", 80),
    ("addressCity", 50),
    ("addressState", 20),
    ("addressZip", 10),
    ("dateOfBirth", 10),
    ("socialSecurityNumber", 11),
    ("emailAddress", 80),
    ("phoneNumber", 20),
    ("attestation", 30),
    ("alienNumber", 12),
    ("workAuthorizationExpiration", 10),
    ("admissionNumber", 11),
    ("foreignPassportNumber", 20),
    ("foreignPassportCountry", 50),
    ("signature", 100),
    ("agree", 3),
];

pub async fn sign(
    State(state): State<AppState>,
    RequestId(request_id): RequestId,
    token: Result<Path<String>, PathRejection>,
    q: Result<Query<LangQuery>, QueryRejection>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let Ok(Path(token)) = token else {
        return Ok(invalid());
    };
    let Some(link) = find(&state, &token).await? else {
        return Ok(invalid());
    };
    let lang = chosen(&q, link.lang);
    let t = text(lang);
    let Some(i9) = link
        .i9
        .filter(|_| link.status.as_deref() == Some("Section 1 Incomplete"))
    else {
        return Ok(invalid());
    };
    let (pairs, unreadable) = crate::text::decode_form(&body);
    let values: Vec<(&'static str, String)> = FIELDS
        .iter()
        .map(|(k, _)| {
            let v = pairs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_default();
            (*k, v)
        })
        .collect();
    let get = |k: &str| {
        values
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    // A field that is not UTF-8 or holds NUL (text.rs) reads as empty, with this error first.
    let mut errors: Vec<(&'static str, &'static str)> = FIELDS
        .iter()
        .filter(|(k, _)| unreadable.iter().any(|u| u.field == *k))
        .map(|(k, _)| (*k, t.unreadable))
        .collect();
    for (k, max) in FIELDS {
        if get(k).chars().count() > *max {
            errors.push((k, t.too_long));
        }
    }
    for k in [
        "lastName",
        "firstName",
        "addressStreet",
        "addressCity",
        "addressState",
        "addressZip",
        "dateOfBirth",
    ] {
        if get(k).is_empty() {
            errors.push((k, t.required));
        }
    }
    let dob = match get("dateOfBirth") {
        "" => None,
        s => match parse_date(s) {
            Ok(d) => Some(d),
            Err(_) => {
                errors.push(("dateOfBirth", t.bad_date));
                None
            }
        },
    };
    let ssn = match get("socialSecurityNumber") {
        "" => None,
        s => match Ssn::parse(s) {
            Ok(v) => Some(v),
            Err(e) => {
                let message = match e {
                    SsnError::Format => t.bad_ssn,
                    SsnError::Invalid => t.never_issued_ssn,
                };
                errors.push(("socialSecurityNumber", message));
                None
            }
        },
    };
    let today = Utc::now().date_naive();
    let attestation = get("attestation");
    let mut expires = None;
    match attestation {
        "citizen" | "noncitizen national" => {}
        "permanent resident" => {
            if get("alienNumber").is_empty() {
                errors.push(("alienNumber", t.need_a_number));
            }
        }
        "alien authorized to work" => {
            match get("workAuthorizationExpiration") {
                "" | "N/A" | "n/a" => {}
                s => match parse_date(s) {
                    Ok(d) if d < today => errors.push(("workAuthorizationExpiration", t.expired)),
                    Ok(d) => expires = Some(d),
                    Err(_) => errors.push(("workAuthorizationExpiration", t.bad_date)),
                },
            }
            if get("workAuthorizationExpiration").is_empty() {
                errors.push(("workAuthorizationExpiration", t.need_expiry));
            }
            let passport = !get("foreignPassportNumber").is_empty()
                && !get("foreignPassportCountry").is_empty();
            if get("alienNumber").is_empty() && get("admissionNumber").is_empty() && !passport {
                errors.push(("alienNumber", t.need_alien_doc));
            }
        }
        _ => errors.push(("attestation", t.required)),
    }
    if get("agree") != "yes" {
        errors.push(("agree", t.required));
    }
    let normal = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    if get("signature").is_empty() {
        errors.push(("signature", t.required));
    } else if normal(get("signature"))
        != normal(&format!("{} {}", get("firstName"), get("lastName")))
    {
        errors.push(("signature", t.sign_mismatch));
    }
    if !errors.is_empty() {
        return Ok(form_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            lang,
            t.title,
            &form(t, lang, &values, &errors),
            link.return_url.as_deref(),
        ));
    }

    let opt = |k: &str| Some(get(k).to_owned()).filter(|v| !v.is_empty());
    let mut tx = state.pool.begin().await?;
    let used = sqlx::query("UPDATE i9_requests SET section1_used_at = now() WHERE id = $1 AND section1_used_at IS NULL")
        .bind(link.request)
        .execute(&mut *tx)
        .await?;
    let updated = sqlx::query(
        "UPDATE i9s SET status = 'Signed Sec 1', signed_date_employee = $2, last_name = $3, first_name = $4,
                middle_initial = $5, other_name = $6, address_street = $7, address_apartment = $8,
                address_city = $9, address_state = $10, address_zip = $11, date_of_birth = $12,
                email_address = COALESCE($13, email_address), phone_number = COALESCE($14, phone_number),
                attestation = $15, work_authorization = $15, work_authorization_expiration = $16,
                alien_number = $17, admission_number = $18, foreign_passport_number = $19,
                foreign_passport_country = $20,
                ssn_ciphertext = COALESCE($21, ssn_ciphertext), ssn_last4 = COALESCE($22, ssn_last4),
                updated_at = now()
         WHERE id = $1 AND status = 'Section 1 Incomplete'",
    )
    .bind(i9)
    .bind(today)
    .bind(get("lastName"))
    .bind(get("firstName"))
    .bind(opt("middleInitial"))
    .bind(opt("otherLastNames"))
    .bind(get("addressStreet"))
    .bind(opt("addressApartment"))
    .bind(get("addressCity"))
    .bind(get("addressState"))
    .bind(get("addressZip"))
    .bind(dob)
    .bind(opt("emailAddress"))
    .bind(opt("phoneNumber"))
    .bind(attestation)
    .bind(expires)
    .bind(opt("alienNumber"))
    .bind(opt("admissionNumber"))
    .bind(opt("foreignPassportNumber"))
    .bind(opt("foreignPassportCountry"))
    .bind(ssn.as_ref().map(|s| state.cipher.encrypt_ssn(Purpose::I9Ssn, s)))
    .bind(ssn.as_ref().map(|s| s.last4().to_owned()))
    .execute(&mut *tx)
    .await?;
    if used.rows_affected() != 1 || updated.rows_affected() != 1 {
        return Ok(invalid()); // used a moment ago by another submission
    }
    sqlx::query("INSERT INTO audit_log (action, resource_type, resource_id, request_id, detail) VALUES ('i9.section1', 'i9', $1, $2, $3)")
        .bind(i9.to_string())
        .bind(&request_id)
        .bind(serde_json::json!({ "attestation": attestation }))
        .execute(&mut *tx)
        .await?;
    events::record_status_change(
        &mut tx,
        i9,
        Some("Section 1 Incomplete"),
        &state.config.public_base_url,
    )
    .await?;
    tx.commit().await?;
    match link
        .return_url
        .and_then(|u| header::HeaderValue::from_str(&u).ok())
    {
        Some(url) => Ok((StatusCode::SEE_OTHER, [(header::LOCATION, url)]).into_response()),
        None => Ok(html(
            StatusCode::OK,
            lang,
            t.title,
            &format!("<p>{}</p>", t.done),
        )),
    }
}
