//! The bodies of `POST /v1/employees`, `PATCH /v1/employees/{id}` and the
//! partner operation (`POST /v1/partners/i9s/section1`): one type each,
//! whose fields are the specification's parameter table and whose schema is
//! the OpenAPI document's. Each field is read as a [`Field`] of its domain
//! type (`i9_common::domain::fields`, where the limits live), so reading a
//! body never fails on a value: [`EmployeeCreate::check`] and its siblings
//! then name every bad field at once. Values never appear in an error (they
//! may be a social security number).

use i9_common::{
    destination::{self, UrlProblem},
    domain::{
        fields::{
            BirthDate, CalendarDate, CandidateId, City, Country, Custom, EmployeeEmail, Extension,
            Id, JobTitle, MiddleName, NotificationEmail, OtherName, PersonName, Phone, ProfileId,
            ReturnUrl, State, Street, Yes, Zip,
        },
        Field, I9Choice, Invalid, Language, OnboardingType, Required, Ssn,
    },
    models::employee::{EmployeeFields, LoginWish, Period},
};
use std::{collections::BTreeSet, sync::OnceLock};

use serde::Deserialize;
use utoipa::{PartialSchema, ToSchema};

use crate::{
    body::{properties, Problems, RequestBody},
    error::FieldError,
};

/// `createI9` or `createRemotehireI9`: an on-site or a remote-hire I-9.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct I9Wish {
    pub onboarding: OnboardingType,
    /// `if allowed`: add the I-9 only when the employee has no open one.
    pub if_allowed: bool,
}

/// A checked `POST` or `PATCH` body.
#[derive(Debug, Default)]
pub struct EmployeeChange {
    pub fields: EmployeeFields,
    /// `None`: absent (leave the period's as it is); `Some(None)`: clear.
    pub start_date: Option<Option<chrono::NaiveDate>>,
    pub terminated_date: Option<Option<chrono::NaiveDate>>,
    /// The `id` of the body (PATCH: must match the path's).
    pub id: Option<i64>,
    pub login: LoginWish,
    pub i9: Option<I9Wish>,
    pub rehire: bool,
    /// With `rehire`: record it on Supplement B of the existing I-9.
    pub rehire_i9: RehireI9,
}

/// `rehireI9`: what a re-hire does about the I-9 (docs/reverification.md,
/// "Rehire"). `newI9`, the default, is what a re-hire always did: whatever
/// `createI9` asks; `supplementB` records the rehire on the employee's
/// latest I-9, which then covers the new period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RehireI9 {
    #[default]
    NewI9,
    SupplementB,
}

impl RehireI9 {
    const CHOICES: [(&'static str, RehireI9); 2] = [
        ("newI9", RehireI9::NewI9),
        ("supplementB", RehireI9::SupplementB),
    ];
}

impl i9_common::domain::FromJson for RehireI9 {
    fn from_json(value: &serde_json::Value) -> Result<Self, Invalid> {
        i9_common::domain::fields::one_of(value, &Self::CHOICES)
    }
}

impl PartialSchema for RehireI9 {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        i9_common::domain::fields::enum_schema(&Self::CHOICES.map(|(name, _)| name))
    }
}

impl ToSchema for RehireI9 {}

impl EmployeeChange {
    /// The period the body states, where it states one.
    pub fn period(&self) -> Period {
        Period {
            start: self.start_date.flatten(),
            terminated: self.terminated_date.flatten(),
        }
    }

    /// For the audit log: the names of the fields set and the choices made.
    pub fn audit_detail(&self) -> serde_json::Value {
        let mut names = self.fields.names();
        if self.start_date.is_some() {
            names.push("start_date");
        }
        if self.terminated_date.is_some() {
            names.push("terminated_date");
        }
        serde_json::json!({
            "fields": names,
            "i9": self.i9.map(|w| w.onboarding.as_str()),
            "createLogin": self.login.create,
            "sendLoginEmail": self.login.send_email,
            "rehire": self.rehire,
        })
    }
}

/// The body of `POST /v1/employees`: the writable fields of an employee and
/// the request's flags (docs/api.md, "Writing employees", explains each
/// flag). A blank string means null.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({
    "firstName": "Ana", "lastName": "Diaz", "locationId": 3, "startDate": "2026-12-01",
    "emailAddress": "ana.diaz@mail.example", "socialSecurityNumber": "123-45-6789", "createI9": "yes"
}))]
pub struct EmployeeCreate {
    /// Ignored on create; on PATCH, must match the path's id.
    #[serde(default)]
    #[schema(inline)]
    pub id: Field<Id>,
    /// Required.
    #[schema(inline)]
    pub first_name: Required<PersonName>,
    /// Required.
    #[schema(inline)]
    pub last_name: Required<PersonName>,
    #[serde(default)]
    #[schema(inline)]
    pub middle_name: Field<MiddleName>,
    #[serde(default)]
    #[schema(inline)]
    pub social_security_number: Field<Ssn>,
    #[serde(default)]
    #[schema(inline)]
    pub date_of_birth: Field<BirthDate>,
    /// The start of the current period of employment.
    #[serde(default)]
    #[schema(inline)]
    pub start_date: Field<CalendarDate>,
    /// The end of the current period of employment; not before `startDate`.
    #[serde(default)]
    #[schema(inline)]
    pub terminated_date: Field<CalendarDate>,
    /// The employer's own key for the employee; unique, case-insensitive.
    #[serde(default)]
    #[schema(inline)]
    pub profile_id: Field<ProfileId>,
    #[serde(default)]
    #[schema(inline)]
    pub other_name: Field<OtherName>,
    #[serde(default)]
    #[schema(inline)]
    pub job_title: Field<JobTitle>,
    #[serde(default)]
    #[schema(inline)]
    pub email_address: Field<EmployeeEmail>,
    /// The employee's group. Required.
    #[schema(inline)]
    pub location_id: Required<Id>,
    /// The legal entity (EIN) that employs the employee.
    #[serde(default)]
    #[schema(inline)]
    pub legal_entity: Field<Id>,
    #[serde(default)]
    #[schema(inline)]
    pub language_preference: Field<Language>,
    #[serde(default)]
    #[schema(inline)]
    pub custom1: Field<Custom>,
    #[serde(default)]
    #[schema(inline)]
    pub custom2: Field<Custom>,
    #[serde(default)]
    #[schema(inline)]
    pub custom3: Field<Custom>,
    #[serde(default)]
    #[schema(inline)]
    pub custom4: Field<Custom>,
    #[serde(default)]
    #[schema(inline)]
    pub custom5: Field<Custom>,
    #[serde(default)]
    #[schema(inline)]
    pub custom6: Field<Custom>,
    #[serde(default)]
    #[schema(inline)]
    pub custom7: Field<Custom>,
    #[serde(default)]
    #[schema(inline)]
    pub custom8: Field<Custom>,
    #[serde(default)]
    #[schema(inline)]
    pub notification_email1: Field<NotificationEmail>,
    #[serde(default)]
    #[schema(inline)]
    pub notification_email2: Field<NotificationEmail>,
    #[serde(default)]
    #[schema(inline)]
    pub address_street: Field<Street>,
    #[serde(default)]
    #[schema(inline)]
    pub address_street2: Field<Street>,
    #[serde(default)]
    #[schema(inline)]
    pub address_apartment: Field<Street>,
    #[serde(default)]
    #[schema(inline)]
    pub address_city: Field<City>,
    #[serde(default)]
    #[schema(inline)]
    pub address_state: Field<State>,
    #[serde(default)]
    #[schema(inline)]
    pub address_country: Field<Country>,
    #[serde(default)]
    #[schema(inline)]
    pub address_zip: Field<Zip>,
    #[serde(default)]
    #[schema(inline)]
    pub work_number: Field<Phone>,
    #[serde(default)]
    #[schema(inline)]
    pub work_extension: Field<Extension>,
    #[serde(default)]
    #[schema(inline)]
    pub home_number: Field<Phone>,
    #[serde(default)]
    #[schema(inline)]
    pub home_extension: Field<Extension>,
    #[serde(default)]
    #[schema(inline)]
    pub cell_number: Field<Phone>,
    #[serde(default)]
    #[schema(inline)]
    pub cell_extension: Field<Extension>,
    /// Create a sign-in for the employee (login = `emailAddress`).
    #[serde(default)]
    #[schema(inline)]
    pub create_login: Field<bool>,
    /// Email the sign-in a one-time link to set a password.
    #[serde(default)]
    #[schema(inline)]
    pub send_login_email: Field<bool>,
    /// Start an on-site I-9: `yes`, or `if allowed` (only when the employee
    /// has no open I-9). Not with `createRemotehireI9`.
    #[serde(rename = "createI9")]
    #[serde(default)]
    #[schema(inline)]
    pub create_i9: Field<I9Choice>,
    /// Start a remote-hire I-9 (`yes` or `if allowed`); needs
    /// `emailAddress`. Also accepted as `createRemoteHireI9`.
    #[serde(rename = "createRemotehireI9")]
    #[serde(default)]
    #[schema(inline)]
    pub create_remotehire_i9: Field<I9Choice>,
    /// The other spelling of `createRemotehireI9`; give one of the two.
    #[serde(rename = "createRemoteHireI9")]
    #[serde(default)]
    #[schema(inline)]
    pub create_remote_hire_i9: Field<I9Choice>,
}

/// The rule across the I-9 flags that [`EmployeeCreate::check`] enforces and
/// a derived schema cannot state, as a JSON Schema `not` (the OpenAPI
/// document adds it to the create and update bodies): never both spellings
/// of `createRemotehireI9` (whatever their values), and never a value in
/// `createI9` together with one in `createRemotehireI9` (either spelling).
pub fn i9_flags_rule() -> serde_json::Value {
    let choice = serde_json::json!({ "enum": ["yes", "if allowed"] });
    let both = |a: &str, b: &str| {
        serde_json::json!({
            "required": [a, b],
            "properties": { a: choice, b: choice },
        })
    };
    serde_json::json!({
        "anyOf": [
            { "required": ["createRemotehireI9", "createRemoteHireI9"] },
            both("createI9", "createRemotehireI9"),
            both("createI9", "createRemoteHireI9"),
        ]
    })
}

/// The schema of `employeeReturnUrl`: a [`ReturnUrl`] (at most 255
/// characters) that `destination::check_browser_url` accepts: an absolute
/// `https` URL without credentials, of a host name whose last label starts
/// with a letter (the document does not assume `ALLOW_PRIVATE_CALLBACKS`,
/// under which `http` is accepted too).
fn return_url_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    use i9_common::domain::fields::{field_schema, WHITESPACE};
    use utoipa::openapi::{ObjectBuilder, Type};
    const LABEL: &str = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    const LAST: &str = "[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    const PORT: &str =
        "(?::(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?";
    // Neither white space nor a control character.
    const REST: &str =
        r"[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]";
    let value = ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some("An absolute `https` URL without credentials"))
        .max_length(Some(255))
        .pattern(Some(format!(
            "^{WHITESPACE}*https://(?:{LABEL}\\.)*{LAST}{PORT}(?:[/?#]{REST}*)?{WHITESPACE}*$"
        )))
        .into();
    field_schema(value, true)
}

/// The body of `PATCH /v1/employees/{id}`: the fields of a create (each
/// absent one is left as it is; null clears it), and `rehire`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmployeeUpdate {
    #[serde(flatten)]
    #[schema(inline)]
    pub fields: EmployeeCreate,
    /// `yes`, with a new `startDate`: re-hire a terminated employee (a new
    /// period of employment).
    #[serde(default)]
    #[schema(inline)]
    pub rehire: Field<Yes>,
    /// With `rehire`: `newI9` (the default: a new I-9 as `createI9` asks)
    /// or `supplementB` (the rehire recorded on Supplement B of the
    /// employee's latest I-9, within three years of its completion; not
    /// with `createI9` or `createRemotehireI9`). docs/reverification.md.
    #[serde(default, rename = "rehireI9")]
    #[schema(inline)]
    pub rehire_i9: Field<RehireI9>,
}

/// The body of the partner operation (the I column of the specification's
/// table): the candidate, how it onboards, and its employee's fields.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({
    "integrationCandidateId": "cand-8812", "onboardingType": "remote", "firstName": "Ana", "lastName": "Diaz",
    "emailAddress": "ana.diaz@mail.example", "startDate": "2026-12-01", "locationId": 3,
    "employeeReturnUrl": "https://ats.example/candidates/8812"
}))]
pub struct PartnerHire {
    /// The partner's own key for the candidate. Required.
    #[schema(inline)]
    pub integration_candidate_id: Required<CandidateId>,
    /// Required.
    #[schema(inline)]
    pub onboarding_type: Required<OnboardingType>,
    /// Required.
    #[schema(inline)]
    pub first_name: Required<PersonName>,
    /// Required.
    #[schema(inline)]
    pub last_name: Required<PersonName>,
    /// Required.
    #[schema(inline)]
    pub email_address: Required<EmployeeEmail>,
    /// Required.
    #[schema(inline)]
    pub start_date: Required<CalendarDate>,
    /// The employee's group. Required.
    #[schema(inline)]
    pub location_id: Required<Id>,
    /// Where the employee's browser goes after signing Section 1 (an
    /// absolute https URL).
    #[serde(default)]
    #[schema(schema_with = return_url_schema)]
    pub employee_return_url: Field<ReturnUrl>,
    #[serde(default)]
    #[schema(inline)]
    pub middle_name: Field<MiddleName>,
    #[serde(default)]
    #[schema(inline)]
    pub social_security_number: Field<Ssn>,
    #[serde(default)]
    #[schema(inline)]
    pub date_of_birth: Field<BirthDate>,
    #[serde(default)]
    #[schema(inline)]
    pub profile_id: Field<ProfileId>,
    #[serde(default)]
    #[schema(inline)]
    pub job_title: Field<JobTitle>,
    #[serde(default)]
    #[schema(inline)]
    pub legal_entity: Field<Id>,
    #[serde(default)]
    #[schema(inline)]
    pub language_preference: Field<Language>,
    /// For a terminated candidate (a re-hire): `newI9` (the default: a new
    /// I-9 and its Section 1 link) or `supplementB` (the re-hire recorded on
    /// Supplement B of the employee's latest I-9, within three years of its
    /// completion; the answer then has no Section 1 link).
    /// docs/reverification.md, "Rehire".
    #[serde(default, rename = "rehireI9")]
    #[schema(inline)]
    pub rehire_i9: Field<RehireI9>,
}

/// The group and the legal entity a body names, each where its value is a
/// well-formed id, whatever the rest of the body holds: what
/// `write::read_body` looks up, so that one 422 names a `locationId` or
/// `legalEntity` that names nothing together with every other bad field.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct References {
    pub location: Option<i64>,
    pub legal_entity: Option<i64>,
}

/// A body of an employee write, which names a group and may name a legal
/// entity.
pub trait NamesReferences {
    fn references(&self) -> References;
}

impl NamesReferences for EmployeeCreate {
    fn references(&self) -> References {
        References {
            location: self.location_id.value().map(|i| i.0),
            legal_entity: self.legal_entity.value().map(|i| i.0),
        }
    }
}

impl NamesReferences for EmployeeUpdate {
    fn references(&self) -> References {
        self.fields.references()
    }
}

impl NamesReferences for PartnerHire {
    fn references(&self) -> References {
        References {
            location: self.location_id.value().map(|i| i.0),
            legal_entity: self.legal_entity.value().map(|i| i.0),
        }
    }
}

/// Why a terminated period needs its start.
pub const START_OF_TERMINATED: &str = "Needed when the period has a terminatedDate.";

impl EmployeeCreate {
    /// Every field, checked. `Err` names every bad one.
    pub fn check(self) -> Result<EmployeeChange, Vec<FieldError>> {
        let mut p = Problems::default();
        let change = self.read(&mut p);
        // A period that ends has begun (docs/api.md, "Periods of employment").
        // A startDate sent but invalid has its own error, not this one too.
        if change.terminated_date.flatten().is_some()
            && change.start_date.flatten().is_none()
            && !p.names("startDate")
        {
            p.push("startDate", Invalid::new("required", START_OF_TERMINATED));
        }
        p.finish(change)
    }

    fn read(self, p: &mut Problems) -> EmployeeChange {
        let custom = [
            ("custom1", self.custom1),
            ("custom2", self.custom2),
            ("custom3", self.custom3),
            ("custom4", self.custom4),
            ("custom5", self.custom5),
            ("custom6", self.custom6),
            ("custom7", self.custom7),
            ("custom8", self.custom8),
        ]
        .map(|(name, f)| p.patch(name, f));
        let fields = EmployeeFields {
            first_name: p.required("firstName", self.first_name),
            last_name: p.required("lastName", self.last_name),
            middle_name: p.patch("middleName", self.middle_name),
            ssn: p.patch("socialSecurityNumber", self.social_security_number),
            date_of_birth: p.date("dateOfBirth", self.date_of_birth),
            profile_id: p.patch("profileId", self.profile_id),
            other_name: p.patch("otherName", self.other_name),
            job_title: p.patch("jobTitle", self.job_title),
            email_address: p.patch("emailAddress", self.email_address),
            location_id: p.required("locationId", self.location_id).map(|i| i.0),
            legal_entity_id: p
                .patch("legalEntity", self.legal_entity)
                .map(|i| i.map(|i| i.0)),
            language: p.patch("languagePreference", self.language_preference),
            custom,
            notification_email1: p.patch("notificationEmail1", self.notification_email1),
            notification_email2: p.patch("notificationEmail2", self.notification_email2),
            address_street: p.patch("addressStreet", self.address_street),
            address_street2: p.patch("addressStreet2", self.address_street2),
            address_apartment: p.patch("addressApartment", self.address_apartment),
            address_city: p.patch("addressCity", self.address_city),
            address_state: p.patch("addressState", self.address_state),
            address_country: p.patch("addressCountry", self.address_country),
            address_zip: p.patch("addressZip", self.address_zip),
            work_number: p.patch("workNumber", self.work_number),
            work_extension: p.patch("workExtension", self.work_extension),
            home_number: p.patch("homeNumber", self.home_number),
            home_extension: p.patch("homeExtension", self.home_extension),
            cell_number: p.patch("cellNumber", self.cell_number),
            cell_extension: p.patch("cellExtension", self.cell_extension),
        };
        let start_date = p.date("startDate", self.start_date);
        let terminated_date = p.date("terminatedDate", self.terminated_date);
        if let (Some(Some(start)), Some(Some(end))) = (start_date, terminated_date) {
            if end < start {
                p.push(
                    "terminatedDate",
                    Invalid::new("before_start", "Must not be before startDate."),
                );
            }
        }
        let login = LoginWish {
            create: p
                .optional("createLogin", self.create_login)
                .unwrap_or(false),
            send_email: p
                .optional("sendLoginEmail", self.send_login_email)
                .unwrap_or(false),
        };
        if !self.create_remote_hire_i9.is_absent() && !self.create_remotehire_i9.is_absent() {
            p.push(
                "createRemoteHireI9",
                Invalid::new("repeated", "Give createRemotehireI9 once."),
            );
        }
        let (remote_name, remote) = if self.create_remotehire_i9.is_absent() {
            ("createRemoteHireI9", self.create_remote_hire_i9)
        } else {
            ("createRemotehireI9", self.create_remotehire_i9)
        };
        let on_site = p.optional("createI9", self.create_i9);
        let remote = p.optional(remote_name, remote);
        let wish = |onboarding, choice| I9Wish {
            onboarding,
            if_allowed: choice == I9Choice::IfAllowed,
        };
        let i9 = match (on_site, remote) {
            (Some(_), Some(_)) => {
                for name in ["createI9", remote_name] {
                    p.push(
                        name,
                        Invalid::new(
                            "mutually_exclusive",
                            "createI9 and createRemotehireI9 cannot both be sent.",
                        ),
                    );
                }
                None
            }
            (Some(c), None) => Some(wish(OnboardingType::OnSite, c)),
            (None, Some(c)) => Some(wish(OnboardingType::Remote, c)),
            (None, None) => None,
        };
        EmployeeChange {
            fields,
            start_date,
            terminated_date,
            id: p.optional("id", self.id).map(|i| i.0),
            login,
            i9,
            rehire: false,
            rehire_i9: RehireI9::NewI9,
        }
    }
}

impl EmployeeUpdate {
    /// Every field, checked. `Err` names every bad one.
    pub fn check(self) -> Result<EmployeeChange, Vec<FieldError>> {
        let mut p = Problems::default();
        let mut change = self.fields.read(&mut p);
        change.rehire = p.optional("rehire", self.rehire).is_some();
        change.rehire_i9 = p.optional("rehireI9", self.rehire_i9).unwrap_or_default();
        if change.rehire_i9 == RehireI9::SupplementB {
            if !change.rehire && !p.names("rehire") {
                p.push(
                    "rehireI9",
                    Invalid::new("requires_rehire", "rehireI9 goes with rehire: yes."),
                );
            }
            if change.i9.is_some() {
                p.push(
                    "rehireI9",
                    Invalid::new(
                        "mutually_exclusive",
                        "A rehire recorded on Supplement B starts no new I-9: leave out createI9 and createRemotehireI9.",
                    ),
                );
            }
        }
        if change.rehire && change.start_date.flatten().is_none() && !p.names("startDate") {
            p.push(
                "startDate",
                Invalid::new("required", "A re-hire needs the new startDate."),
            );
        }
        p.finish(change)
    }
}

/// A checked partner body.
#[derive(Debug)]
pub struct PartnerChange {
    pub candidate: String,
    pub onboarding: OnboardingType,
    pub return_url: Option<String>,
    pub start_date: chrono::NaiveDate,
    pub fields: EmployeeFields,
    /// What a re-hire of a terminated candidate does about the I-9.
    pub rehire_i9: RehireI9,
}

impl PartnerHire {
    /// Every field, checked. `allow_http`: `employeeReturnUrl` may be http
    /// as well as https (`ALLOW_PRIVATE_CALLBACKS`, local runs;
    /// `common/src/destination.rs`).
    pub fn check(self, allow_http: bool) -> Result<PartnerChange, Vec<FieldError>> {
        let mut p = Problems::default();
        let candidate = p.required("integrationCandidateId", self.integration_candidate_id);
        let onboarding = p.required("onboardingType", self.onboarding_type);
        let start_date = p.required("startDate", self.start_date);
        let email = p.required("emailAddress", self.email_address);
        let return_url = p
            .optional("employeeReturnUrl", self.employee_return_url)
            .and_then(
                |url| match destination::check_browser_url(url.as_str(), allow_http) {
                    Ok(()) => Some(url.into_string()),
                    Err(problem) => {
                        p.push("employeeReturnUrl", url_problem(problem, allow_http));
                        None
                    }
                },
            );
        let fields = EmployeeFields {
            first_name: p.required("firstName", self.first_name),
            last_name: p.required("lastName", self.last_name),
            middle_name: p.patch("middleName", self.middle_name),
            ssn: p.patch("socialSecurityNumber", self.social_security_number),
            date_of_birth: p.date("dateOfBirth", self.date_of_birth),
            profile_id: p.patch("profileId", self.profile_id),
            job_title: p.patch("jobTitle", self.job_title),
            email_address: email.map(Some),
            location_id: p.required("locationId", self.location_id).map(|i| i.0),
            legal_entity_id: p
                .patch("legalEntity", self.legal_entity)
                .map(|i| i.map(|i| i.0)),
            language: p.patch("languagePreference", self.language_preference),
            ..EmployeeFields::default()
        };
        let rehire_i9 = p.optional("rehireI9", self.rehire_i9).unwrap_or_default();
        let (Some(candidate), Some(onboarding), Some(start)) = (candidate, onboarding, start_date)
        else {
            return Err(p.into_errors());
        };
        p.finish(PartnerChange {
            candidate: candidate.into_string(),
            onboarding,
            return_url,
            start_date: start.0,
            fields,
            rehire_i9,
        })
    }
}

fn unknown_field(name: &str) -> FieldError {
    FieldError::new(name, "unknown_field", "Not a field of an employee.")
}

fn partner_only(name: &str) -> Option<FieldError> {
    PartnerHire::fields().contains(name).then(|| {
        FieldError::new(
            name,
            "not_accepted",
            "Only the partner operation (POST /v1/partners/i9s/section1) accepts this field.",
        )
    })
}

impl RequestBody for EmployeeCreate {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        if name == "rehire" || name == "rehireI9" {
            return FieldError::new(
                name,
                "not_accepted",
                "Re-hire an existing employee with PATCH /v1/employees/{id}.",
            );
        }
        partner_only(name).unwrap_or_else(|| unknown_field(name))
    }
}

impl RequestBody for EmployeeUpdate {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        partner_only(name).unwrap_or_else(|| unknown_field(name))
    }
}

impl RequestBody for PartnerHire {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        if EmployeeUpdate::fields().contains(name) {
            return FieldError::new(
                name,
                "not_accepted",
                "The partner operation does not accept this field.",
            );
        }
        unknown_field(name)
    }
}

fn url_problem(problem: UrlProblem, allow_http: bool) -> Invalid {
    match problem {
        UrlProblem::HttpsRequired => Invalid::new("https_required", "Must be an https URL."),
        UrlProblem::Credentials => Invalid::new(
            "credentials_in_url",
            "Must not hold a user name or password (user:password@).",
        ),
        UrlProblem::NotHostName => Invalid::new(
            "invalid_format",
            "Must start with https:// and name its host by a DNS name in ASCII (letters, digits \
             and hyphens; not an IP address).",
        ),
        _ => Invalid::new(
            "invalid_format",
            if allow_http {
                "Must be an absolute http(s) URL."
            } else {
                "Must be an absolute https URL."
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn create(body: Value) -> Result<EmployeeChange, Vec<FieldError>> {
        serde_json::from_value::<EmployeeCreate>(body)
            .unwrap()
            .check()
    }

    fn codes(r: Result<EmployeeChange, Vec<FieldError>>) -> Vec<(String, &'static str)> {
        r.err()
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.field, e.code))
            .collect()
    }

    #[test]
    fn a_minimal_create_is_valid() {
        let c = create(json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3})).unwrap();
        assert_eq!(c.fields.location_id, Some(3));
        assert_eq!(
            c.fields.first_name.as_ref().map(|n| n.as_str()),
            Some("Ana")
        );
        assert!(c.i9.is_none() && !c.login.create);
    }

    #[test]
    fn required_fields_are_named() {
        assert_eq!(
            codes(create(json!({"firstName": "  "}))),
            [
                ("firstName".into(), "required"),
                ("lastName".into(), "required"),
                ("locationId".into(), "required")
            ]
        );
    }

    #[test]
    fn every_bad_field_is_named_at_once() {
        let errs = codes(create(json!({
            "firstName": "A".repeat(41), "lastName": 5, "locationId": "three",
            "socialSecurityNumber": "123456789", "dateOfBirth": "1990-02-30", "languagePreference": 3,
            "emailAddress": "not-an-email", "addressZip": "12345678901", "createLogin": "true",
            "createI9": "Yes"
        })));
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
        ] {
            assert!(
                errs.contains(&(field.to_owned(), code)),
                "{field} {code} in {errs:?}"
            );
        }
        assert_eq!(errs.len(), 10, "{errs:?}");
    }

    #[test]
    fn i9_choices_are_case_sensitive_and_exclusive() {
        let base = || json!({"firstName": "A", "lastName": "B", "locationId": 1});
        let with = |extra: Value| {
            let mut b = base();
            b.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            create(b)
        };
        let wish = |onboarding, if_allowed| {
            Some(I9Wish {
                onboarding,
                if_allowed,
            })
        };
        assert_eq!(
            with(json!({"createI9": "yes"})).unwrap().i9,
            wish(OnboardingType::OnSite, false)
        );
        assert_eq!(
            with(json!({"createRemotehireI9": "if allowed"}))
                .unwrap()
                .i9,
            wish(OnboardingType::Remote, true)
        );
        assert_eq!(
            with(json!({"createRemoteHireI9": "yes"})).unwrap().i9,
            wish(OnboardingType::Remote, false)
        );
        for bad in ["Yes", "YES", "If Allowed", "true", "no"] {
            assert_eq!(
                codes(with(json!({"createI9": bad}))),
                [("createI9".into(), "invalid_value")],
                "{bad}"
            );
        }
        assert_eq!(
            codes(with(
                json!({"createI9": "yes", "createRemotehireI9": "if allowed"})
            )),
            [
                ("createI9".into(), "mutually_exclusive"),
                ("createRemotehireI9".into(), "mutually_exclusive")
            ]
        );
    }

    #[test]
    fn rehire_needs_a_start_date_and_dates_must_be_ordered() {
        let update: EmployeeUpdate = serde_json::from_value(
            json!({"firstName": "A", "lastName": "B", "locationId": 1, "rehire": "yes"}),
        )
        .unwrap();
        assert_eq!(codes(update.check()), [("startDate".into(), "required")]);
        assert_eq!(
            codes(create(
                json!({"firstName": "A", "lastName": "B", "locationId": 1, "startDate": "2026-05-02", "terminatedDate": "05/01/2026"})
            )),
            [("terminatedDate".into(), "before_start")]
        );
    }

    /// `rehireI9: "supplementB"` goes with `rehire`, and starts no new I-9
    /// (docs/reverification.md, "Rehire"); `newI9` is the default.
    #[test]
    fn rehire_i9_goes_with_a_rehire_and_without_a_new_i9() {
        let update = |v: serde_json::Value| {
            let mut body = json!({"firstName": "A", "lastName": "B", "locationId": 1,
                                  "startDate": "2026-12-01"});
            body.as_object_mut()
                .unwrap()
                .extend(v.as_object().unwrap().clone());
            serde_json::from_value::<EmployeeUpdate>(body)
                .unwrap()
                .check()
        };
        assert_eq!(
            update(json!({"rehire": "yes"})).unwrap().rehire_i9,
            RehireI9::NewI9
        );
        assert_eq!(
            update(json!({"rehire": "yes", "rehireI9": "supplementB"}))
                .unwrap()
                .rehire_i9,
            RehireI9::SupplementB
        );
        assert_eq!(
            codes(update(json!({"rehireI9": "supplementB"}))),
            [("rehireI9".into(), "requires_rehire")]
        );
        assert_eq!(
            codes(update(
                json!({"rehire": "yes", "rehireI9": "supplementB", "createRemotehireI9": "yes"})
            )),
            [("rehireI9".into(), "mutually_exclusive")]
        );
        assert_eq!(
            codes(update(json!({"rehire": "yes", "rehireI9": "SupplementB"}))),
            [("rehireI9".into(), "invalid_value")]
        );
    }

    /// `required` is for a startDate absent or null: one sent but invalid
    /// has its `invalid_date` alone.
    #[test]
    fn an_invalid_start_date_is_not_also_required() {
        let both = |body| {
            let mut c = codes(create(body));
            c.retain(|(f, _)| f == "startDate");
            c
        };
        assert_eq!(
            both(json!({"firstName": "A", "lastName": "B", "locationId": 1,
                        "startDate": "2026-02-30", "terminatedDate": "2026-06-30"})),
            [("startDate".into(), "invalid_date")]
        );
        for start in [json!(null), json!("absent")] {
            let mut body = json!({"firstName": "A", "lastName": "B", "locationId": 1,
                                  "terminatedDate": "2026-06-30"});
            if start.is_null() {
                body["startDate"] = start;
            }
            assert_eq!(both(body), [("startDate".into(), "required")]);
        }
        let update: EmployeeUpdate =
            serde_json::from_value(json!({"firstName": "A", "lastName": "B",
            "locationId": 1, "rehire": "yes", "startDate": "2026-02-30"}))
            .unwrap();
        assert_eq!(
            codes(update.check()),
            [("startDate".into(), "invalid_date")]
        );
    }

    #[test]
    fn patch_keeps_absent_apart_from_null() {
        let update: EmployeeUpdate = serde_json::from_value(
            json!({"firstName": "A", "lastName": "B", "locationId": 1, "middleName": null}),
        )
        .unwrap();
        let c = update.check().unwrap();
        assert_eq!(c.fields.middle_name, Some(None));
        assert_eq!(c.fields.job_title, None);
    }

    #[test]
    fn errors_never_echo_values() {
        let r = create(
            json!({"firstName": "A", "lastName": "B", "locationId": 1, "socialSecurityNumber": "123-45-678"}),
        );
        assert!(!format!("{:?}", r.err().unwrap()).contains("123-45"));
    }

    /// The document is the contract: every property it lists for a body is
    /// a field the body reads, every stated length is the one enforced, and
    /// nothing else is accepted (`crate::body::schema_is_enforced`).
    #[test]
    fn the_schema_states_the_fields_and_limits_each_body_enforces() {
        use crate::body::schema_is_enforced as each;
        assert_eq!(each(|b: EmployeeCreate| b.check().map(drop)), 43);
        assert_eq!(each(|b: EmployeeUpdate| b.check().map(drop)), 45);
        assert_eq!(each(|b: PartnerHire| b.check(false).map(drop)), 16);
    }
}
