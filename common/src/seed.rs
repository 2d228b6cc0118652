//! `i9-admin seed FILE`: load an organization shaped like `fixtures/org.json`.
//!
//! The whole file is parsed and checked before anything is written; every
//! problem is reported with the entry and field it concerns. The load runs in
//! one transaction, so a failure leaves nothing half-loaded. Records are
//! matched on their natural keys (legal entity `key`, group and role `name`,
//! user `login`, `clientId`, employee `profileId`), so a second run with the
//! same file changes nothing.
//!
//! A partner's signing secret is the file's only when the client is new:
//! afterwards the stored one is kept unless the run rotates
//! ([`Options::rotate_secrets`]). A secret the client replaced is never made
//! current again: a run that does not rotate keeps the stored one and says
//! so (an old copy of the file still loads), a run that rotates to it is
//! refused (docs/operations.md, "Rotating a partner's signing secret"). Outside
//! development, [`check_for_production`] refuses the example organization's
//! published credentials and weak passwords.

use std::collections::{BTreeMap, HashMap, HashSet};

use base64::{engine::general_purpose::STANDARD, Engine as _};
use chrono::{Datelike, NaiveDate};
use serde::Deserialize;
use sqlx::{PgPool, Postgres, Transaction};

use crate::{
    crypto::{hash_password, verify_password, DataCipher, Purpose},
    domain::{
        fields::{BirthDate, CalendarDate, Email, PersonName, Text},
        parse_date, password, FromJson, Invalid, Language, Permission, Scopes, Ssn,
    },
    models::{
        audit,
        employee::{self, EmployeeFields, Period},
        Actor, WriteError,
    },
    signing_secrets,
};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrgFile {
    #[serde(default)]
    pub legal_entities: Vec<LegalEntity>,
    #[serde(default)]
    pub groups: Vec<Group>,
    #[serde(default)]
    pub roles: Vec<Role>,
    #[serde(default)]
    pub users: Vec<User>,
    #[serde(default)]
    pub clients: Vec<Client>,
    #[serde(default)]
    pub employees: Vec<Employee>,
    /// The organization's closed days (docs/calendar.md): added, or renamed;
    /// a day the file does not list is left as it is.
    #[serde(default)]
    pub closed_days: Vec<ClosedDay>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClosedDay {
    pub date: String,
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegalEntity {
    pub key: String,
    pub entity_name: String,
    #[serde(default)]
    pub ein: String,
    pub everify_id: Option<String>,
    pub everify_effective_date: Option<String>,
    pub everify_status: Option<String>,
    #[serde(default = "yes")]
    pub active: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Group {
    pub name: String,
    pub parent: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Role {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub permissions: Vec<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct User {
    pub login: String,
    pub password: String,
    pub first_name: String,
    pub last_name: String,
    pub middle_name: Option<String>,
    pub title: Option<String>,
    pub email_address: Option<String>,
    pub role: String,
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub retired: bool,
    pub profile_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Client {
    pub client_id: String,
    pub client_secret: String,
    pub scopes: Vec<String>,
    pub integration: Option<Integration>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Integration {
    pub client_system: String,
    pub hr_url: String,
    pub signing_secret: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Employee {
    pub first_name: String,
    pub last_name: String,
    pub middle_name: Option<String>,
    pub social_security_number: Option<String>,
    pub date_of_birth: Option<String>,
    pub start_date: Option<String>,
    pub terminated_date: Option<String>,
    pub profile_id: String,
    pub other_name: Option<String>,
    pub job_title: Option<String>,
    pub email_address: Option<String>,
    pub location: String,
    pub legal_entity: Option<String>,
    pub language_preference: Option<i16>,
    pub address_street: Option<String>,
    pub address_street2: Option<String>,
    pub address_apartment: Option<String>,
    pub address_city: Option<String>,
    pub address_state: Option<String>,
    pub address_country: Option<String>,
    pub address_zip: Option<String>,
    pub work_number: Option<String>,
    pub home_number: Option<String>,
    pub cell_number: Option<String>,
}

/// What a run did to one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
}

impl Outcome {
    fn of(inserted: Option<bool>) -> Self {
        match inserted {
            Some(true) => Outcome::Created,
            Some(false) => Outcome::Updated,
            None => Outcome::Unchanged,
        }
    }

    fn or(self, changed: bool) -> Self {
        if self == Outcome::Unchanged && changed {
            Outcome::Updated
        } else {
            self
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "unchanged",
        }
    }
}

/// One line of the report: kind, natural key, assigned id, outcome.
#[derive(Debug, Clone)]
pub struct Assigned {
    pub kind: &'static str,
    pub key: String,
    pub id: i64,
    pub outcome: Outcome,
}

#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error("the file is not valid:\n  {}", .0.join("\n  "))]
    Invalid(Vec<String>),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Parse a seed file, naming the entry and field of a structural error.
pub fn parse(text: &str) -> Result<OrgFile, SeedError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        SeedError::Invalid(vec![format!("{path}: {}", e.inner())])
    })
}

struct Checked {
    dates: HashMap<String, Option<NaiveDate>>,
    /// Each employee's fields, read by the domain's own parsers (the API's
    /// rules), without its group and legal entity (names in the file).
    employees: Vec<(EmployeeFields, Period)>,
    group_order: Vec<usize>,
}

fn check(org: &OrgFile) -> Result<Checked, SeedError> {
    let mut errors = Vec::new();
    let mut dates = HashMap::new();
    let mut date = |errors: &mut Vec<String>, at: String, v: Option<&str>| match v {
        None => {
            dates.insert(at, None);
        }
        Some(s) => match parse_date(s) {
            Ok(d) => {
                dates.insert(at, Some(d));
            }
            Err(e) => errors.push(format!("{at}: {e}")),
        },
    };

    let mut keys = HashSet::new();
    for (i, le) in org.legal_entities.iter().enumerate() {
        let at = format!("legalEntities[{i}]");
        if le.key.trim().is_empty() || !keys.insert(le.key.as_str()) {
            errors.push(format!("{at}.key: missing or used twice ({:?})", le.key));
        }
        if le.entity_name.trim().is_empty() {
            errors.push(format!("{at}.entityName: must not be empty"));
        }
        let ein_ok = le.ein.is_empty()
            || (le.ein.len() == 10
                && le.ein.as_bytes()[2] == b'-'
                && le
                    .ein
                    .bytes()
                    .enumerate()
                    .all(|(i, c)| i == 2 || c.is_ascii_digit()));
        if !ein_ok {
            errors.push(format!("{at}.ein: must be empty or written ##-#######"));
        }
        if let Some(id) = &le.everify_id {
            if id.is_empty() || !id.bytes().all(|c| c.is_ascii_digit()) {
                errors.push(format!("{at}.everifyId: must be a numeric account id"));
            }
        }
        date(
            &mut errors,
            format!("{at}.everifyEffectiveDate"),
            le.everify_effective_date.as_deref(),
        );
    }

    let mut days = HashSet::new();
    for (i, cd) in org.closed_days.iter().enumerate() {
        let at = format!("closedDays[{i}]");
        date(&mut errors, format!("{at}.date"), Some(&cd.date));
        if let Ok(d) = parse_date(&cd.date) {
            if !days.insert(d) {
                errors.push(format!("{at}.date: {d} is listed twice"));
            }
        }
        let len = cd.name.trim().chars().count();
        if len == 0 || len > 100 {
            errors.push(format!("{at}.name: must be 1 to 100 characters"));
        }
    }

    let group_names: HashMap<String, usize> = org
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.name.to_lowercase(), i))
        .collect();
    let mut seen = HashSet::new();
    for (i, g) in org.groups.iter().enumerate() {
        let at = format!("groups[{i}]");
        if g.name.trim().is_empty() || !seen.insert(g.name.to_lowercase()) {
            errors.push(format!("{at}.name: missing or used twice ({:?})", g.name));
        }
        if let Some(p) = &g.parent {
            if !group_names.contains_key(&p.to_lowercase()) {
                errors.push(format!("{at}.parent: no group named {p:?} in the file"));
            }
        }
    }
    // Parents before children; a cycle is an error.
    let mut group_order = Vec::new();
    let mut placed = HashSet::new();
    while group_order.len() < org.groups.len() {
        let before = group_order.len();
        for (i, g) in org.groups.iter().enumerate() {
            if placed.contains(&i) {
                continue;
            }
            let ready = match &g.parent {
                None => true,
                Some(p) => group_names
                    .get(&p.to_lowercase())
                    .is_none_or(|pi| placed.contains(pi)),
            };
            if ready {
                placed.insert(i);
                group_order.push(i);
            }
        }
        if group_order.len() == before {
            errors.push("groups: the parents form a cycle".to_owned());
            break;
        }
    }

    let mut roles = HashSet::new();
    for (i, r) in org.roles.iter().enumerate() {
        let at = format!("roles[{i}]");
        if r.name.trim().is_empty() || !roles.insert(r.name.to_lowercase()) {
            errors.push(format!("{at}.name: missing or used twice ({:?})", r.name));
        }
        for (j, p) in r.permissions.iter().enumerate() {
            if Permission::from_id(*p).is_none() {
                errors.push(format!(
                    "{at}.permissions[{j}]: {p} is not a permission (1 to 12)"
                ));
            }
        }
    }

    let mut logins = HashSet::new();
    for (i, u) in org.users.iter().enumerate() {
        let at = format!("users[{i}]");
        if u.login.trim().is_empty() || !logins.insert(u.login.to_lowercase()) {
            errors.push(format!("{at}.login: missing or used twice ({:?})", u.login));
        }
        // The set-password page's length rule; outside development,
        // [`check_for_production`] applies the rest of it.
        if u.password.chars().count() < password::MIN_CHARS {
            errors.push(format!(
                "{at}.password: at least {} characters",
                password::MIN_CHARS
            ));
        }
        if u.first_name.trim().is_empty() {
            errors.push(format!("{at}.firstName: must not be empty"));
        }
        if u.last_name.trim().is_empty() {
            errors.push(format!("{at}.lastName: must not be empty"));
        }
        if !roles.contains(&u.role.to_lowercase()) {
            errors.push(format!("{at}.role: no role named {:?} in the file", u.role));
        }
        for (j, g) in u.groups.iter().enumerate() {
            if !group_names.contains_key(&g.to_lowercase()) {
                errors.push(format!(
                    "{at}.groups[{j}]: no group named {g:?} in the file"
                ));
            }
        }
    }

    let mut clients = HashSet::new();
    for (i, c) in org.clients.iter().enumerate() {
        let at = format!("clients[{i}]");
        if c.client_id.trim().is_empty() || !clients.insert(c.client_id.as_str()) {
            errors.push(format!(
                "{at}.clientId: missing or used twice ({:?})",
                c.client_id
            ));
        }
        if c.client_secret.chars().count() < 12 {
            errors.push(format!("{at}.clientSecret: at least 12 characters"));
        }
        if Scopes::from_list(&c.scopes).is_none() {
            errors.push(format!(
                "{at}.scopes: a non-empty list of \"read\" and \"write\""
            ));
        }
        if let Some(int) = &c.integration {
            if int.client_system.trim().is_empty() {
                errors.push(format!("{at}.integration.clientSystem: must not be empty"));
            }
            // The deployment's own rule is [`check_callback_urls`]'s.
            if crate::destination::check_callback_url(&int.hr_url, true).is_err() {
                errors.push(format!("{at}.integration.hrUrl: must be an http(s) URL"));
            }
            if decode_signing_secret(&int.signing_secret).is_none() {
                errors.push(format!(
                    "{at}.integration.signingSecret: must be whsec_ followed by base64 of 24 to 64 bytes"
                ));
            }
        }
    }

    let mut employees = Vec::new();
    let mut profile_ids = HashSet::new();
    let mut ssn_seen = HashSet::new();
    for (i, e) in org.employees.iter().enumerate() {
        let at = format!("employees[{i}]");
        if e.profile_id.trim().is_empty() || !profile_ids.insert(e.profile_id.to_lowercase()) {
            errors.push(format!(
                "{at}.profileId: missing or used twice ({:?})",
                e.profile_id
            ));
        }
        let (fields, period) = employee_fields(e, &at, &mut errors);
        if let Some(ssn) = fields.new_ssn() {
            if !ssn_seen.insert(ssn.as_str().to_owned()) {
                errors.push(format!(
                    "{at}.socialSecurityNumber: used by another employee in the file"
                ));
            }
        }
        let mut period_errors = Vec::new();
        period.check(
            &mut period_errors,
            "before startDate",
            "needed when terminatedDate is given",
        );
        errors.extend(
            period_errors
                .into_iter()
                .map(|e| format!("{at}.{}: {}", e.field, e.message)),
        );
        if !group_names.contains_key(&e.location.to_lowercase()) {
            errors.push(format!(
                "{at}.location: no group named {:?} in the file",
                e.location
            ));
        }
        if let Some(le) = &e.legal_entity {
            if !keys.contains(le.as_str()) {
                errors.push(format!(
                    "{at}.legalEntity: no legal entity with key {le:?} in the file"
                ));
            }
        }
        employees.push((fields, period));
    }

    if errors.is_empty() {
        Ok(Checked {
            dates,
            employees,
            group_order,
        })
    } else {
        Err(SeedError::Invalid(errors))
    }
}

/// An employee of the file as the fields a write sets: every field the file
/// has is read by its domain type (`crate::domain::fields`, the API's
/// limits and formats), and a field the file leaves out is cleared, so the
/// file is the whole truth about the fields it can hold. Problems go to
/// `errors` as `employees[i].field: message`.
fn employee_fields(e: &Employee, at: &str, errors: &mut Vec<String>) -> (EmployeeFields, Period) {
    fn read<T>(
        errors: &mut Vec<String>,
        at: &str,
        field: &str,
        value: Option<&str>,
        parse: impl FnOnce(&str) -> Result<T, Invalid>,
    ) -> Option<Option<T>> {
        match value.map(str::trim).filter(|v| !v.is_empty()) {
            None => Some(None),
            Some(v) => match parse(v) {
                Ok(t) => Some(Some(t)),
                Err(e) => {
                    errors.push(format!("{at}.{field}: {}", e.message));
                    None
                }
            },
        }
    }
    fn date(
        errors: &mut Vec<String>,
        at: &str,
        field: &str,
        value: Option<&str>,
    ) -> Option<NaiveDate> {
        read(errors, at, field, value, |v| {
            CalendarDate::from_json(&serde_json::Value::from(v))
        })
        .flatten()
        .map(|d| d.0)
    }
    let first_name = read(
        errors,
        at,
        "firstName",
        Some(&e.first_name),
        PersonName::parse,
    )
    .flatten();
    let last_name = read(
        errors,
        at,
        "lastName",
        Some(&e.last_name),
        PersonName::parse,
    )
    .flatten();
    if e.first_name.trim().is_empty() {
        errors.push(format!("{at}.firstName: must not be empty"));
    }
    if e.last_name.trim().is_empty() {
        errors.push(format!("{at}.lastName: must not be empty"));
    }
    let fields = EmployeeFields {
        first_name,
        last_name,
        middle_name: read(
            errors,
            at,
            "middleName",
            e.middle_name.as_deref(),
            Text::parse,
        ),
        ssn: read(
            errors,
            at,
            "socialSecurityNumber",
            e.social_security_number.as_deref(),
            |v| Ssn::from_json(&serde_json::Value::from(v)),
        ),
        // Not in the future, as the API's (docs/api.md, "Writing employees").
        date_of_birth: Some(
            read(errors, at, "dateOfBirth", e.date_of_birth.as_deref(), |v| {
                BirthDate::from_json(&serde_json::Value::from(v))
            })
            .flatten()
            .map(|d| d.0),
        ),
        profile_id: read(errors, at, "profileId", Some(&e.profile_id), Text::parse),
        other_name: read(
            errors,
            at,
            "otherName",
            e.other_name.as_deref(),
            Text::parse,
        ),
        job_title: read(errors, at, "jobTitle", e.job_title.as_deref(), Text::parse),
        email_address: read(
            errors,
            at,
            "emailAddress",
            e.email_address.as_deref(),
            Email::parse,
        ),
        language: match e.language_preference {
            None => Some(None),
            Some(id) => match Language::from_id(id.into()) {
                Some(l) => Some(Some(l)),
                None => {
                    errors.push(format!("{at}.languagePreference: {}", Language::RULE));
                    None
                }
            },
        },
        address_street: read(
            errors,
            at,
            "addressStreet",
            e.address_street.as_deref(),
            Text::parse,
        ),
        address_street2: read(
            errors,
            at,
            "addressStreet2",
            e.address_street2.as_deref(),
            Text::parse,
        ),
        address_apartment: read(
            errors,
            at,
            "addressApartment",
            e.address_apartment.as_deref(),
            Text::parse,
        ),
        address_city: read(
            errors,
            at,
            "addressCity",
            e.address_city.as_deref(),
            Text::parse,
        ),
        address_state: read(
            errors,
            at,
            "addressState",
            e.address_state.as_deref(),
            Text::parse,
        ),
        address_country: read(
            errors,
            at,
            "addressCountry",
            e.address_country.as_deref(),
            Text::parse,
        ),
        address_zip: read(
            errors,
            at,
            "addressZip",
            e.address_zip.as_deref(),
            Text::parse,
        ),
        work_number: read(
            errors,
            at,
            "workNumber",
            e.work_number.as_deref(),
            Text::parse,
        ),
        home_number: read(
            errors,
            at,
            "homeNumber",
            e.home_number.as_deref(),
            Text::parse,
        ),
        cell_number: read(
            errors,
            at,
            "cellNumber",
            e.cell_number.as_deref(),
            Text::parse,
        ),
        ..EmployeeFields::default()
    };
    let period = Period {
        start: date(errors, at, "startDate", e.start_date.as_deref()),
        terminated: date(errors, at, "terminatedDate", e.terminated_date.as_deref()),
    };
    (fields, period)
}

/// `whsec_` + base64 of the HMAC key bytes (Standard Webhooks).
pub fn decode_signing_secret(secret: &str) -> Option<Vec<u8>> {
    let bytes = STANDARD.decode(secret.strip_prefix("whsec_")?).ok()?;
    (24..=64).contains(&bytes.len()).then_some(bytes)
}

/// The partners' callback URLs against the deployment's rule
/// (`common/src/destination.rs`): https to a public address, unless
/// `ALLOW_PRIVATE_CALLBACKS` is true. `i9-admin seed` checks this before
/// loading anything; the worker checks it again at each delivery.
pub fn check_callback_urls(org: &OrgFile, allow_private: bool) -> Result<(), SeedError> {
    let errors: Vec<String> = org
        .clients
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let url = &c.integration.as_ref()?.hr_url;
            let problem = crate::destination::check_callback_url(url, allow_private).err()?;
            Some(format!(
                "clients[{i}].integration.hrUrl: {problem} (http and private addresses only with ALLOW_PRIVATE_CALLBACKS=true)"
            ))
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(SeedError::Invalid(errors))
    }
}

/// The example organization, whose passwords and secrets are published in
/// this repository.
const PUBLISHED: &str = include_str!("../../fixtures/org.json");

/// What `i9-admin seed` checks outside `APP_ENV=development` (docs/operations.md,
/// "Production checklist"): no password, client secret or signing secret
/// published in `fixtures/org.json`, and every user's password passes the
/// rules of the set-password page ([`password::check`]). Each offending entry
/// is named by its login or client id, never by the value.
pub fn check_for_production(org: &OrgFile) -> Result<(), SeedError> {
    let example = parse(PUBLISHED).map_err(|_| {
        SeedError::Invalid(vec![
            "the example organization built into i9-admin cannot be read".to_owned(),
        ])
    })?;
    let published: HashSet<&str> = example
        .users
        .iter()
        .map(|u| u.password.as_str())
        .chain(example.clients.iter().flat_map(|c| {
            std::iter::once(c.client_secret.as_str())
                .chain(c.integration.as_ref().map(|i| i.signing_secret.as_str()))
        }))
        .collect();
    const WHY: &str = "published in fixtures/org.json, the example organization: choose another";
    let mut errors = Vec::new();
    for (i, u) in org.users.iter().enumerate() {
        let at = format!("users[{i}].password (user {:?})", u.login);
        if published.contains(u.password.as_str()) {
            errors.push(format!("{at}: {WHY}"));
            continue;
        }
        let personal: Vec<&str> = [&u.login, &u.first_name, &u.last_name]
            .into_iter()
            .map(String::as_str)
            .chain(u.email_address.as_deref())
            .collect();
        if let Err(weakness) = password::check(&u.password, &personal) {
            errors.push(format!("{at}: {weakness}"));
        }
    }
    for (i, c) in org.clients.iter().enumerate() {
        if published.contains(c.client_secret.as_str()) {
            errors.push(format!(
                "clients[{i}].clientSecret (client {:?}): {WHY}",
                c.client_id
            ));
        }
        if let Some(int) = &c.integration {
            if published.contains(int.signing_secret.as_str()) {
                errors.push(format!(
                    "clients[{i}].integration.signingSecret (client {:?}): {WHY}",
                    c.client_id
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(SeedError::Invalid(errors))
    }
}

/// id, SSN hash and SSN ciphertext of an employee already in the database.
/// What a run did with a partner's `signingSecret` that differs from the
/// stored current one (docs/operations.md, "Rotating a partner's signing
/// secret").
#[derive(Debug, Clone)]
pub enum SecretNote {
    /// Kept the stored secret: the file's is not loaded without `--rotate-secrets`.
    Kept { client_id: String },
    /// Kept the stored secret: the file's is one the client replaced (an
    /// old copy of the file), which never becomes current again.
    KeptReplaced { client_id: String },
    /// Rotated to the file's; each replaced secret that stops signing, and when.
    Rotated {
        client_id: String,
        stops: Vec<signing_secrets::Stop>,
    },
}

/// How a run treats partners' signing secrets, and where the partner
/// events it records point.
#[derive(Debug, Clone)]
pub struct Options {
    /// Make a file's differing `signingSecret` the current one; otherwise
    /// the stored one is kept.
    pub rotate_secrets: bool,
    /// How long a secret replaced by the file's keeps signing.
    pub overlap: std::time::Duration,
    /// `PUBLIC_BASE_URL`: a run that terminates or re-hires a partner's
    /// employee records an employment event, whose `i9Url` is under it.
    pub public_base_url: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            rotate_secrets: false,
            overlap: signing_secrets::DEFAULT_OVERLAP,
            public_base_url: String::new(),
        }
    }
}

/// Check and load the organization with the default [`Options`] (a stored
/// signing secret is kept); returns what it assigned.
pub async fn load(
    pool: &PgPool,
    cipher: &DataCipher,
    org: &OrgFile,
) -> Result<Vec<Assigned>, SeedError> {
    load_with(pool, cipher, org, Options::default())
        .await
        .map(|(assigned, _)| assigned)
}

/// [`load`] with `options`; also returns what it did with partners'
/// differing signing secrets. A file secret equal to one of its client's
/// replaced secrets is never stored: the client keeps its current one
/// ([`SecretNote::KeptReplaced`]); with `rotate_secrets`, or if the client
/// has no stored secret to keep, it is refused and nothing is loaded.
pub async fn load_with(
    pool: &PgPool,
    cipher: &DataCipher,
    org: &OrgFile,
    options: Options,
) -> Result<(Vec<Assigned>, Vec<SecretNote>), SeedError> {
    let checked = check(org)?;
    let mut notes = Vec::new();
    let mut tx = pool.begin().await?;
    let mut out = Vec::new();

    // A replaced secret may have leaked: it never becomes current again. A
    // run that does not rotate keeps the stored secret (an old copy of the
    // file, seeded again after a rotation); one that asks to rotate to it, or
    // a client with no stored secret to keep, is refused.
    let mut refused = Vec::new();
    let mut keep_replaced = HashSet::new();
    for (i, c) in org.clients.iter().enumerate() {
        let Some(int) = &c.integration else { continue };
        if signing_secrets::is_replaced(&mut tx, cipher, &c.client_id, &int.signing_secret).await? {
            let stored = sqlx::query_scalar!(
                r#"SELECT signing_secret_ciphertext IS NOT NULL AS "stored!" FROM oauth_clients
                   WHERE client_id = $1"#,
                &c.client_id,
            )
            .fetch_one(&mut *tx)
            .await?;
            if stored && !options.rotate_secrets {
                keep_replaced.insert(c.client_id.as_str());
                continue;
            }
            refused.push(format!(
                "clients[{i}].integration.signingSecret: {id} replaced this secret, and a replaced \
                 secret may have leaked, so it never becomes current again: write {id}'s current \
                 secret into the file, or a new one (i9-admin partners rotate-secret {id})",
                id = c.client_id
            ));
        }
    }
    if !refused.is_empty() {
        return Err(SeedError::Invalid(refused));
    }

    let mut entity_ids = HashMap::new();
    for (i, le) in org.legal_entities.iter().enumerate() {
        let eff = checked.dates[&format!("legalEntities[{i}].everifyEffectiveDate")];
        let row: Option<(i64, bool)> = sqlx::query!(
            r#"INSERT INTO legal_entities (seed_key, entity_name, ein, everify_id, everify_effective_date, everify_status, active)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (seed_key) DO UPDATE SET entity_name = EXCLUDED.entity_name, ein = EXCLUDED.ein,
                 everify_id = EXCLUDED.everify_id, everify_effective_date = EXCLUDED.everify_effective_date,
                 everify_status = EXCLUDED.everify_status, active = EXCLUDED.active, updated_at = now()
             WHERE (legal_entities.entity_name, legal_entities.ein, legal_entities.everify_id,
                    legal_entities.everify_effective_date, legal_entities.everify_status, legal_entities.active)
                 IS DISTINCT FROM (EXCLUDED.entity_name, EXCLUDED.ein, EXCLUDED.everify_id,
                    EXCLUDED.everify_effective_date, EXCLUDED.everify_status, EXCLUDED.active)
             RETURNING id, (xmax = 0) AS "inserted!""#,
            &le.key,
            &le.entity_name,
            &le.ein,
            le.everify_id.as_deref(),
            eff,
            le.everify_status.as_deref().unwrap_or("Not Ready"),
            le.active,
        )
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| (r.id, r.inserted));
        let id = match row {
            Some((id, _)) => id,
            None => {
                sqlx::query_scalar!("SELECT id FROM legal_entities WHERE seed_key = $1", &le.key)
                    .fetch_one(&mut *tx)
                    .await?
            }
        };
        entity_ids.insert(le.key.clone(), id);
        out.push(Assigned {
            kind: "legal entity",
            key: le.key.clone(),
            id,
            outcome: Outcome::of(row.map(|r| r.1)),
        });
    }

    for (i, cd) in org.closed_days.iter().enumerate() {
        let Some(day) = checked.dates[&format!("closedDays[{i}].date")] else {
            continue;
        };
        let (_, set) = crate::models::calendar::upsert(&mut tx, None, day, cd.name.trim()).await?;
        out.push(Assigned {
            kind: "closed day",
            key: day.to_string(),
            // The day as a number, YYYYMMDD: a closed day has no other id.
            id: i64::from(day.year()) * 10_000 + i64::from(day.month() * 100 + day.day()),
            outcome: match set {
                crate::models::calendar::Set::Created => Outcome::Created,
                crate::models::calendar::Set::Renamed => Outcome::Updated,
                crate::models::calendar::Set::Unchanged => Outcome::Unchanged,
            },
        });
    }

    let mut group_ids: HashMap<String, i64> = HashMap::new();
    for &i in &checked.group_order {
        let g = &org.groups[i];
        let parent = g.parent.as_ref().map(|p| group_ids[&p.to_lowercase()]);
        let row: Option<(i64, bool)> = sqlx::query!(
            r#"INSERT INTO groups (name, parent_id) VALUES ($1, $2)
             ON CONFLICT ((lower(name))) DO UPDATE SET name = EXCLUDED.name, parent_id = EXCLUDED.parent_id
             WHERE (groups.name, groups.parent_id) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.parent_id)
             RETURNING id, (xmax = 0) AS "inserted!""#,
            &g.name,
            parent,
        )
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| (r.id, r.inserted));
        let id = match row {
            Some((id, _)) => id,
            None => {
                sqlx::query_scalar!(
                    "SELECT id FROM groups WHERE lower(name) = lower($1)",
                    &g.name
                )
                .fetch_one(&mut *tx)
                .await?
            }
        };
        group_ids.insert(g.name.to_lowercase(), id);
        out.push(Assigned {
            kind: "group",
            key: g.name.clone(),
            id,
            outcome: Outcome::of(row.map(|r| r.1)),
        });
    }

    let mut role_ids = HashMap::new();
    for r in &org.roles {
        let row: Option<(i64, bool)> = sqlx::query!(
            r#"INSERT INTO roles (name, description) VALUES ($1, $2)
             ON CONFLICT ((lower(name))) DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description
             WHERE (roles.name, roles.description) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.description)
             RETURNING id, (xmax = 0) AS "inserted!""#,
            &r.name,
            &r.description,
        )
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| (r.id, r.inserted));
        let id = match row {
            Some((id, _)) => id,
            None => {
                sqlx::query_scalar!(
                    "SELECT id FROM roles WHERE lower(name) = lower($1)",
                    &r.name
                )
                .fetch_one(&mut *tx)
                .await?
            }
        };
        let perms: Vec<i16> = r.permissions.iter().map(|p| *p as i16).collect();
        let changed = replace_permissions(&mut tx, id, &perms).await?;
        role_ids.insert(r.name.to_lowercase(), id);
        out.push(Assigned {
            kind: "role",
            key: r.name.clone(),
            id,
            outcome: Outcome::of(row.map(|r| r.1)).or(changed),
        });
    }

    for u in &org.users {
        let existing: Option<(i64, Option<String>)> = sqlx::query!(
            r#"SELECT id, password_hash FROM users WHERE lower(login) = lower($1)"#,
            &u.login,
        )
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| (r.id, r.password_hash));
        let hash = match &existing {
            Some((_, Some(h))) if verify_password(&u.password, h) => h.clone(),
            _ => hash_password(&u.password),
        };
        let role_id = role_ids[&u.role.to_lowercase()];
        let row: Option<(i64, bool)> = sqlx::query!(
            r#"INSERT INTO users (login, password_hash, first_name, last_name, middle_name, title, email_address, role_id, retired, profile_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT ((lower(login))) DO UPDATE SET password_hash = EXCLUDED.password_hash,
                 first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name, middle_name = EXCLUDED.middle_name,
                 title = EXCLUDED.title, email_address = EXCLUDED.email_address, role_id = EXCLUDED.role_id,
                 retired = EXCLUDED.retired, profile_id = EXCLUDED.profile_id, updated_at = now()
             WHERE (users.password_hash, users.first_name, users.last_name, users.middle_name, users.title,
                    users.email_address, users.role_id, users.retired, users.profile_id)
                 IS DISTINCT FROM (EXCLUDED.password_hash, EXCLUDED.first_name, EXCLUDED.last_name, EXCLUDED.middle_name,
                    EXCLUDED.title, EXCLUDED.email_address, EXCLUDED.role_id, EXCLUDED.retired, EXCLUDED.profile_id)
             RETURNING id, (xmax = 0) AS "inserted!""#,
            &u.login,
            &hash,
            &u.first_name,
            &u.last_name,
            u.middle_name.as_deref(),
            u.title.as_deref(),
            u.email_address.as_deref(),
            role_id,
            u.retired,
            u.profile_id.as_deref(),
        )
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| (r.id, r.inserted));
        let id = row
            .map(|r| r.0)
            .or(existing.map(|e| e.0))
            .ok_or(sqlx::Error::RowNotFound)?;
        let groups: Vec<i64> = u
            .groups
            .iter()
            .map(|g| group_ids[&g.to_lowercase()])
            .collect();
        let changed = replace_groups(&mut tx, id, &groups).await?;
        out.push(Assigned {
            kind: "user",
            key: u.login.clone(),
            id,
            outcome: Outcome::of(row.map(|r| r.1)).or(changed),
        });
    }

    for c in &org.clients {
        let existing: Option<(i64, String, Option<Vec<u8>>)> = sqlx::query!(
            r#"SELECT id, secret_hash, signing_secret_ciphertext FROM oauth_clients WHERE client_id = $1"#,
            &c.client_id,
        )
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| (r.id, r.secret_hash, r.signing_secret_ciphertext));
        let secret_hash = match &existing {
            Some((_, h, _)) if verify_password(&c.client_secret, h) => h.clone(),
            _ => hash_password(&c.client_secret),
        };
        // A differing secret is kept out (noted), or, with `rotate_secrets`,
        // replaces the current one after the upsert, which keeps the old one.
        let old_signing = existing.as_ref().and_then(|e| e.2.clone());
        let mut replacement = None;
        let signing = c.integration.as_ref().map(|int| match &old_signing {
            Some(ct)
                if cipher
                    .decrypt(Purpose::SigningSecret, ct)
                    .is_ok_and(|p| p == int.signing_secret.as_bytes()) =>
            {
                ct.clone()
            }
            Some(ct) => {
                if options.rotate_secrets {
                    replacement =
                        Some(cipher.encrypt(Purpose::SigningSecret, int.signing_secret.as_bytes()));
                } else if keep_replaced.contains(c.client_id.as_str()) {
                    notes.push(SecretNote::KeptReplaced {
                        client_id: c.client_id.clone(),
                    });
                } else {
                    notes.push(SecretNote::Kept {
                        client_id: c.client_id.clone(),
                    });
                }
                ct.clone()
            }
            None => cipher.encrypt(Purpose::SigningSecret, int.signing_secret.as_bytes()),
        });
        let scopes = Scopes::from_list(&c.scopes).unwrap_or_default().to_list();
        let row: Option<(i64, bool)> = sqlx::query!(
            r#"INSERT INTO oauth_clients (client_id, secret_hash, scopes, integration_client_system, integration_hr_url,
                 signing_secret_ciphertext, signing_secret_set_at)
             VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $6::BYTEA IS NULL THEN NULL ELSE now() END)
             ON CONFLICT (client_id) DO UPDATE SET secret_hash = EXCLUDED.secret_hash, scopes = EXCLUDED.scopes,
                 integration_client_system = EXCLUDED.integration_client_system,
                 integration_hr_url = EXCLUDED.integration_hr_url,
                 signing_secret_ciphertext = EXCLUDED.signing_secret_ciphertext,
                 signing_secret_set_at = CASE
                     WHEN EXCLUDED.signing_secret_ciphertext IS NOT DISTINCT FROM oauth_clients.signing_secret_ciphertext
                     THEN oauth_clients.signing_secret_set_at ELSE EXCLUDED.signing_secret_set_at END,
                 updated_at = now()
             WHERE (oauth_clients.secret_hash, oauth_clients.scopes, oauth_clients.integration_client_system,
                    oauth_clients.integration_hr_url, oauth_clients.signing_secret_ciphertext)
                 IS DISTINCT FROM (EXCLUDED.secret_hash, EXCLUDED.scopes, EXCLUDED.integration_client_system,
                    EXCLUDED.integration_hr_url, EXCLUDED.signing_secret_ciphertext)
             RETURNING id, (xmax = 0) AS "inserted!""#,
            &c.client_id,
            &secret_hash,
            &scopes,
            c.integration.as_ref().map(|i| &i.client_system),
            c.integration.as_ref().map(|i| &i.hr_url),
            signing,
        )
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| (r.id, r.inserted));
        let id = row
            .map(|r| r.0)
            .or(existing.map(|e| e.0))
            .ok_or(sqlx::Error::RowNotFound)?;
        if let Some(new) = replacement.as_deref() {
            let stops = signing_secrets::replace(&mut tx, cipher, id, new, options.overlap)
                .await
                .map_err(|e| match e {
                    signing_secrets::SigningError::Database(e) => SeedError::Database(e),
                    signing_secrets::SigningError::Undecryptable(e) => {
                        SeedError::Invalid(vec![format!(
                            "clients: {}: its signing secret cannot be decrypted: {e}",
                            c.client_id
                        )])
                    }
                    other => SeedError::Invalid(vec![format!("clients: {}: {other}", c.client_id)]),
                })?;
            notes.push(SecretNote::Rotated {
                client_id: c.client_id.clone(),
                stops,
            });
        }
        out.push(Assigned {
            kind: "client",
            key: c.client_id.clone(),
            id,
            outcome: Outcome::of(row.map(|r| r.1)).or(replacement.is_some()),
        });
    }

    for (i, (e, (fields, period))) in org.employees.iter().zip(&checked.employees).enumerate() {
        let at = format!("employees[{i}]");
        let existing: Option<(i64, Option<Vec<u8>>)> = sqlx::query!(
            r#"SELECT id, ssn_hash FROM employees WHERE lower(profile_id) = lower($1)"#,
            &e.profile_id,
        )
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| (r.id, r.ssn_hash));
        let mut fields = fields.clone();
        fields.location_id = Some(group_ids[&e.location.to_lowercase()]);
        fields.legal_entity_id = Some(e.legal_entity.as_ref().map(|k| entity_ids[k]));
        // Keep the stored ciphertext and hash when the number is the same (its
        // hash under any key of the ring), so a rerun changes nothing.
        if let (Some((_, Some(stored))), Some(ssn)) = (&existing, fields.new_ssn()) {
            if cipher.ssn_search_hashes(ssn).contains(stored) {
                fields.ssn = None;
            }
        }
        let refused = |err: WriteError| match err {
            WriteError::Database(e) => SeedError::Database(e),
            WriteError::Conflict(_) if fields.new_ssn().is_some() => {
                SeedError::Invalid(vec![format!(
                    "{at}.socialSecurityNumber: already held by another employee in the database"
                )])
            }
            other => SeedError::Invalid(vec![format!("{at}: {other}")]),
        };
        let (id, outcome) = match existing {
            None => {
                let id = employee::insert(&mut tx, cipher, &fields)
                    .await
                    .map_err(refused)?;
                employee::start_period(&mut tx, id, *period, &options.public_base_url)
                    .await
                    .map_err(refused)?;
                (id, Outcome::Created)
            }
            Some((id, _)) => {
                let changed = employee::update_if_changed(&mut tx, cipher, id, &fields)
                    .await
                    .map_err(refused)?;
                let current = employee::lock(&mut tx, id)
                    .await?
                    .ok_or(sqlx::Error::RowNotFound)?;
                let period_changed = current.period_id.is_none() || current.period() != *period;
                if period_changed {
                    employee::set_period(
                        &mut tx,
                        &Actor::default(),
                        id,
                        &current,
                        *period,
                        &options.public_base_url,
                    )
                    .await
                    .map_err(refused)?;
                }
                let outcome = if changed || period_changed {
                    Outcome::Updated
                } else {
                    Outcome::Unchanged
                };
                (id, outcome)
            }
        };
        out.push(Assigned {
            kind: "employee",
            key: e.profile_id.clone(),
            id,
            outcome,
        });
    }

    let summary: BTreeMap<&str, usize> = out
        .iter()
        .filter(|a| a.outcome != Outcome::Unchanged)
        .fold(BTreeMap::new(), |mut m, a| {
            *m.entry(a.kind).or_default() += 1;
            m
        });
    if !summary.is_empty() {
        let entry = audit::Entry::about_none("seed", "organization")
            .detail(serde_json::json!({ "changed": summary }));
        audit::record(&mut *tx, &Actor::default(), entry).await?;
    }
    tx.commit().await?;
    Ok((out, notes))
}

/// Make role `role` hold exactly the permissions `wanted`; true if it changed.
async fn replace_permissions(
    tx: &mut Transaction<'_, Postgres>,
    role: i64,
    wanted: &[i16],
) -> Result<bool, sqlx::Error> {
    let deleted = sqlx::query!(
        "DELETE FROM role_permissions WHERE role_id = $1 AND permission_id <> ALL($2)",
        role,
        wanted,
    )
    .execute(&mut **tx)
    .await?;
    let inserted = sqlx::query!(
        "INSERT INTO role_permissions (role_id, permission_id)
         SELECT $1, unnest($2::SMALLINT[]) ON CONFLICT DO NOTHING",
        role,
        wanted,
    )
    .execute(&mut **tx)
    .await?;
    Ok(deleted.rows_affected() + inserted.rows_affected() > 0)
}

/// Make user `user` a member of exactly the groups `wanted`; true if it changed.
async fn replace_groups(
    tx: &mut Transaction<'_, Postgres>,
    user: i64,
    wanted: &[i64],
) -> Result<bool, sqlx::Error> {
    let deleted = sqlx::query!(
        "DELETE FROM user_groups WHERE user_id = $1 AND group_id <> ALL($2)",
        user,
        wanted,
    )
    .execute(&mut **tx)
    .await?;
    let inserted = sqlx::query!(
        "INSERT INTO user_groups (user_id, group_id)
         SELECT $1, unnest($2::BIGINT[]) ON CONFLICT DO NOTHING",
        user,
        wanted,
    )
    .execute(&mut **tx)
    .await?;
    Ok(deleted.rows_affected() + inserted.rows_affected() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = PUBLISHED;

    #[test]
    fn the_example_organization_is_valid() {
        let org = parse(FIXTURE).unwrap();
        check(&org).unwrap();
        assert_eq!(org.employees.len(), 3);
    }

    #[test]
    fn structural_errors_name_the_entry_and_field() {
        let err = parse(
            r#"{"users":[{"login":"a","password":"x","firstName":"A","lastName":"B","role":7}]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("users[0].role"), "{err}");
    }

    #[test]
    fn every_semantic_error_is_reported() {
        let org = parse(
            r#"{"groups":[{"name":"A","parent":"Nope"}],
                "roles":[{"name":"R","permissions":[1,99]}],
                "users":[{"login":"u","password":"long enough","firstName":"U","lastName":"V","role":"Missing","groups":["B"]}],
                "employees":[{"firstName":"E","lastName":"F","profileId":"P1","location":"A","socialSecurityNumber":"123456789","startDate":"2026-02-30"}]}"#,
        )
        .unwrap();
        let Err(SeedError::Invalid(errors)) = check(&org) else {
            panic!("expected errors")
        };
        let all = errors.join("\n");
        for needle in [
            "groups[0].parent",
            "roles[0].permissions[1]",
            "users[0].role",
            "users[0].groups[0]",
            "employees[0].socialSecurityNumber",
            "employees[0].startDate",
        ] {
            assert!(all.contains(needle), "{needle} missing from {all}");
        }
        assert!(!all.contains("123456789"), "no SSN in errors");
    }
}
