//! The Section 1 page behind `i9FormSection1Link` / `i9Section1Link`: a
//! server-rendered form, in English or Spanish (the employee's
//! `languagePreference`, or `?lang=en|es`), that works without JavaScript:
//! labels tied to inputs, a fieldset for the attestation, an error summary
//! and each error next to its field (`aria-describedby`). Signing sets the
//! I-9 to `Signed Sec 1`, uses the link up, records the partner event, and
//! sends the browser to `employeeReturnUrl` when there is one. Before the
//! I-9 exists the page says it is being prepared and has the browser look
//! again in [`PREPARING_RETRY_SECS`]. Templates: `api/templates/section1*.html`,
//! `input.html`.

use askama::Template;
use axum::{
    extract::{
        rejection::{PathRejection, QueryRejection},
        Path, Query, State,
    },
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use chrono::NaiveDate;
use i9_common::{
    crypto::token_hash,
    domain::{
        attested, parse_birth_date, parse_date, signature::signs_as, Attestation, BirthDateError,
        I9Status, Ssn, SsnError, Step,
    },
    models::{
        i9::{self as lifecycle, Preparer, Section1, MAX_PREPARERS},
        Actor, WriteError,
    },
};
use serde::Deserialize;

use super::pages::{chosen, render, unreadable_form, Lang, LangQuery, Message};
use crate::{
    error::ApiError,
    middleware::RequestId,
    page_form::{PageForm, Unreadable},
    state::AppState,
};

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
    zip_hint: &'static str,
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
    a_number_hint: &'static str,
    expires: &'static str,
    expires_hint: &'static str,
    admission: &'static str,
    admission_hint: &'static str,
    passport: &'static str,
    country: &'static str,
    signature: &'static str,
    signature_hint: &'static str,
    perjury: &'static str,
    submit: &'static str,
    done: &'static str,
    preparing: &'static str,
    /// Around the seconds until the preparing page looks again.
    looks_again: (&'static str, &'static str),
    other_lang: &'static str,
    /// The names the error summary gives the fields whose labels are long
    /// (the others are named by their labels).
    dob_name: &'static str,
    attest_name: &'static str,
    agree_name: &'static str,
    signature_name: &'static str,
    required: &'static str,
    choose_one: &'static str,
    check_box: &'static str,
    bad_date: &'static str,
    future_birth: &'static str,
    early_birth: &'static str,
    bad_state: &'static str,
    bad_zip: &'static str,
    bad_a_number: &'static str,
    bad_admission: &'static str,
    bad_ssn: &'static str,
    never_issued_ssn: &'static str,
    sign_mismatch: &'static str,
    need_a_number: &'static str,
    need_alien_doc: &'static str,
    need_expiry: &'static str,
    expired: &'static str,
    too_long: &'static str,
    unreadable: &'static str,
    // Supplement A (docs/supplement-a.md).
    preparer_q: &'static str,
    no_preparer: &'static str,
    assisted: &'static str,
    supplement: &'static str,
    supplement_intro: &'static str,
    /// Before a preparer's number, in a row's legend and the error summary.
    preparer_n: &'static str,
    preparer_attest: &'static str,
    preparer_signature: &'static str,
    preparer_date: &'static str,
    add_preparer: &'static str,
    choose_state: &'static str,
    preparer_name: &'static str,
    preparer_signature_name: &'static str,
    preparer_attest_name: &'static str,
    choose_preparer: &'static str,
    need_preparer: &'static str,
    preparer_conflict: &'static str,
    preparer_sign_mismatch: &'static str,
    not_today: &'static str,
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
    zip_hint: "5 digits, e.g. 97201, or ZIP+4, e.g. 97201-1234.",
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
    a_number_hint: "7 to 9 digits, e.g. A123456789.",
    expires: "Work authorization expiration date",
    expires_hint: "YYYY-MM-DD or MM/DD/YYYY. Type N/A if it does not expire.",
    admission: "Form I-94 admission number",
    admission_hint: "11 digits and letters.",
    passport: "Foreign passport number",
    country: "Country of issuance",
    signature: "Signature: type your first and last name *",
    signature_hint: "Typing your name is your electronic signature.",
    perjury: "I am aware that federal law provides for imprisonment and/or fines for false statements, or the use of false documents, in connection with the completion of this form. *",
    submit: "Sign Section 1",
    done: "Section 1 is signed. Thank you. Your employer completes the next step.",
    preparing: "Your Form I-9 is being prepared.",
    looks_again: ("This page looks again in", "seconds; you can also reload it yourself."),
    other_lang: "Ver en español",
    dob_name: "Date of birth",
    attest_name: "Citizenship or immigration status",
    agree_name: "Penalty of perjury statement",
    signature_name: "Signature",
    required: "This field is required.",
    choose_one: "Check one of the four boxes.",
    check_box: "Check the box to confirm you are aware of it.",
    bad_date: "Enter a real date, YYYY-MM-DD or MM/DD/YYYY.",
    future_birth: "Enter your date of birth; it cannot be in the future.",
    early_birth: "Enter your date of birth; it cannot be before 1900.",
    bad_state: "Choose the state, territory or military post office from the list.",
    bad_zip: "Enter the ZIP code as 5 digits, or as ZIP+4: 12345-6789.",
    bad_a_number: "Enter the A-Number as 7 to 9 digits, e.g. A123456789.",
    bad_admission: "Enter the 11 digits and letters of the I-94 admission number.",
    bad_ssn: "Enter the number as ###-##-####.",
    never_issued_ssn: "This is not a number the Social Security Administration issues; check it on your card.",
    sign_mismatch: "Type your first and last name exactly as entered above.",
    need_a_number: "A lawful permanent resident gives the USCIS A-Number.",
    need_alien_doc: "Give an A-Number, a Form I-94 admission number, or a foreign passport number with its country.",
    need_expiry: "Give the expiration date of your work authorization, or type N/A if it does not expire.",
    expired: "This date is in the past.",
    too_long: "This is too long.",
    unreadable: "This holds characters that cannot be used; type it again.",
    preparer_q: "Preparer and/or translator: did anyone help you complete this section?",
    no_preparer: "I did not use a preparer or translator.",
    assisted: "A preparer(s) and/or translator(s) assisted the employee in completing Section 1.",
    supplement: "Supplement A: Preparer and/or translator certification",
    supplement_intro: "Each person who helped you fills in one part below and signs it with their typed name; you still sign Section 1 yourself. Leave it blank if no one helped. To add a person use the last button of the page; to remove one, clear their part.",
    preparer_n: "Preparer or translator",
    preparer_attest: "I attest, under penalty of perjury, that I have assisted in the completion of Section 1 of this form and that to the best of my knowledge the information is true and correct. *",
    preparer_signature: "Signature of preparer or translator: type their first and last name *",
    preparer_date: "Today's date *",
    add_preparer: "Add another preparer or translator",
    choose_state: "Choose the state",
    preparer_name: "Preparer or translator",
    preparer_signature_name: "Signature",
    preparer_attest_name: "Attestation",
    choose_preparer: "Check one of the two boxes.",
    need_preparer: "You checked that a preparer or translator assisted: each one fills in their part of Supplement A.",
    preparer_conflict: "Supplement A is filled in: check that a preparer or translator assisted, or clear their part.",
    preparer_sign_mismatch: "Type the preparer's or translator's first and last name exactly as entered in this part.",
    not_today: "Enter today's date, the day Section 1 is signed.",
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
    zip_hint: "5 dígitos, p. ej., 97201, o ZIP+4, p. ej., 97201-1234.",
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
    a_number_hint: "De 7 a 9 dígitos, p. ej., A123456789.",
    expires: "Fecha de vencimiento de la autorización de empleo",
    expires_hint: "AAAA-MM-DD o MM/DD/AAAA. Escriba N/A si no vence.",
    admission: "Número de admisión del Formulario I-94",
    admission_hint: "11 dígitos y letras.",
    passport: "Número de pasaporte extranjero",
    country: "País de emisión",
    signature: "Firma: escriba su nombre y apellido *",
    signature_hint: "Escribir su nombre es su firma electrónica.",
    perjury: "Entiendo que la ley federal establece prisión y/o multas por declaraciones falsas o por el uso de documentos falsos al completar este formulario. *",
    submit: "Firmar la Sección 1",
    done: "La Sección 1 está firmada. Gracias. Su empleador completa el siguiente paso.",
    preparing: "Su Formulario I-9 se está preparando.",
    looks_again: ("Esta página vuelve a cargarse en", "segundos; también puede volver a cargarla usted."),
    other_lang: "View in English",
    dob_name: "Fecha de nacimiento",
    attest_name: "Estatus de ciudadanía o inmigración",
    agree_name: "Declaración bajo pena de perjurio",
    signature_name: "Firma",
    required: "Este campo es obligatorio.",
    choose_one: "Marque una de las cuatro casillas.",
    check_box: "Marque la casilla para confirmar que lo entiende.",
    bad_date: "Escriba una fecha válida, AAAA-MM-DD o MM/DD/AAAA.",
    future_birth: "Escriba su fecha de nacimiento; no puede ser una fecha futura.",
    early_birth: "Escriba su fecha de nacimiento; no puede ser anterior a 1900.",
    bad_state: "Elija el estado, territorio u oficina postal militar de la lista.",
    bad_zip: "Escriba el código postal con 5 dígitos, o como ZIP+4: 12345-6789.",
    bad_a_number: "Escriba el número A con 7 a 9 dígitos, p. ej., A123456789.",
    bad_admission: "Escriba los 11 dígitos y letras del número de admisión del I-94.",
    bad_ssn: "Escriba el número como ###-##-####.",
    never_issued_ssn: "La Administración del Seguro Social no emite este número; compruébelo en su tarjeta.",
    sign_mismatch: "Escriba su nombre y apellido tal como arriba.",
    need_a_number: "Un residente permanente legal indica el número A de USCIS.",
    need_alien_doc: "Indique un número A, un número de admisión del I-94, o un pasaporte extranjero con su país.",
    need_expiry: "Indique la fecha de vencimiento de su autorización de empleo, o escriba N/A si no vence.",
    expired: "Esta fecha ya pasó.",
    too_long: "Es demasiado largo.",
    unreadable: "Contiene caracteres que no se pueden usar; escríbalo de nuevo.",
    preparer_q: "Preparador y/o traductor: ¿alguien le ayudó a completar esta sección?",
    no_preparer: "No usé un preparador ni traductor.",
    assisted: "Uno o varios preparadores y/o traductores ayudaron al empleado a completar la Sección 1.",
    supplement: "Suplemento A: Certificación del preparador y/o traductor",
    supplement_intro: "Cada persona que le ayudó completa una parte abajo y la firma escribiendo su nombre; usted firma la Sección 1 de todos modos. Déjelo en blanco si nadie le ayudó. Para añadir una persona use el último botón de la página; para quitar una, borre su parte.",
    preparer_n: "Preparador o traductor",
    preparer_attest: "Declaro, bajo pena de perjurio, que he ayudado a completar la Sección 1 de este formulario y que, a mi leal saber y entender, la información es verdadera y correcta. *",
    preparer_signature: "Firma del preparador o traductor: escriba su nombre y apellido *",
    preparer_date: "Fecha de hoy *",
    add_preparer: "Añadir otro preparador o traductor",
    choose_state: "Elija el estado",
    preparer_name: "Preparador o traductor",
    preparer_signature_name: "Firma",
    preparer_attest_name: "Declaración",
    choose_preparer: "Marque una de las dos casillas.",
    need_preparer: "Marcó que un preparador o traductor le ayudó: cada uno completa su parte del Suplemento A.",
    preparer_conflict: "El Suplemento A tiene datos: marque que un preparador o traductor le ayudó, o borre su parte.",
    preparer_sign_mismatch: "Escriba el nombre y apellido del preparador o traductor tal como en esta parte.",
    not_today: "Escriba la fecha de hoy, el día en que se firma la Sección 1.",
};

impl Text {
    /// How the error summary names the form's field `field`: a preparer's
    /// field with the preparer's number ("Preparer or translator 2: State").
    fn summary_name(&self, field: &'static str) -> String {
        match preparer_field(field) {
            Some((row, part)) => {
                let label = match PreparerPart::ALL[part] {
                    PreparerPart::LastName => self.last,
                    PreparerPart::FirstName => self.first,
                    PreparerPart::MiddleInitial => self.middle,
                    PreparerPart::Address => self.street,
                    PreparerPart::City => self.city,
                    PreparerPart::State => self.state,
                    PreparerPart::Zip => self.zip,
                    PreparerPart::Agree => self.preparer_attest_name,
                    PreparerPart::Signature => self.preparer_signature_name,
                    PreparerPart::Date => self.preparer_date,
                };
                let label = label.strip_suffix(" *").unwrap_or(label);
                format!("{} {}: {label}", self.preparer_n, row + 1)
            }
            None => self.field_name(field).to_owned(),
        }
    }

    /// The name of the form's field `field` in the error summary: its label
    /// without the `*` of a required field, or a shorter name.
    fn field_name(&self, field: &'static str) -> &'static str {
        let label = match field {
            "lastName" => self.last,
            "firstName" => self.first,
            "middleInitial" => self.middle,
            "otherLastNames" => self.other,
            "addressStreet" => self.street,
            "addressApartment" => self.apt,
            "addressCity" => self.city,
            "addressState" => self.state,
            "addressZip" => self.zip,
            "dateOfBirth" => self.dob_name,
            "socialSecurityNumber" => self.ssn,
            "emailAddress" => self.email,
            "phoneNumber" => self.phone,
            "attestation" => self.attest_name,
            "alienNumber" => self.a_number,
            "workAuthorizationExpiration" => self.expires,
            "admissionNumber" => self.admission,
            "foreignPassportNumber" => self.passport,
            "foreignPassportCountry" => self.country,
            "agree" => self.agree_name,
            "signature" => self.signature_name,
            "preparer" => self.preparer_name,
            other => other,
        };
        label.strip_suffix(" *").unwrap_or(label)
    }
}

impl Lang {
    /// The Section 1 page's words.
    fn text(self) -> &'static Text {
        match self {
            Lang::En => &EN,
            Lang::Es => &ES,
        }
    }
}

/// How long the page saying the I-9 is being prepared has the browser wait
/// before it looks again (its `Retry-After` and `refresh`).
pub const PREPARING_RETRY_SECS: u32 = 5;

/// What the Section 1 form sends, and what it shows prefilled: the fields
/// of Section 1 ([`Fields`], reached through `Deref`) and the part of each
/// preparer and/or translator of Supplement A, sent as
/// `preparer{n}{Part}` ([`PREPARER_FIELDS`]). Read strictly, as every page
/// form ([`crate::page_form`]): a field sent twice or one the page does not
/// have makes the form unreadable.
#[derive(Default)]
pub struct SignForm {
    fields: Fields,
    /// The rows of Supplement A the page shows, blank ones included.
    preparers: Vec<PreparerForm>,
}

impl std::ops::Deref for SignForm {
    type Target = Fields;
    fn deref(&self) -> &Fields {
        &self.fields
    }
}

impl std::ops::DerefMut for SignForm {
    fn deref_mut(&mut self) -> &mut Fields {
        &mut self.fields
    }
}

impl<'de> Deserialize<'de> for SignForm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let pairs = Vec::<(String, String)>::deserialize(d)?;
        let mut preparers: Vec<PreparerForm> = Vec::new();
        let mut sent = std::collections::HashSet::new();
        let mut rest = Vec::with_capacity(pairs.len());
        for (key, value) in pairs {
            let Some((row, part)) = preparer_field(&key) else {
                rest.push((key, value));
                continue;
            };
            if !sent.insert((row, part)) {
                return Err(D::Error::custom("a field sent twice"));
            }
            if preparers.len() <= row {
                preparers.resize_with(row + 1, PreparerForm::default);
            }
            *preparers[row].part_mut(PreparerPart::ALL[part]) = value;
        }
        let fields = Fields::deserialize(serde::de::value::MapDeserializer::<_, D::Error>::new(
            rest.into_iter(),
        ))?;
        Ok(Self { fields, preparers })
    }
}

/// The fields of Section 1 on the form.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Fields {
    last_name: String,
    first_name: String,
    middle_initial: String,
    other_last_names: String,
    address_street: String,
    address_apartment: String,
    address_city: String,
    address_state: String,
    address_zip: String,
    date_of_birth: String,
    social_security_number: String,
    email_address: String,
    phone_number: String,
    attestation: String,
    alien_number: String,
    work_authorization_expiration: String,
    admission_number: String,
    foreign_passport_number: String,
    foreign_passport_country: String,
    signature: String,
    agree: String,
    /// `none` ("I did not use a preparer or translator") or `assisted`; a
    /// form without it and without a filled row of Supplement A reads as
    /// `none` (docs/supplement-a.md).
    preparer: String,
    /// The button pressed: [`ADD_PREPARER`] shows one more row of
    /// Supplement A; any other value signs.
    action: String,
    /// The signed-in employee's form token (`/account/i9s/{id}/section1`;
    /// [`super::account::Session::csrf`]); the link's form has none.
    csrf: String,
}

/// The `action` of the button that adds a row to Supplement A.
const ADD_PREPARER: &str = "addPreparer";

/// The fields of one preparer and/or translator of Supplement A, in the
/// order the page shows them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PreparerPart {
    LastName,
    FirstName,
    MiddleInitial,
    Address,
    City,
    State,
    Zip,
    Agree,
    Signature,
    Date,
}

impl PreparerPart {
    const ALL: [PreparerPart; 10] = [
        Self::LastName,
        Self::FirstName,
        Self::MiddleInitial,
        Self::Address,
        Self::City,
        Self::State,
        Self::Zip,
        Self::Agree,
        Self::Signature,
        Self::Date,
    ];

    /// The most characters the field takes.
    fn max(self) -> usize {
        match self {
            Self::LastName | Self::FirstName => 40,
            Self::MiddleInitial => 1,
            Self::Address => 80,
            Self::City => 50,
            Self::State => 20,
            Self::Zip => 10,
            Self::Agree => 3,
            Self::Signature => 100,
            Self::Date => 10,
        }
    }

    /// The field's name on the page for preparer `row` (from 0).
    fn name(self, row: usize) -> &'static str {
        PREPARER_FIELDS[row][self as usize]
    }
}

/// `preparer{n}{Part}` for n = 1..=[`MAX_PREPARERS`], in the order of
/// [`PreparerPart::ALL`].
macro_rules! preparer_fields {
    ($($n:literal),*) => {
        [$([
            concat!("preparer", $n, "LastName"),
            concat!("preparer", $n, "FirstName"),
            concat!("preparer", $n, "MiddleInitial"),
            concat!("preparer", $n, "Address"),
            concat!("preparer", $n, "City"),
            concat!("preparer", $n, "State"),
            concat!("preparer", $n, "Zip"),
            concat!("preparer", $n, "Agree"),
            concat!("preparer", $n, "Signature"),
            concat!("preparer", $n, "Date"),
        ]),*]
    };
}

/// The names of the fields of Supplement A's rows.
const PREPARER_FIELDS: [[&str; 10]; MAX_PREPARERS] = preparer_fields!("1", "2", "3", "4", "5");

/// The row (from 0) and part of a field of Supplement A.
fn preparer_field(name: &str) -> Option<(usize, usize)> {
    PREPARER_FIELDS.iter().enumerate().find_map(|(row, names)| {
        names
            .iter()
            .position(|n| *n == name)
            .map(|part| (row, part))
    })
}

/// What one row of Supplement A sends.
#[derive(Default, Clone)]
struct PreparerForm {
    last_name: String,
    first_name: String,
    middle_initial: String,
    address: String,
    city: String,
    state: String,
    zip: String,
    agree: String,
    signature: String,
    date: String,
}

impl PreparerForm {
    /// A row with nothing typed, its date today's.
    fn blank(today: NaiveDate) -> Self {
        Self {
            date: today.to_string(),
            ..Self::default()
        }
    }

    fn part(&self, part: PreparerPart) -> &String {
        match part {
            PreparerPart::LastName => &self.last_name,
            PreparerPart::FirstName => &self.first_name,
            PreparerPart::MiddleInitial => &self.middle_initial,
            PreparerPart::Address => &self.address,
            PreparerPart::City => &self.city,
            PreparerPart::State => &self.state,
            PreparerPart::Zip => &self.zip,
            PreparerPart::Agree => &self.agree,
            PreparerPart::Signature => &self.signature,
            PreparerPart::Date => &self.date,
        }
    }

    fn part_mut(&mut self, part: PreparerPart) -> &mut String {
        match part {
            PreparerPart::LastName => &mut self.last_name,
            PreparerPart::FirstName => &mut self.first_name,
            PreparerPart::MiddleInitial => &mut self.middle_initial,
            PreparerPart::Address => &mut self.address,
            PreparerPart::City => &mut self.city,
            PreparerPart::State => &mut self.state,
            PreparerPart::Zip => &mut self.zip,
            PreparerPart::Agree => &mut self.agree,
            PreparerPart::Signature => &mut self.signature,
            PreparerPart::Date => &mut self.date,
        }
    }

    /// Nothing typed and the box unchecked: a row left blank is no
    /// preparer. The date does not count, the page filling it in.
    fn is_blank(&self) -> bool {
        PreparerPart::ALL
            .iter()
            .filter(|p| **p != PreparerPart::Date)
            .all(|p| self.part(*p).is_empty())
    }
}

impl Fields {
    /// Every field: its name on the page, the most characters it takes, its value.
    fn fields_mut(&mut self) -> [(&'static str, usize, &mut String); 22] {
        [
            ("lastName", 40, &mut self.last_name),
            ("firstName", 40, &mut self.first_name),
            ("middleInitial", 1, &mut self.middle_initial),
            ("otherLastNames", 40, &mut self.other_last_names),
            ("addressStreet", 80, &mut self.address_street),
            ("addressApartment", 80, &mut self.address_apartment),
            ("addressCity", 50, &mut self.address_city),
            ("addressState", 20, &mut self.address_state),
            ("addressZip", 10, &mut self.address_zip),
            ("dateOfBirth", 10, &mut self.date_of_birth),
            ("socialSecurityNumber", 11, &mut self.social_security_number),
            ("emailAddress", 80, &mut self.email_address),
            ("phoneNumber", 20, &mut self.phone_number),
            ("attestation", 30, &mut self.attestation),
            ("alienNumber", 15, &mut self.alien_number),
            (
                "workAuthorizationExpiration",
                10,
                &mut self.work_authorization_expiration,
            ),
            ("admissionNumber", 11, &mut self.admission_number),
            (
                "foreignPassportNumber",
                20,
                &mut self.foreign_passport_number,
            ),
            (
                "foreignPassportCountry",
                50,
                &mut self.foreign_passport_country,
            ),
            ("signature", 100, &mut self.signature),
            ("agree", 3, &mut self.agree),
            ("preparer", 10, &mut self.preparer),
        ]
    }
}

/// What the page needs of the link's I-9.
struct Link {
    request: uuid::Uuid,
    i9: Option<i64>,
    status: Option<I9Status>,
    lang: Lang,
    return_url: Option<String>,
    /// What the form shows before the employee types.
    prefill: SignForm,
}

impl Link {
    /// Whether its I-9 exists and awaits the employee's signature.
    fn signable(&self) -> bool {
        self.i9.is_some() && self.status.is_some_and(|s| s.allows(Step::SignSection1))
    }
}

/// A Section 1 link as `find` reads it: its request, its I-9 if created,
/// and what the form shows first (the I-9's data, else the employee's).
struct LinkRow {
    request: uuid::Uuid,
    i9_id: Option<i64>,
    status: Option<I9Status>,
    language_preference: Option<i16>,
    employee_return_url: Option<String>,
    last_name: Option<String>,
    first_name: Option<String>,
    middle_initial: Option<String>,
    other_name: Option<String>,
    date_of_birth: Option<NaiveDate>,
    address_street: Option<String>,
    address_apartment: Option<String>,
    address_city: Option<String>,
    address_state: Option<String>,
    address_zip: Option<String>,
    email_address: Option<String>,
}

/// Whose Section 1 a page is: the link's, or a signed-in employee's I-9.
pub(crate) enum Holder<'a> {
    /// The token of `/i9/section1/{token}`: unused and unexpired.
    Link(&'a str),
    /// An I-9 of the signed-in employee (`/account/i9s/{id}/section1`),
    /// whose link is unused; its expiry does not matter, the employee
    /// having signed in.
    Account {
        session: &'a super::account::Session,
        i9_id: i64,
    },
}

async fn find(state: &AppState, holder: &Holder<'_>) -> Result<Option<Link>, ApiError> {
    let (token, employee, i9) = match holder {
        Holder::Link(token) => (Some(token_hash(token)), None, None),
        Holder::Account { session, i9_id } => (None, Some(session.employee_id), Some(*i9_id)),
    };
    let row = sqlx::query_as!(
        LinkRow,
        r#"SELECT r.id AS request, r.i9_id, i.status AS "status?: I9Status", e.language_preference,
                  e.employee_return_url, COALESCE(i.last_name, e.last_name) AS last_name,
                  COALESCE(i.first_name, e.first_name) AS first_name, i.middle_initial AS "middle_initial?",
                  i.other_name AS "other_name?", COALESCE(i.date_of_birth, e.date_of_birth) AS date_of_birth,
                  i.address_street AS "address_street?", i.address_apartment AS "address_apartment?",
                  i.address_city AS "address_city?", i.address_state AS "address_state?",
                  i.address_zip AS "address_zip?", i.email_address AS "email_address?"
           FROM i9_requests r JOIN employees e ON e.id = r.employee_id LEFT JOIN i9s i ON i.id = r.i9_id
           WHERE r.id = COALESCE(
                   (SELECT id FROM i9_requests WHERE section1_token_hash = $1 AND section1_expires_at > now()),
                   (SELECT id FROM i9_requests WHERE employee_id = $2 AND i9_id = $3 LIMIT 1))
             AND r.section1_used_at IS NULL"#,
        token,
        employee,
        i9,
    )
    .fetch_optional(&state.pool)
    .await?;
    Ok(row.map(|r| {
        let opt = |v: Option<String>| v.unwrap_or_default();
        Link {
            request: r.request,
            i9: r.i9_id,
            status: r.status,
            lang: Lang::of_preference(r.language_preference),
            return_url: r.employee_return_url,
            prefill: SignForm {
                fields: Fields {
                    last_name: opt(r.last_name),
                    first_name: opt(r.first_name),
                    middle_initial: opt(r.middle_initial),
                    other_last_names: opt(r.other_name),
                    date_of_birth: r.date_of_birth.map(|d| d.to_string()).unwrap_or_default(),
                    address_street: opt(r.address_street),
                    address_apartment: opt(r.address_apartment),
                    address_city: opt(r.address_city),
                    address_state: opt(r.address_state),
                    address_zip: opt(r.address_zip),
                    email_address: opt(r.email_address),
                    ..Fields::default()
                },
                preparers: vec![PreparerForm::blank(state.config.today())],
            },
        }
    }))
}

/// The page of a form that does not work: the link's, or on the employee's
/// page, a form not waiting for them (signed, or not theirs).
fn gone(holder: &Holder<'_>, q: &Result<Query<LangQuery>, QueryRejection>) -> Response {
    match holder {
        Holder::Link(_) => super::pages::invalid_link_in(chosen(q, Lang::En)),
        Holder::Account { session, .. } => {
            super::account::not_waiting(chosen(q, Lang::of_preference(session.language_preference)))
        }
    }
}

fn invalid() -> Response {
    super::pages::invalid_link()
}

/// A page of one paragraph under the Section 1 title.
fn message(lang: Lang, text: &'static str) -> Response {
    let page = Message {
        lang: lang.code(),
        title: lang.text().title,
        text,
    };
    render(StatusCode::OK, &page, None)
}

/// The link before its I-9 exists (`api/templates/section1_preparing.html`).
#[derive(Template)]
#[template(path = "section1_preparing.html")]
struct Preparing {
    lang: &'static str,
    title: &'static str,
    t: &'static Text,
    seconds: u32,
}

/// One input of the form, as `api/templates/input.html` shows it: a text,
/// date, email or tel input, or (`kind` `select`) the list of `choices`.
struct Input<'a> {
    name: &'static str,
    label: &'static str,
    kind: &'static str,
    autocomplete: Option<&'static str>,
    inputmode: Option<&'static str>,
    /// What the browser may flag as not matching (the form is `novalidate`:
    /// the server's check is the rule).
    pattern: Option<&'static str>,
    maxlength: Option<u8>,
    choices: Vec<Choice>,
    required: bool,
    hint: Option<&'static str>,
    value: &'a str,
    error: Option<&'static str>,
}

impl Input<'_> {
    /// The ids of the hint and the error that describe the input.
    fn described_by(&self) -> Option<String> {
        let ids: Vec<String> = [
            (self.hint.is_some(), "hint"),
            (self.error.is_some(), "error"),
        ]
        .into_iter()
        .filter(|(shown, _)| *shown)
        .map(|(_, what)| format!("{}-{what}", self.name))
        .collect();
        (!ids.is_empty()).then(|| ids.join(" "))
    }
}

/// One option of a `select`.
struct Choice {
    value: &'static str,
    label: String,
    selected: bool,
}

/// The list of states and territories (attested::US_STATES), the one that
/// `value` names selected; first an empty choice, selected when none is.
fn state_choices(t: &Text, value: &str) -> Vec<Choice> {
    let chosen = attested::parse_us_state(value);
    std::iter::once(Choice {
        value: "",
        label: t.choose_state.to_owned(),
        selected: chosen.is_none(),
    })
    .chain(
        attested::US_STATES
            .iter()
            .zip(attested::US_STATE_NAMES)
            .map(|(&code, name)| Choice {
                value: code,
                label: format!("{code} – {name}"),
                selected: chosen == Some(code),
            }),
    )
    .collect()
}

/// The ZIP code as the page takes it: 5 digits, ZIP+4 with or without its dash.
const ZIP_PATTERN: &str = "[0-9]{5}(-?[0-9]{4})?";

/// One preparer and/or translator of Supplement A on the page.
struct PreparerRow<'a> {
    legend: String,
    /// Names, address, state and ZIP code.
    fields: Vec<Input<'a>>,
    /// The attestation's check box.
    agree: &'static str,
    agree_error: Option<&'static str>,
    /// The signature and the date, after the attestation.
    signing: Vec<Input<'a>>,
}

/// One choice of the attestation; the first carries the id the error
/// summary links to.
struct Radio {
    id: Option<&'static str>,
    value: &'static str,
    label: &'static str,
    checked: bool,
}

/// The Section 1 form (`api/templates/section1.html`).
#[derive(Template)]
#[template(path = "section1.html")]
struct FormPage<'a> {
    lang: &'static str,
    other: &'static str,
    title: &'static str,
    t: &'static Text,
    /// The error summary: each entry's field id (its link) and text, which
    /// names the field.
    summary: Vec<(&'static str, String)>,
    personal: Vec<Input<'a>>,
    radios: Vec<Radio>,
    attestation_error: Option<&'static str>,
    documents: Vec<Input<'a>>,
    agree_error: Option<&'static str>,
    signature: Input<'a>,
    /// Whether a preparer or translator assisted (`preparer`).
    preparer_radios: Vec<Radio>,
    preparer_error: Option<&'static str>,
    /// Supplement A: at least one row.
    preparers: Vec<PreparerRow<'a>>,
    /// Whether the page may show one more row.
    can_add: bool,
    add_action: &'static str,
    /// The signed-in employee's form token, sent back in a hidden field.
    csrf: Option<&'a str>,
}

/// A row of Supplement A with nothing typed (shown when a form has none).
static BLANK_PREPARER: PreparerForm = PreparerForm {
    last_name: String::new(),
    first_name: String::new(),
    middle_initial: String::new(),
    address: String::new(),
    city: String::new(),
    state: String::new(),
    zip: String::new(),
    agree: String::new(),
    signature: String::new(),
    date: String::new(),
};

impl<'a> FormPage<'a> {
    /// The form showing `f`, with `errors` (field, message) beside their fields.
    fn new(
        lang: Lang,
        f: &'a SignForm,
        errors: &'a [(&'static str, &'static str)],
        csrf: Option<&'a str>,
    ) -> Self {
        let t = lang.text();
        let error = |name: &str| errors.iter().find(|(e, _)| *e == name).map(|(_, m)| *m);
        // Every field says what a browser may fill in: a token, or `off`.
        let text = |name: &'static str, label: &'static str, value: &'a str| Input {
            name,
            label,
            kind: "text",
            autocomplete: Some("off"),
            inputmode: None,
            pattern: None,
            maxlength: None,
            choices: Vec::new(),
            required: false,
            hint: None,
            value,
            error: error(name),
        };
        let required = |name, label, value, autocomplete| Input {
            autocomplete: Some(autocomplete),
            required: true,
            ..text(name, label, value)
        };
        let personal = vec![
            required("lastName", t.last, &f.last_name, "family-name"),
            required("firstName", t.first, &f.first_name, "given-name"),
            Input {
                maxlength: Some(1),
                autocomplete: Some("additional-name"),
                ..text("middleInitial", t.middle, &f.middle_initial)
            },
            text("otherLastNames", t.other, &f.other_last_names),
            required(
                "addressStreet",
                t.street,
                &f.address_street,
                "address-line1",
            ),
            Input {
                autocomplete: Some("address-line2"),
                ..text("addressApartment", t.apt, &f.address_apartment)
            },
            required("addressCity", t.city, &f.address_city, "address-level2"),
            Input {
                kind: "select",
                choices: state_choices(t, &f.address_state),
                ..required("addressState", t.state, &f.address_state, "address-level1")
            },
            Input {
                inputmode: Some("numeric"),
                pattern: Some(ZIP_PATTERN),
                hint: Some(t.zip_hint),
                ..required("addressZip", t.zip, &f.address_zip, "postal-code")
            },
            Input {
                kind: "date",
                ..required("dateOfBirth", t.dob, &f.date_of_birth, "bday")
            },
            Input {
                inputmode: Some("numeric"),
                pattern: Some("[0-9]{3}-?[0-9]{2}-?[0-9]{4}"),
                hint: Some(t.ssn_hint),
                ..text("socialSecurityNumber", t.ssn, &f.social_security_number)
            },
            Input {
                kind: "email",
                autocomplete: Some("email"),
                ..text("emailAddress", t.email, &f.email_address)
            },
            Input {
                kind: "tel",
                autocomplete: Some("tel"),
                inputmode: Some("tel"),
                ..text("phoneNumber", t.phone, &f.phone_number)
            },
        ];
        // One box per attestation, in the form's order (the match is exhaustive).
        let radios = Attestation::ALL
            .iter()
            .enumerate()
            .map(|(i, &value)| Radio {
                id: (i == 0).then_some("attestation"),
                value: value.as_str(),
                label: match value {
                    Attestation::Citizen => t.citizen,
                    Attestation::NoncitizenNational => t.national,
                    Attestation::PermanentResident => t.resident,
                    Attestation::AlienAuthorizedToWork => t.alien,
                },
                checked: f.attestation == value.as_str(),
            })
            .collect();
        let documents = vec![
            Input {
                hint: Some(t.a_number_hint),
                ..text("alienNumber", t.a_number, &f.alien_number)
            },
            Input {
                hint: Some(t.expires_hint),
                ..text(
                    "workAuthorizationExpiration",
                    t.expires,
                    &f.work_authorization_expiration,
                )
            },
            Input {
                hint: Some(t.admission_hint),
                ..text("admissionNumber", t.admission, &f.admission_number)
            },
            text(
                "foreignPassportNumber",
                t.passport,
                &f.foreign_passport_number,
            ),
            text(
                "foreignPassportCountry",
                t.country,
                &f.foreign_passport_country,
            ),
        ];
        let signature = Input {
            required: true,
            hint: Some(t.signature_hint),
            ..text("signature", t.signature, &f.signature)
        };
        let preparer_radios = [("none", t.no_preparer), ("assisted", t.assisted)]
            .into_iter()
            .enumerate()
            .map(|(i, (value, label))| Radio {
                id: (i == 0).then_some("preparer"),
                value,
                label,
                checked: f.preparer == value,
            })
            .collect();
        // A preparer's fields: `off`, a browser filling them in with the
        // employee's own name and address (docs/supplement-a.md).
        let rows: &'a [PreparerForm] = match f.preparers.as_slice() {
            [] => std::slice::from_ref(&BLANK_PREPARER),
            rows => rows,
        };
        let preparers = rows
            .iter()
            .enumerate()
            .map(|(row, p)| {
                let field = |part: PreparerPart, label| text(part.name(row), label, p.part(part));
                let required = |part, label| Input {
                    required: true,
                    ..field(part, label)
                };
                PreparerRow {
                    legend: format!("{} {}", t.preparer_n, row + 1),
                    fields: vec![
                        required(PreparerPart::LastName, t.last),
                        required(PreparerPart::FirstName, t.first),
                        Input {
                            maxlength: Some(1),
                            ..field(PreparerPart::MiddleInitial, t.middle)
                        },
                        required(PreparerPart::Address, t.street),
                        required(PreparerPart::City, t.city),
                        Input {
                            kind: "select",
                            choices: state_choices(t, &p.state),
                            ..required(PreparerPart::State, t.state)
                        },
                        Input {
                            inputmode: Some("numeric"),
                            pattern: Some(ZIP_PATTERN),
                            ..required(PreparerPart::Zip, t.zip)
                        },
                    ],
                    agree: PreparerPart::Agree.name(row),
                    agree_error: error(PreparerPart::Agree.name(row)),
                    signing: vec![
                        required(PreparerPart::Signature, t.preparer_signature),
                        Input {
                            kind: "date",
                            ..required(PreparerPart::Date, t.preparer_date)
                        },
                    ],
                }
            })
            .collect::<Vec<_>>();
        Self {
            lang: lang.code(),
            other: lang.other().code(),
            title: t.title,
            t,
            summary: errors
                .iter()
                .map(|&(field, message)| (field, format!("{}: {message}", t.summary_name(field))))
                .collect(),
            personal,
            radios,
            attestation_error: error("attestation"),
            documents,
            agree_error: error("agree"),
            signature,
            preparer_radios,
            preparer_error: error("preparer"),
            can_add: preparers.len() < MAX_PREPARERS,
            preparers,
            add_action: ADD_PREPARER,
            csrf,
        }
    }
}

/// The form, whose signing redirects to `return_url`.
fn form_page(
    status: StatusCode,
    lang: Lang,
    form: &SignForm,
    errors: &[(&'static str, &'static str)],
    return_url: Option<&str>,
    csrf: Option<&str>,
) -> Response {
    render(status, &FormPage::new(lang, form, errors, csrf), return_url)
}

/// `GET /i9/section1/{token}`.
pub async fn show(
    State(state): State<AppState>,
    token: Result<Path<String>, PathRejection>,
    q: Result<Query<LangQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Ok(Path(token)) = token else {
        return Ok(invalid());
    };
    show_form(&state, Holder::Link(&token), &q).await
}

/// The Section 1 page of `holder`: the form, the page saying the I-9 is
/// being prepared, or the link that does not work.
pub(crate) async fn show_form(
    state: &AppState,
    holder: Holder<'_>,
    q: &Result<Query<LangQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Some(link) = find(state, &holder).await? else {
        return Ok(gone(&holder, q));
    };
    let lang = chosen(q, link.lang);
    if link.i9.is_none() {
        let page = Preparing {
            lang: lang.code(),
            title: lang.text().title,
            t: lang.text(),
            seconds: PREPARING_RETRY_SECS,
        };
        let mut response = render(StatusCode::OK, &page, None);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(PREPARING_RETRY_SECS));
        return Ok(response);
    }
    if !link.signable() {
        return Ok(gone(&holder, q));
    }
    let csrf = match &holder {
        Holder::Account { session, .. } => Some(session.csrf()),
        Holder::Link(_) => None,
    };
    Ok(form_page(
        StatusCode::OK,
        lang,
        &link.prefill,
        &[],
        link.return_url.as_deref(),
        csrf.as_deref(),
    ))
}

/// The value when there is one.
fn opt(v: &str) -> Option<&str> {
    (!v.is_empty()).then_some(v)
}

/// The document numbers an I-9 keeps: those of its attestation only
/// (docs/api.md, "Web pages for employees"). A citizen or noncitizen
/// national keeps none, a lawful permanent resident the A-Number, a
/// noncitizen authorized to work what was given.
#[derive(Default)]
struct Documents {
    alien_number: Option<String>,
    admission_number: Option<String>,
    foreign_passport_number: Option<String>,
    foreign_passport_country: Option<String>,
}

/// An SSN typed as 9 digits (a phone's number pad has no dash) as
/// `###-##-####`; anything else as typed, for [`Ssn::parse`] to judge.
fn ssn_dashes(s: &str) -> std::borrow::Cow<'_, str> {
    if s.len() == 9 && s.bytes().all(|c| c.is_ascii_digit()) {
        format!("{}-{}-{}", &s[..3], &s[3..5], &s[5..]).into()
    } else {
        s.into()
    }
}

/// Supplement A as the form sends it (docs/supplement-a.md): the rows that
/// are not blank, each checked as a preparer, in their order; the choice
/// "I did not use a preparer or translator" / "A preparer(s) and/or
/// translator(s) assisted" agreeing with them. Every error found is pushed;
/// the preparers are whole only when none is.
fn check_preparers(
    f: &mut SignForm,
    t: &Text,
    today: NaiveDate,
    errors: &mut Vec<(&'static str, &'static str)>,
) -> Vec<Preparer> {
    let filled = f.preparers.iter().any(|p| !p.is_blank());
    match (f.preparer.as_str(), filled) {
        ("assisted", false) => errors.push(("preparer", t.need_preparer)),
        ("none" | "", true) => errors.push(("preparer", t.preparer_conflict)),
        ("assisted", true) | ("none" | "", false) => {}
        _ => errors.push(("preparer", t.choose_preparer)),
    }
    let mut preparers = Vec::new();
    for (row, p) in f.preparers.iter_mut().enumerate() {
        if p.is_blank() {
            continue;
        }
        let name = |part: PreparerPart| part.name(row);
        for part in [
            PreparerPart::LastName,
            PreparerPart::FirstName,
            PreparerPart::Address,
            PreparerPart::City,
            PreparerPart::State,
            PreparerPart::Zip,
            PreparerPart::Signature,
            PreparerPart::Date,
        ] {
            if p.part(part).is_empty() {
                errors.push((name(part), t.required));
            }
        }
        if p.agree != "yes" {
            errors.push((name(PreparerPart::Agree), t.check_box));
        }
        let state = match p.state.as_str() {
            "" => None,
            s => {
                let code = attested::parse_us_state(s);
                if code.is_none() {
                    errors.push((name(PreparerPart::State), t.bad_state));
                }
                code
            }
        };
        let zip = match p.zip.as_str() {
            "" => None,
            s => {
                let zip = attested::parse_zip(s);
                if zip.is_none() {
                    errors.push((name(PreparerPart::Zip), t.bad_zip));
                }
                zip
            }
        };
        // Signed the day Section 1 is: the date is today's.
        let signed_on = match p.date.as_str() {
            "" => None,
            s => match parse_date(s) {
                Ok(d) => {
                    p.date = d.to_string();
                    if d != today {
                        errors.push((name(PreparerPart::Date), t.not_today));
                    }
                    Some(d)
                }
                Err(_) => {
                    errors.push((name(PreparerPart::Date), t.bad_date));
                    None
                }
            },
        };
        // The preparer's own name, as the employee's signature is checked.
        if !p.signature.is_empty()
            && !signs_as(&p.signature, &format!("{} {}", p.first_name, p.last_name))
        {
            errors.push((name(PreparerPart::Signature), t.preparer_sign_mismatch));
        }
        if let (Some(state), Some(zip), Some(signed_on)) = (state, zip, signed_on) {
            let opt = |v: &str| opt(v).map(str::to_owned);
            preparers.push(Preparer {
                last_name: p.last_name.clone(),
                first_name: p.first_name.clone(),
                middle_initial: opt(&p.middle_initial),
                address: p.address.clone(),
                city: p.city.clone(),
                state: state.to_owned(),
                zip,
                signature: p.signature.clone(),
                signed_on,
            });
        }
    }
    preparers
}

/// `POST /i9/section1/{token}`.
pub async fn sign(
    State(state): State<AppState>,
    RequestId(request_id): RequestId,
    token: Result<Path<String>, PathRejection>,
    q: Result<Query<LangQuery>, QueryRejection>,
    form: Result<PageForm<SignForm>, Unreadable>,
) -> Result<Response, ApiError> {
    let Ok(Path(token)) = token else {
        return Ok(invalid());
    };
    sign_form(&state, request_id, Holder::Link(&token), &q, form).await
}

/// Sign the Section 1 of `holder` with what the form sent, or show the form
/// again with its errors.
pub(crate) async fn sign_form(
    state: &AppState,
    request_id: Option<String>,
    holder: Holder<'_>,
    q: &Result<Query<LangQuery>, QueryRejection>,
    form: Result<PageForm<SignForm>, Unreadable>,
) -> Result<Response, ApiError> {
    let Some(link) = find(state, &holder).await? else {
        return Ok(gone(&holder, q));
    };
    let lang = chosen(q, link.lang);
    let t = lang.text();
    let Some(i9) = link.i9.filter(|_| link.signable()) else {
        return Ok(gone(&holder, q));
    };
    let mut f = match form {
        Ok(PageForm(f)) => f,
        Err(why) => return Ok(unreadable_form(why, lang.code())),
    };
    // Who signs: the link's holder, who has no account (the audit entry
    // names the request only), or the signed-in employee, whose form must
    // carry its session's token (a form posted from another site has none).
    let (actor, link_token, csrf) = match &holder {
        Holder::Link(token) => (
            Actor {
                request_id,
                ..Actor::default()
            },
            Some(token_hash(token)),
            None,
        ),
        Holder::Account { session, .. } => {
            if !session.csrf_matches(&f.csrf) {
                return Ok(super::account::stale_form(lang));
            }
            (
                Actor {
                    user_id: Some(session.user_id),
                    client_id: None,
                    request_id,
                },
                None,
                Some(session.csrf()),
            )
        }
    };
    let today = state.config.today();
    // "Add another preparer or translator": the same form, one row more,
    // nothing checked or signed.
    if f.action == ADD_PREPARER {
        if f.preparers.is_empty() {
            f.preparers.push(PreparerForm::default());
        }
        if f.preparers.len() < MAX_PREPARERS {
            f.preparers.push(PreparerForm::blank(today));
        }
        return Ok(form_page(
            StatusCode::OK,
            lang,
            &f,
            &[],
            link.return_url.as_deref(),
            csrf.as_deref(),
        ));
    }
    let mut errors: Vec<(&'static str, &'static str)> = Vec::new();
    // A field holding NUL (text.rs) reads as empty, with this error first.
    for (name, _, value) in f.fields_mut() {
        *value = value.trim().to_owned();
        if crate::text::check(value).is_err() {
            value.clear();
            errors.push((name, t.unreadable));
        }
    }
    for (name, max, value) in f.fields_mut() {
        if value.chars().count() > max {
            errors.push((name, t.too_long));
        }
    }
    for (row, p) in f.preparers.iter_mut().enumerate() {
        for part in PreparerPart::ALL {
            let value = p.part_mut(part);
            *value = value.trim().to_owned();
            if crate::text::check(value).is_err() {
                value.clear();
                errors.push((part.name(row), t.unreadable));
            } else if value.chars().count() > part.max() {
                errors.push((part.name(row), t.too_long));
            }
        }
    }
    for (name, value) in [
        ("lastName", &f.last_name),
        ("firstName", &f.first_name),
        ("addressStreet", &f.address_street),
        ("addressCity", &f.address_city),
        ("addressState", &f.address_state),
        ("addressZip", &f.address_zip),
        ("dateOfBirth", &f.date_of_birth),
    ] {
        if value.is_empty() {
            errors.push((name, t.required));
        }
    }
    // Not in the future, nor before 1900 (docs/api.md, "Web pages for employees").
    let dob = match f.date_of_birth.as_str() {
        "" => None,
        s => match parse_birth_date(s, today) {
            // Shown again as YYYY-MM-DD, the value of a date input.
            Ok(d) => {
                f.date_of_birth = d.to_string();
                Some(d)
            }
            Err(e) => {
                let message = match e {
                    BirthDateError::NotADate => t.bad_date,
                    BirthDateError::TooEarly => t.early_birth,
                    BirthDateError::Future => t.future_birth,
                };
                errors.push(("dateOfBirth", message));
                None
            }
        },
    };
    // The state and ZIP code as USCIS asks them, the state stored upper-case.
    let us_state = match f.address_state.as_str() {
        "" => None,
        s => {
            let code = attested::parse_us_state(s);
            if code.is_none() {
                errors.push(("addressState", t.bad_state));
            }
            code
        }
    };
    let zip = match f.address_zip.as_str() {
        "" => None,
        s => {
            let zip = attested::parse_zip(s);
            if zip.is_none() {
                errors.push(("addressZip", t.bad_zip));
            }
            zip
        }
    };
    let ssn = match f.social_security_number.as_str() {
        "" => None,
        s => match Ssn::parse(&ssn_dashes(s)) {
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
    let mut expires = None;
    // The documents the attestation uses, read; the others are not kept.
    let mut documents = Documents::default();
    let a_number = |errors: &mut Vec<_>| match f.alien_number.as_str() {
        "" => None,
        s => {
            let n = attested::parse_a_number(s);
            if n.is_none() {
                errors.push(("alienNumber", t.bad_a_number));
            }
            n
        }
    };
    let attestation = Attestation::parse(&f.attestation);
    match attestation {
        Some(Attestation::Citizen | Attestation::NoncitizenNational) => {}
        Some(Attestation::PermanentResident) => {
            if f.alien_number.is_empty() {
                errors.push(("alienNumber", t.need_a_number));
            }
            documents.alien_number = a_number(&mut errors);
        }
        Some(Attestation::AlienAuthorizedToWork) => {
            documents.alien_number = a_number(&mut errors);
            documents.admission_number = match f.admission_number.as_str() {
                "" => None,
                s => {
                    let n = attested::parse_admission_number(s);
                    if n.is_none() {
                        errors.push(("admissionNumber", t.bad_admission));
                    }
                    n
                }
            };
            documents.foreign_passport_number = opt(&f.foreign_passport_number).map(str::to_owned);
            documents.foreign_passport_country =
                opt(&f.foreign_passport_country).map(str::to_owned);
            match f.work_authorization_expiration.as_str() {
                "" => {}
                s if s.eq_ignore_ascii_case("N/A") => {}
                s => match parse_date(s) {
                    Ok(d) if d < today => errors.push(("workAuthorizationExpiration", t.expired)),
                    Ok(d) => expires = Some(d),
                    Err(_) => errors.push(("workAuthorizationExpiration", t.bad_date)),
                },
            }
            if f.work_authorization_expiration.is_empty() {
                errors.push(("workAuthorizationExpiration", t.need_expiry));
            }
            let passport =
                !f.foreign_passport_number.is_empty() && !f.foreign_passport_country.is_empty();
            if f.alien_number.is_empty() && f.admission_number.is_empty() && !passport {
                errors.push(("alienNumber", t.need_alien_doc));
            }
        }
        None => errors.push(("attestation", t.choose_one)),
    }
    if f.agree != "yes" {
        errors.push(("agree", t.check_box));
    }
    if f.signature.is_empty() {
        errors.push(("signature", t.required));
    } else if !signs_as(&f.signature, &format!("{} {}", f.first_name, f.last_name)) {
        errors.push(("signature", t.sign_mismatch));
    }
    let preparers = check_preparers(&mut f, t, today, &mut errors);
    // One error per field, the first found (a value too long is not also
    // told its format).
    let mut seen = std::collections::HashSet::new();
    errors.retain(|(field, _)| seen.insert(*field));
    // All are among the checks above: with no error, all are here.
    let (true, Some(date_of_birth), Some(attestation), Some(us_state), Some(zip)) =
        (errors.is_empty(), dob, attestation, us_state, zip)
    else {
        return Ok(form_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            lang,
            &f,
            &errors,
            link.return_url.as_deref(),
            csrf.as_deref(),
        ));
    };

    let opt = |v: &str| opt(v).map(str::to_owned);
    let section1 = Section1 {
        signed_on: today,
        last_name: f.last_name.clone(),
        first_name: f.first_name.clone(),
        middle_initial: opt(&f.middle_initial),
        other_last_names: opt(&f.other_last_names),
        address_street: f.address_street.clone(),
        address_apartment: opt(&f.address_apartment),
        address_city: f.address_city.clone(),
        address_state: us_state.to_owned(),
        address_zip: zip,
        date_of_birth,
        ssn,
        email_address: opt(&f.email_address),
        phone_number: opt(&f.phone_number),
        attestation,
        work_authorization_expiration: expires,
        alien_number: documents.alien_number,
        admission_number: documents.admission_number,
        foreign_passport_number: documents.foreign_passport_number,
        foreign_passport_country: documents.foreign_passport_country,
        preparers,
    };
    let mut tx = state.pool.begin().await?;
    match lifecycle::sign_section1(
        &mut tx,
        &state.cipher,
        &actor,
        i9,
        lifecycle::SigningLink {
            request: link.request,
            token_hash: link_token.as_deref(),
        },
        &section1,
        &state.config.public_base_url,
    )
    .await
    {
        Ok(()) => tx.commit().await?,
        // Signed or used a moment ago by another submission, or the link
        // replaced meanwhile: nothing written.
        Err(WriteError::IllegalStep(_) | WriteError::Conflict(_) | WriteError::NotFound) => {
            return Ok(gone(&holder, q))
        }
        Err(e) => return Err(e.into()),
    }
    if let Holder::Account { .. } = holder {
        // Back to the employee's page, which shows the form as signed.
        return Ok(super::account::to_home(lang));
    }
    match link
        .return_url
        .and_then(|u| header::HeaderValue::from_str(&u).ok())
    {
        Some(url) => Ok((StatusCode::SEE_OTHER, [(header::LOCATION, url)]).into_response()),
        None => Ok(message(lang, t.done)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_employee_typed_is_shown_escaped_and_errors_sit_by_their_fields() {
        let typed = SignForm {
            fields: Fields {
                last_name: r#""><script>alert('x')</script>&"#.into(),
                attestation: "citizen".into(),
                ..Fields::default()
            },
            preparers: vec![PreparerForm {
                city: "<b>Salem</b>".into(),
                ..PreparerForm::default()
            }],
        };
        let errors = [("lastName", ES.too_long), ("signature", ES.required)];
        let html = FormPage::new(Lang::Es, &typed, &errors, None)
            .render()
            .unwrap();
        assert!(!html.contains("<script"), "{html}");
        assert!(
            html.contains(
                r#"value="&#34;&#62;&#60;script&#62;alert(&#39;x&#39;)&#60;/script&#62;&#38;""#
            ),
            "{html}"
        );
        assert!(html.starts_with("<!doctype html>\n<html lang=\"es\">"));
        assert!(html.contains(r#"aria-describedby="lastName-error" aria-invalid="true"><p class="error" id="lastName-error">Es demasiado largo.</p>"#));
        assert!(html.contains(r#"aria-describedby="signature-hint signature-error""#));
        assert!(html.contains(r#"value="citizen" checked>"#));
        assert_eq!(html.matches(" checked").count(), 1);
        assert!(html.contains(r#"<a href="?lang=en" lang="en">View in English</a>"#));
        assert!(html.contains(r#"id="preparer1City" name="preparer1City" type="text" value="&#60;b&#62;Salem&#60;/b&#62;""#), "{html}");
    }

    #[test]
    fn each_preparer_field_has_one_name_and_the_summary_numbers_it() {
        assert_eq!(preparer_field("preparer1LastName"), Some((0, 0)));
        assert_eq!(preparer_field("preparer5Date"), Some((4, 9)));
        for other in [
            "preparer",
            "preparer6LastName",
            "preparer0City",
            "lastName",
            "preparer1",
        ] {
            assert_eq!(preparer_field(other), None, "{other}");
        }
        for (row, names) in PREPARER_FIELDS.iter().enumerate() {
            for (part, name) in PreparerPart::ALL.iter().zip(names) {
                assert_eq!(part.name(row), *name);
            }
        }
        assert_eq!(
            EN.summary_name("preparer2State"),
            "Preparer or translator 2: State"
        );
        assert_eq!(
            ES.summary_name("preparer3Date"),
            "Preparador o traductor 3: Fecha de hoy"
        );
        assert_eq!(EN.summary_name("addressState"), "State");
    }

    #[test]
    fn a_blank_row_is_no_preparer_whatever_its_date() {
        let today = chrono::Utc::now().date_naive();
        assert!(PreparerForm::blank(today).is_blank());
        for part in PreparerPart::ALL {
            let mut p = PreparerForm::blank(today);
            *p.part_mut(part) = "x".into();
            assert_eq!(p.is_blank(), part == PreparerPart::Date);
        }
    }

    #[test]
    fn an_ssn_of_nine_digits_gets_its_dashes() {
        assert_eq!(ssn_dashes("456789012"), "456-78-9012");
        assert_eq!(ssn_dashes("456-78-9012"), "456-78-9012");
        assert_eq!(ssn_dashes("45678901"), "45678901");
    }

    #[test]
    fn the_preparing_page_says_when_it_looks_again() {
        for lang in [Lang::En, Lang::Es] {
            let page = Preparing {
                lang: lang.code(),
                title: lang.text().title,
                t: lang.text(),
                seconds: PREPARING_RETRY_SECS,
            };
            let html = page.render().unwrap();
            assert!(
                html.contains(&format!(
                    r#"<meta http-equiv="refresh" content="{PREPARING_RETRY_SECS}">"#
                )),
                "{html}"
            );
            let (before, after) = lang.text().looks_again;
            assert!(
                html.contains(&format!("{before} {PREPARING_RETRY_SECS} {after}")),
                "{html}"
            );
        }
    }
}
