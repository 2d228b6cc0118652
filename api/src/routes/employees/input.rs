//! The body of `POST /v1/employees` and `PATCH /v1/employees/{id}`, parsed
//! and checked field by field against the specification's parameter table.
//! Every problem is collected, so one 422 names every invalid field. Values
//! never appear in an error (they may be a social security number).

use chrono::NaiveDate;
use i9_common::{
    destination::{self, UrlProblem},
    domain::{parse_date, Ssn, SsnError},
};
use serde_json::Value;

use crate::error::FieldError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    /// `POST /v1/partners/i9s/section1` (the I column of the table).
    /// `allow_http`: `employeeReturnUrl` may be http as well as https
    /// (`ALLOW_PRIVATE_CALLBACKS`, local runs; `common/src/destination.rs`).
    Partner {
        allow_http: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Req {
    Required,
    Optional,
    NotAccepted,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Text(usize),
    Email(usize),
    Date,
    Int,
    Language,
    Ssn,
    Bool,
    I9Choice,
    Rehire,
    Onboarding,
    Url(usize),
}

/// Where a field goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A column of `employees`.
    Column(&'static str),
    /// A column of the current `employment_periods` row.
    Period(&'static str),
    Ssn,
    /// A request flag, not stored.
    Flag,
}

struct Field {
    name: &'static str,
    kind: Kind,
    target: Target,
    post: Req,
    patch: Req,
}

const fn f(name: &'static str, kind: Kind, target: Target, post: Req, patch: Req) -> Field {
    Field {
        name,
        kind,
        target,
        post,
        patch,
    }
}

const fn text(name: &'static str, max: usize, column: &'static str) -> Field {
    f(
        name,
        Kind::Text(max),
        Target::Column(column),
        Req::Optional,
        Req::Optional,
    )
}

use Req::{NotAccepted as NA, Optional as O, Required as R};

/// The parameter table of the specification (P and U columns).
const FIELDS: &[Field] = &[
    f("id", Kind::Int, Target::Flag, O, O),
    f(
        "firstName",
        Kind::Text(40),
        Target::Column("first_name"),
        R,
        R,
    ),
    f(
        "lastName",
        Kind::Text(40),
        Target::Column("last_name"),
        R,
        R,
    ),
    text("middleName", 25, "middle_name"),
    f("socialSecurityNumber", Kind::Ssn, Target::Ssn, O, O),
    f(
        "dateOfBirth",
        Kind::Date,
        Target::Column("date_of_birth"),
        O,
        O,
    ),
    f("startDate", Kind::Date, Target::Period("start_date"), O, O),
    text("profileId", 30, "profile_id"),
    text("otherName", 40, "other_name"),
    text("jobTitle", 80, "job_title"),
    f(
        "emailAddress",
        Kind::Email(80),
        Target::Column("email_address"),
        O,
        O,
    ),
    f("locationId", Kind::Int, Target::Column("location_id"), R, R),
    f(
        "legalEntity",
        Kind::Int,
        Target::Column("legal_entity_id"),
        O,
        O,
    ),
    f(
        "terminatedDate",
        Kind::Date,
        Target::Period("terminated_date"),
        O,
        O,
    ),
    f(
        "languagePreference",
        Kind::Language,
        Target::Column("language_preference"),
        O,
        O,
    ),
    text("custom1", 255, "custom1"),
    text("custom2", 255, "custom2"),
    text("custom3", 255, "custom3"),
    text("custom4", 255, "custom4"),
    text("custom5", 255, "custom5"),
    text("custom6", 255, "custom6"),
    text("custom7", 255, "custom7"),
    text("custom8", 255, "custom8"),
    f(
        "notificationEmail1",
        Kind::Email(255),
        Target::Column("notification_email1"),
        O,
        O,
    ),
    f(
        "notificationEmail2",
        Kind::Email(255),
        Target::Column("notification_email2"),
        O,
        O,
    ),
    text("addressStreet", 80, "address_street"),
    text("addressStreet2", 80, "address_street2"),
    text("addressApartment", 80, "address_apartment"),
    text("addressCity", 50, "address_city"),
    text("addressState", 20, "address_state"),
    text("addressCountry", 50, "address_country"),
    text("addressZip", 10, "address_zip"),
    text("workNumber", 20, "work_number"),
    text("workExtension", 10, "work_extension"),
    text("homeNumber", 20, "home_number"),
    text("homeExtension", 10, "home_extension"),
    text("cellNumber", 20, "cell_number"),
    text("cellExtension", 10, "cell_extension"),
    f("createLogin", Kind::Bool, Target::Flag, O, O),
    f("sendLoginEmail", Kind::Bool, Target::Flag, O, O),
    f("createI9", Kind::I9Choice, Target::Flag, O, O),
    f("createRemotehireI9", Kind::I9Choice, Target::Flag, O, O),
    f("rehire", Kind::Rehire, Target::Flag, NA, O),
    // The partner operation's own fields.
    f(
        "integrationCandidateId",
        Kind::Text(50),
        Target::Flag,
        NA,
        NA,
    ),
    f("onboardingType", Kind::Onboarding, Target::Flag, NA, NA),
    f("employeeReturnUrl", Kind::Url(255), Target::Flag, NA, NA),
];

/// The partner operation's column (I) of the table.
fn partner_req(name: &str) -> Req {
    match name {
        "firstName"
        | "lastName"
        | "startDate"
        | "emailAddress"
        | "locationId"
        | "integrationCandidateId"
        | "onboardingType" => R,
        "terminatedDate" | "createLogin" | "sendLoginEmail" | "createI9" | "createRemotehireI9"
        | "rehire" => NA,
        _ => O,
    }
}

fn req(fd: &Field, op: Operation) -> Req {
    match op {
        Operation::Create => fd.post,
        Operation::Update => fd.patch,
        Operation::Partner { .. } => partner_req(fd.name),
    }
}

/// Another accepted spelling (docs/api.md, "Writing employees").
const ALIASES: &[(&str, &str)] = &[("createRemoteHireI9", "createRemotehireI9")];

/// Every field name the write operations know, for the OpenAPI document and errors.
pub fn accepted(op: Operation) -> Vec<&'static str> {
    FIELDS
        .iter()
        .filter(|fd| req(fd, op) != NA)
        .map(|fd| fd.name)
        .collect()
}

/// A typed column value.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnValue {
    Text(Option<String>),
    Date(Option<NaiveDate>),
    Int(Option<i64>),
    SmallInt(Option<i16>),
}

/// `yes` or `if allowed`, for an on-site or a remote-hire I-9.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct I9Wish {
    pub remote: bool,
    /// `if allowed`: add the I-9 only when the employee has no open one.
    pub if_allowed: bool,
}

/// A checked request body.
#[derive(Debug, Default)]
pub struct EmployeeInput {
    /// Columns of `employees` to set, in table order.
    pub columns: Vec<(&'static str, ColumnValue)>,
    /// `Some(None)` clears the SSN.
    pub ssn: Option<Option<Ssn>>,
    pub start_date: Option<Option<NaiveDate>>,
    pub terminated_date: Option<Option<NaiveDate>>,
    pub id: Option<i64>,
    pub create_login: bool,
    pub send_login_email: bool,
    pub i9: Option<I9Wish>,
    pub rehire: bool,
    /// Partner operation: the partner's candidate key.
    pub candidate_id: Option<String>,
    /// Partner operation: `remote` (true) or `on-site` (false).
    pub onboarding_remote: Option<bool>,
    /// Partner operation: where the employee goes after signing Section 1.
    pub return_url: Option<String>,
}

impl EmployeeInput {
    pub fn column(&self, name: &str) -> Option<&ColumnValue> {
        self.columns
            .iter()
            .find(|(c, _)| *c == name)
            .map(|(_, v)| v)
    }

    pub fn int(&self, name: &str) -> Option<Option<i64>> {
        match self.column(name) {
            Some(ColumnValue::Int(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn text(&self, name: &str) -> Option<Option<&str>> {
        match self.column(name) {
            Some(ColumnValue::Text(v)) => Some(v.as_deref()),
            _ => None,
        }
    }

    /// The names of the fields this request sets (for the audit log: names, never values).
    pub fn field_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.columns.iter().map(|(c, _)| *c).collect();
        if self.ssn.is_some() {
            names.push("ssn");
        }
        if self.start_date.is_some() {
            names.push("start_date");
        }
        if self.terminated_date.is_some() {
            names.push("terminated_date");
        }
        names
    }
}

fn type_error(name: &str, what: &str) -> FieldError {
    FieldError::new(name, "invalid_type", format!("Must be {what}."))
}

/// Parse a JSON body. `Err` holds every problem found.
pub fn parse(body: &Value, op: Operation) -> Result<EmployeeInput, Vec<FieldError>> {
    let Some(obj) = body.as_object() else {
        return Err(vec![FieldError::new(
            "body",
            "invalid_type",
            "The body must be a JSON object.",
        )]);
    };
    let mut errors = Vec::new();
    let mut input = EmployeeInput::default();
    let mut choices: Vec<&'static str> = Vec::new();

    // Unknown fields, and fields the operation does not accept.
    for key in obj.keys() {
        let canonical = ALIASES
            .iter()
            .find(|(a, _)| a == key)
            .map_or(key.as_str(), |(_, c)| c);
        match FIELDS.iter().find(|fd| fd.name == canonical) {
            None => errors.push(FieldError::new(
                key,
                "unknown_field",
                "Not a field of an employee.",
            )),
            Some(fd) => {
                if req(fd, op) == NA {
                    let msg = match (op, fd.name) {
                        (Operation::Partner { .. }, _) => "The partner operation does not accept this field.",
                        (_, "rehire") => "Re-hire an existing employee with PATCH /v1/employees/{id}.",
                        _ => "Only the partner operation (POST /v1/partners/i9s/section1) accepts this field.",
                    };
                    errors.push(FieldError::new(key, "not_accepted", msg));
                }
            }
        }
    }
    for (alias, canonical) in ALIASES {
        if obj.contains_key(*alias) && obj.contains_key(*canonical) {
            errors.push(FieldError::new(
                *alias,
                "repeated",
                format!("Give {canonical} once."),
            ));
        }
    }

    for fd in FIELDS {
        let req = req(fd, op);
        if req == NA {
            continue;
        }
        let (key, raw) = match obj.get(fd.name) {
            Some(v) => (fd.name, Some(v)),
            None => match ALIASES.iter().find(|(_, c)| *c == fd.name) {
                Some((alias, _)) => (*alias, obj.get(*alias)),
                None => (fd.name, None),
            },
        };
        let value = match raw {
            None => None,
            Some(Value::Null) => Some(None),
            Some(Value::String(s)) if s.trim().is_empty() && !matches!(fd.kind, Kind::Bool) => {
                Some(None)
            }
            Some(v) => Some(Some(v)),
        };
        let value = match (value, req) {
            (None | Some(None), Req::Required) => {
                errors.push(FieldError::new(key, "required", "Required."));
                continue;
            }
            (None, _) => continue,
            (Some(v), _) => v,
        };
        if let Err(e) = apply(fd, key, value, op, &mut input, &mut choices) {
            errors.push(e);
        }
    }

    if choices.len() > 1 {
        for c in &choices {
            errors.push(FieldError::new(
                *c,
                "mutually_exclusive",
                "createI9 and createRemotehireI9 cannot both be sent.",
            ));
        }
    }
    if op == Operation::Update && input.rehire && input.start_date.flatten().is_none() {
        errors.push(FieldError::new(
            "startDate",
            "required",
            "A re-hire needs the new startDate.",
        ));
    }
    if let (Some(Some(start)), Some(Some(end))) = (input.start_date, input.terminated_date) {
        if end < start {
            errors.push(FieldError::new(
                "terminatedDate",
                "before_start",
                "Must not be before startDate.",
            ));
        }
    }
    if errors.is_empty() {
        Ok(input)
    } else {
        Err(errors)
    }
}

fn text_value(fd: &Field, key: &str, value: Option<&Value>) -> Result<Option<String>, FieldError> {
    match value {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
        Some(_) => Err(type_error(key, "a string")),
    }
    .and_then(|v| match (v, fd.kind) {
        (Some(s), Kind::Text(max) | Kind::Email(max)) if s.chars().count() > max => Err(
            FieldError::new(key, "too_long", format!("At most {max} characters.")),
        ),
        (Some(s), Kind::Email(_))
            if !email_address::EmailAddress::is_valid(&s) || !s.contains('.') =>
        {
            Err(FieldError::new(
                key,
                "invalid_format",
                "Must be an email address.",
            ))
        }
        (v, _) => Ok(v),
    })
}

fn apply(
    fd: &Field,
    key: &'static str,
    value: Option<&Value>,
    op: Operation,
    input: &mut EmployeeInput,
    choices: &mut Vec<&'static str>,
) -> Result<(), FieldError> {
    match fd.kind {
        Kind::Text(_) | Kind::Email(_) => {
            let v = text_value(fd, key, value)?;
            match fd.target {
                Target::Column(c) => input.columns.push((c, ColumnValue::Text(v))),
                _ if fd.name == "integrationCandidateId" => input.candidate_id = v,
                _ => {}
            }
        }
        Kind::Onboarding => {
            input.onboarding_remote = match value.and_then(Value::as_str) {
                None if value.is_none() => None,
                Some("remote") => Some(true),
                Some("on-site") => Some(false),
                _ => {
                    return Err(FieldError::new(
                        key,
                        "invalid_value",
                        "Must be \"on-site\" or \"remote\".",
                    ));
                }
            };
        }
        Kind::Url(max) => {
            input.return_url = match value {
                None => None,
                Some(Value::String(s)) => {
                    let s = s.trim();
                    if s.chars().count() > max {
                        return Err(FieldError::new(
                            key,
                            "too_long",
                            format!("At most {max} characters."),
                        ));
                    }
                    let allow_http = matches!(op, Operation::Partner { allow_http: true });
                    match destination::check_browser_url(s, allow_http) {
                        Ok(()) => Some(s.to_owned()),
                        Err(UrlProblem::HttpsRequired) => {
                            return Err(FieldError::new(
                                key,
                                "https_required",
                                "Must be an https URL.",
                            ));
                        }
                        Err(UrlProblem::Credentials) => {
                            return Err(FieldError::new(
                                key,
                                "credentials_in_url",
                                "Must not hold a user name or password (user:password@).",
                            ));
                        }
                        Err(_) => {
                            return Err(FieldError::new(
                                key,
                                "invalid_format",
                                if allow_http {
                                    "Must be an absolute http(s) URL."
                                } else {
                                    "Must be an absolute https URL."
                                },
                            ));
                        }
                    }
                }
                Some(_) => return Err(type_error(key, "a string")),
            };
        }
        Kind::Date => {
            let d = match value {
                None => None,
                Some(Value::String(s)) => Some(parse_date(s).map_err(|e| {
                    FieldError::new(
                        key,
                        "invalid_date",
                        format!("{}.", capitalise(&e.to_string())),
                    )
                })?),
                Some(_) => return Err(type_error(key, "a date string (YYYY-MM-DD or MM/DD/YYYY)")),
            };
            match fd.target {
                Target::Column(c) => input.columns.push((c, ColumnValue::Date(d))),
                Target::Period("start_date") => input.start_date = Some(d),
                Target::Period(_) => input.terminated_date = Some(d),
                _ => {}
            }
        }
        Kind::Int => {
            let n = match value {
                None => None,
                Some(v) => Some(
                    v.as_i64()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| type_error(key, "a positive integer"))?,
                ),
            };
            match fd.target {
                Target::Column(c) => input.columns.push((c, ColumnValue::Int(n))),
                _ => input.id = n,
            }
        }
        Kind::Language => {
            let n = match value {
                None => None,
                Some(v) => Some(match v.as_i64() {
                    Some(1) => 1,
                    Some(2) => 2,
                    _ => {
                        return Err(FieldError::new(
                            key,
                            "invalid_value",
                            "Must be 1 (English) or 2 (Spanish).",
                        ))
                    }
                }),
            };
            if let Target::Column(c) = fd.target {
                input.columns.push((c, ColumnValue::SmallInt(n)));
            }
        }
        Kind::Ssn => {
            input.ssn = Some(match value {
                None => None,
                Some(Value::String(s)) => Some(Ssn::parse(s.trim()).map_err(|e| match e {
                    SsnError::Format => {
                        FieldError::new(key, "invalid_format", "Must be written ###-##-####.")
                    }
                    SsnError::Invalid => {
                        FieldError::new(key, "invalid_value", "Is not a number the SSA issues.")
                    }
                })?),
                Some(_) => return Err(type_error(key, "a string written ###-##-####")),
            });
        }
        Kind::Bool => {
            let b = match value {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(type_error(key, "true or false")),
            };
            match fd.name {
                "createLogin" => input.create_login = b,
                _ => input.send_login_email = b,
            }
        }
        Kind::I9Choice => {
            let Some(v) = value else { return Ok(()) };
            let if_allowed = match v.as_str() {
                Some("yes") => false,
                Some("if allowed") => true,
                _ => {
                    return Err(FieldError::new(
                        key,
                        "invalid_value",
                        "Must be \"yes\" or \"if allowed\" (lower case).",
                    ))
                }
            };
            choices.push(key);
            input.i9 = Some(I9Wish {
                remote: fd.name == "createRemotehireI9",
                if_allowed,
            });
        }
        Kind::Rehire => match value {
            None => {}
            Some(v) if v.as_str() == Some("yes") => input.rehire = true,
            Some(_) => return Err(FieldError::new(key, "invalid_value", "Must be \"yes\".")),
        },
    }
    Ok(())
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(r: Result<EmployeeInput, Vec<FieldError>>) -> Vec<(String, &'static str)> {
        r.err()
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.field, e.code))
            .collect()
    }

    #[test]
    fn a_minimal_create_is_valid() {
        let input = parse(
            &json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3}),
            Operation::Create,
        )
        .unwrap();
        assert_eq!(input.int("location_id"), Some(Some(3)));
        assert_eq!(input.text("first_name"), Some(Some("Ana")));
        assert!(input.i9.is_none() && !input.create_login);
    }

    #[test]
    fn required_fields_are_named() {
        let errs = fields(parse(&json!({"firstName": "  "}), Operation::Create));
        assert_eq!(
            errs,
            [
                ("firstName".into(), "required"),
                ("lastName".into(), "required"),
                ("locationId".into(), "required")
            ]
        );
        let errs = fields(parse(&json!({"middleName": "X"}), Operation::Update));
        assert_eq!(
            errs.len(),
            3,
            "PATCH requires firstName, lastName and locationId too"
        );
    }

    #[test]
    fn every_bad_field_is_named_at_once() {
        let body = json!({
            "firstName": "A".repeat(41), "lastName": 5, "locationId": "three",
            "socialSecurityNumber": "123456789", "dateOfBirth": "1990-02-30", "languagePreference": 3,
            "emailAddress": "not-an-email", "addressZip": "12345678901", "createLogin": "true",
            "createI9": "Yes", "colour": "blue", "rehire": "yes", "integrationCandidateId": "c-1"
        });
        let errs = fields(parse(&body, Operation::Create));
        for (field, code) in [
            ("firstName", "too_long"),
            ("lastName", "invalid_type"),
            ("locationId", "invalid_type"),
            ("socialSecurityNumber", "invalid_format"),
            ("dateOfBirth", "invalid_date"),
            ("languagePreference", "invalid_value"),
            ("emailAddress", "invalid_format"),
            ("addressZip", "too_long"),
            ("createLogin", "invalid_type"),
            ("createI9", "invalid_value"),
            ("colour", "unknown_field"),
            ("rehire", "not_accepted"),
            ("integrationCandidateId", "not_accepted"),
        ] {
            assert!(
                errs.contains(&(field.to_owned(), code)),
                "{field} {code} in {errs:?}"
            );
        }
    }

    #[test]
    fn i9_choices_are_case_sensitive_and_exclusive() {
        let base = json!({"firstName": "A", "lastName": "B", "locationId": 1});
        let with = |extra: Value| {
            let mut b = base.clone();
            b.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            parse(&b, Operation::Create)
        };
        assert_eq!(
            with(json!({"createI9": "yes"})).unwrap().i9,
            Some(I9Wish {
                remote: false,
                if_allowed: false
            })
        );
        assert_eq!(
            with(json!({"createRemotehireI9": "if allowed"}))
                .unwrap()
                .i9,
            Some(I9Wish {
                remote: true,
                if_allowed: true
            })
        );
        assert_eq!(
            with(json!({"createRemoteHireI9": "yes"})).unwrap().i9,
            Some(I9Wish {
                remote: true,
                if_allowed: false
            })
        );
        for bad in ["Yes", "YES", "If Allowed", "true", "no"] {
            assert_eq!(
                fields(with(json!({"createI9": bad}))),
                [("createI9".into(), "invalid_value")],
                "{bad}"
            );
        }
        let errs = fields(with(
            json!({"createI9": "yes", "createRemotehireI9": "if allowed"}),
        ));
        assert_eq!(
            errs,
            [
                ("createI9".into(), "mutually_exclusive"),
                ("createRemotehireI9".into(), "mutually_exclusive")
            ]
        );
    }

    #[test]
    fn rehire_needs_a_start_date_and_dates_must_be_ordered() {
        let errs = fields(parse(
            &json!({"firstName": "A", "lastName": "B", "locationId": 1, "rehire": "yes"}),
            Operation::Update,
        ));
        assert_eq!(errs, [("startDate".into(), "required")]);
        let errs = fields(parse(
            &json!({"firstName": "A", "lastName": "B", "locationId": 1, "startDate": "2026-05-02", "terminatedDate": "05/01/2026"}),
            Operation::Create,
        ));
        assert_eq!(errs, [("terminatedDate".into(), "before_start")]);
    }

    #[test]
    fn errors_never_echo_values() {
        let r = parse(
            &json!({"firstName": "A", "lastName": "B", "locationId": 1, "socialSecurityNumber": "123-45-678"}),
            Operation::Create,
        );
        let text = format!("{:?}", r.err().unwrap());
        assert!(!text.contains("123-45"));
    }

    #[test]
    fn the_body_must_be_an_object_of_fields() {
        assert!(parse(&json!("x"), Operation::Create).is_err());
    }
}
