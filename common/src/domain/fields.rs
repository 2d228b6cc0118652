//! The values of a written field, each built only by parsing: a request body
//! (the API) and an organization file (`i9-admin seed`) read their fields
//! through these, so a limit or a format is written once, here.
//!
//! A body is read into [`Field`]s, which never fail to deserialize: a value
//! that does not parse is kept as [`Field::Invalid`], so that one answer can
//! name every bad field. Each type also describes itself for the OpenAPI
//! document ([`utoipa::PartialSchema`]), so the document states the limits
//! the server enforces.

use chrono::NaiveDate;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use utoipa::{
    openapi::{KnownFormat, ObjectBuilder, RefOr, Schema, SchemaFormat, Type},
    PartialSchema,
};

use super::{check_birth_date, parse_date, Ssn, SsnError, BIRTH_DATE_RULE, DATE_RULE};

/// Why a value did not parse: a stable code and a message for the client.
/// Never the value itself (it may be a social security number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub code: &'static str,
    pub message: String,
}

impl Invalid {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    fn not(what: &str) -> Self {
        Self::new("invalid_type", format!("Must be {what}."))
    }
}

/// A value read from JSON.
pub trait FromJson: Sized {
    fn from_json(value: &Value) -> Result<Self, Invalid>;

    /// Whether a blank string means "no value" (null). True for all but
    /// booleans.
    const BLANK_IS_NULL: bool = true;
}

/// One field of a request: absent, null (clear it), a value, or a value
/// that did not parse.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Field<T> {
    #[default]
    Absent,
    Null,
    Value(T),
    Invalid(Invalid),
}

impl<T> Field<T> {
    pub fn is_absent(&self) -> bool {
        matches!(self, Field::Absent)
    }

    /// `None` when absent, `Some(None)` when null; the problem when invalid.
    pub fn patch(self) -> Result<Option<Option<T>>, Invalid> {
        match self {
            Field::Absent => Ok(None),
            Field::Null => Ok(Some(None)),
            Field::Value(v) => Ok(Some(Some(v))),
            Field::Invalid(e) => Err(e),
        }
    }

    /// A field that must hold a value.
    pub fn required(self) -> Result<T, Invalid> {
        match self {
            Field::Value(v) => Ok(v),
            Field::Invalid(e) => Err(e),
            Field::Absent | Field::Null => Err(Invalid::new("required", "Required.")),
        }
    }

    /// A field that may be absent or null (both: no value).
    pub fn optional(self) -> Result<Option<T>, Invalid> {
        self.patch().map(Option::flatten)
    }

    /// The value, when one was given and parsed.
    pub fn value(&self) -> Option<&T> {
        match self {
            Field::Value(v) => Some(v),
            _ => None,
        }
    }
}

impl<'de, T: FromJson> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(match &value {
            Value::Null => Field::Null,
            Value::String(s) if T::BLANK_IS_NULL && s.trim().is_empty() => Field::Null,
            v => match T::from_json(v) {
                Ok(t) => Field::Value(t),
                Err(e) => Field::Invalid(e),
            },
        })
    }
}

// `utoipa::__dev::ComposeSchema` is how utoipa's derive reads the schema of a
// generic field type (`Field<Text<40>>`); through its blanket impl it gives
// `PartialSchema` too. Hidden, so pinned by Cargo.lock: a utoipa update that
// changes it fails to compile here, not at run time.
//
// A field is its value, `null`, or (for all but booleans) a blank string,
// which means null: `oneOf` the three, the value's schema first.
impl<T: PartialSchema + FromJson> utoipa::__dev::ComposeSchema for Field<T> {
    fn compose(_generics: Vec<RefOr<Schema>>) -> RefOr<Schema> {
        field_schema(T::schema(), T::BLANK_IS_NULL)
    }
}

/// The schema of a [`Field`] whose value has the schema `value`: the value,
/// `null`, or (`blank_is_null`) a blank string.
///
/// `oneOf`, so each value must match exactly one branch: `value` must
/// refuse null and a blank string by itself (a type, an enum or a pattern;
/// `format` is not enough, since validators need not assert it). A test of
/// the document (`one_of_branches_never_both_take_a_blank_string_or_null`,
/// tests/tests/api/openapi.rs) holds every `oneOf` to it.
pub fn field_schema(value: RefOr<Schema>, blank_is_null: bool) -> RefOr<Schema> {
    let mut one_of = utoipa::openapi::OneOfBuilder::new()
        .item(value)
        .item(ObjectBuilder::new().schema_type(Type::Null));
    if blank_is_null {
        one_of = one_of.item(
            string_schema()
                .description(Some("Blank: no value (as null)"))
                .pattern(Some(format!("^{WHITESPACE}*$"))),
        );
    }
    one_of.into()
}

/// The characters `str::trim` removes (Unicode `White_Space`), as a regular
/// expression class: what the schemas allow around a value.
pub const WHITESPACE: &str =
    r"[\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]";

/// A character that is neither white space nor NUL: a non-blank value holds one.
pub const VISIBLE: &str =
    r"[^\u0000\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]";

/// A field that must hold a value: absent or null is `required`. Its schema
/// is its value's, listed among the object's required properties.
#[derive(Debug, Clone, PartialEq)]
pub struct Required<T>(Field<T>);

impl<T> Required<T> {
    pub fn get(self) -> Result<T, Invalid> {
        self.0.required()
    }

    /// The value, when one was given and parsed.
    pub fn value(&self) -> Option<&T> {
        self.0.value()
    }
}

impl<T> Default for Required<T> {
    fn default() -> Self {
        Self(Field::Absent)
    }
}

impl<'de, T: FromJson> Deserialize<'de> for Required<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Through `Option`: serde reads a missing member (no
        // `#[serde(default)]`, so that the schema lists it as required) as
        // `None` rather than failing; null is `None` too.
        Ok(Self(match Option::<Value>::deserialize(d)? {
            None => Field::Null,
            Some(Value::String(s)) if T::BLANK_IS_NULL && s.trim().is_empty() => Field::Null,
            Some(v) => match T::from_json(&v) {
                Ok(t) => Field::Value(t),
                Err(e) => Field::Invalid(e),
            },
        }))
    }
}

impl<T: PartialSchema> utoipa::__dev::ComposeSchema for Required<T> {
    fn compose(_generics: Vec<RefOr<Schema>>) -> RefOr<Schema> {
        T::schema()
    }
}

fn string_schema() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

/// The string as sent: [`Text::parse`] and [`Email::parse`] count its
/// characters (surrounding white space included, as the document's
/// `maxLength` does), then trim it.
fn text(value: &Value) -> Result<&str, Invalid> {
    value.as_str().ok_or_else(|| Invalid::not("a string"))
}

fn at_most(s: &str, max: usize) -> Result<(), Invalid> {
    if s.chars().count() > max {
        return Err(Invalid::new(
            "too_long",
            format!("At most {max} characters."),
        ));
    }
    Ok(())
}

/// Text of at most `MAX` characters, trimmed, not blank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<const MAX: usize>(String);

impl<const MAX: usize> Text<MAX> {
    /// At most `MAX` characters as written (surrounding white space
    /// included, so that the document's `maxLength` is the rule), then trimmed.
    pub fn parse(s: &str) -> Result<Self, Invalid> {
        at_most(s, MAX)?;
        let s = s.trim();
        if s.is_empty() {
            return Err(Invalid::new("required", "Must not be blank."));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl<const MAX: usize> FromJson for Text<MAX> {
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        Self::parse(text(value)?)
    }
}

impl<const MAX: usize> PartialSchema for Text<MAX> {
    fn schema() -> RefOr<Schema> {
        string_schema()
            .min_length(Some(1))
            .max_length(Some(MAX))
            .pattern(Some(format!("^[^\\u0000]*{VISIBLE}[^\\u0000]*$")))
            .into()
    }
}

/// An email address of at most `MAX` characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email<const MAX: usize>(String);

impl<const MAX: usize> Email<MAX> {
    pub fn parse(s: &str) -> Result<Self, Invalid> {
        at_most(s, MAX)?;
        let s = s.trim();
        // A domain with a dot: `ana@localhost` reaches no employee. An
        // address alone: no display name (`Ana <ana@x.example>` would be
        // stored as written), no address literal (`ana@[127.0.0.1]`).
        let options = email_address::Options::default()
            .without_display_text()
            .without_domain_literal();
        if email_address::EmailAddress::parse_with_options(s, options).is_err()
            || !s.rsplit_once('@').is_some_and(|(_, d)| d.contains('.'))
        {
            return Err(Invalid::new("invalid_format", "Must be an email address."));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl<const MAX: usize> FromJson for Email<MAX> {
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        Self::parse(text(value)?)
    }
}

impl<const MAX: usize> PartialSchema for Email<MAX> {
    /// `format: email`, and what [`Email::parse`] holds an address to
    /// beyond it, in the description (and, for the domain's dot, the
    /// pattern). The pattern also keeps a blank string out of this branch
    /// of a [`Field`]'s `oneOf`, where it is the blank branch's (null).
    fn schema() -> RefOr<Schema> {
        string_schema()
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Email)))
            .description(Some(EMAIL_RULES))
            .max_length(Some(MAX))
            .pattern(Some(EMAIL_PATTERN))
            .into()
    }
}

/// What [`Email::parse`] accepts, for the document (the `email_address`
/// crate's rules, and a dot in the domain); a test of the document
/// (`tests/tests/api/openapi.rs`) holds the parser to them.
pub const EMAIL_RULES: &str = "An email address, white space around it trimmed: a local part \
of 1 to 64 bytes (UTF-8), `@`, and a domain of at most 254 bytes that holds at least one dot \
(`ana@localhost` is refused), in labels of 1 to 63 bytes that start and end with a letter or \
digit. Letters and digits of any script are accepted (`jörg@bücher.de`); other non-ASCII \
characters (`€`, emoji) are not. The address alone: no display name (`Ana <ana@example.com>`) \
and no address literal (`ana@[192.0.2.1]`).";

/// The domain of an accepted address (after its last `@`) holds a dot.
pub const EMAIL_PATTERN: &str = r"@[^@]*\.[^@]*$";

/// A calendar date written `YYYY-MM-DD` or `MM/DD/YYYY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CalendarDate(pub NaiveDate);

impl FromJson for CalendarDate {
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        let s = value
            .as_str()
            .ok_or_else(|| Invalid::not("a date string (YYYY-MM-DD or MM/DD/YYYY)"))?;
        parse_date(s)
            .map(CalendarDate)
            .map_err(|_| Invalid::new("invalid_date", DATE_RULE))
    }
}

impl PartialSchema for CalendarDate {
    fn schema() -> RefOr<Schema> {
        string_schema()
            .description(Some("`YYYY-MM-DD` or `MM/DD/YYYY`"))
            .pattern(Some(date_pattern()))
            .into()
    }
}

impl From<CalendarDate> for NaiveDate {
    fn from(d: CalendarDate) -> Self {
        d.0
    }
}

/// A date of birth: a [`CalendarDate`] not after today (UTC). One in the
/// future is `invalid_value` (docs/api.md, "Writing employees").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct BirthDate(pub NaiveDate);

impl FromJson for BirthDate {
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        let CalendarDate(d) = CalendarDate::from_json(value)?;
        check_birth_date(d, chrono::Utc::now().date_naive())
            .map(BirthDate)
            .map_err(|_| Invalid::new("invalid_value", BIRTH_DATE_RULE))
    }
}

impl From<BirthDate> for NaiveDate {
    fn from(d: BirthDate) -> Self {
        d.0
    }
}

impl PartialSchema for BirthDate {
    fn schema() -> RefOr<Schema> {
        string_schema()
            .description(Some(
                "`YYYY-MM-DD` or `MM/DD/YYYY`, not after today (UTC): a date in the future is `invalid_value`",
            ))
            .pattern(Some(date_pattern()))
            .into()
    }
}

/// A date [`parse_date`] reads, as a regular expression: `YYYY-MM-DD` or
/// `MM/DD/YYYY` of a day that exists (29 February in leap years only), in
/// the years 1900 to 2099,
/// white space around allowed (it is trimmed).
pub fn date_pattern() -> String {
    // 1900 to 2099 (`date::FIRST_YEAR`, `LAST_YEAR`).
    const YEAR: &str = "(?:19|20)[0-9]{2}";
    // Of those, the years divisible by 4, except 1900.
    const LEAP: &str = "(?:(?:19|20)(?:0[48]|[2468][048]|[13579][26])|2000)";
    // Month and day, `{sep}` between them.
    let month_day = |sep: char| {
        [
            format!("(?:0[13578]|1[02]){sep}(?:0[1-9]|[12][0-9]|3[01])"),
            format!("(?:0[469]|11){sep}(?:0[1-9]|[12][0-9]|30)"),
            format!("02{sep}(?:0[1-9]|1[0-9]|2[0-8])"),
        ]
        .join("|")
    };
    let (iso, us) = (month_day('-'), month_day('/'));
    format!(
        "^{WHITESPACE}*(?:{YEAR}-(?:{iso})|{LEAP}-02-29|(?:{us})/{YEAR}|02/29/{LEAP}){WHITESPACE}*$"
    )
}

/// An SSN [`Ssn::parse`] accepts, as a regular expression (white space
/// around allowed: it is trimmed).
pub fn ssn_pattern() -> String {
    const AREA: &str =
        "(?:00[1-9]|0[1-9][0-9]|[1-5][0-9]{2}|6[0-57-9][0-9]|66[0-57-9]|[78][0-9]{2})";
    const GROUP: &str = "(?:0[1-9]|[1-9][0-9])";
    const SERIAL: &str = "(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})";
    format!("^{WHITESPACE}*{AREA}-{GROUP}-{SERIAL}{WHITESPACE}*$")
}

/// The id of a record: a positive integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Id(pub i64);

/// A JSON number that is an integer: `3`, and `3.0` too (JSON, and the
/// schema's `integer`, do not tell them apart).
fn integer(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        let f = value.as_f64()?;
        // Below 2^63 (`i64::MAX as f64` rounds up to it).
        (f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64).then_some(f as i64)
    })
}

impl FromJson for Id {
    /// Not an integer: `invalid_type`; an integer out of range (0, -1,
    /// 2^63): `invalid_value` (docs/api.md, "Errors").
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        match integer(value) {
            Some(n) if n > 0 => Ok(Id(n)),
            Some(_) => Err(Invalid::new("invalid_value", ID_RULE)),
            None if is_integral(value) => Err(Invalid::new("invalid_value", ID_RULE)),
            None => Err(Invalid::not("a positive integer")),
        }
    }
}

/// What an id must be, as an error says it.
const ID_RULE: &str = "Must be a positive integer of at most 9223372036854775807.";

/// A JSON number without a fraction, whatever its size.
fn is_integral(value: &Value) -> bool {
    value.is_u64() || value.is_i64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
}

impl PartialSchema for Id {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1))
            .maximum(Some(i64::MAX))
            .into()
    }
}

impl FromJson for bool {
    const BLANK_IS_NULL: bool = false;

    fn from_json(value: &Value) -> Result<Self, Invalid> {
        value.as_bool().ok_or_else(|| Invalid::not("true or false"))
    }
}

impl FromJson for Ssn {
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        let s = value
            .as_str()
            .ok_or_else(|| Invalid::not("a string written ###-##-####"))?;
        Ssn::parse(s.trim()).map_err(|e| match e {
            SsnError::Format => Invalid::new("invalid_format", Ssn::FORMAT_RULE),
            SsnError::Invalid => Invalid::new("invalid_value", Ssn::NEVER_ISSUED),
        })
    }
}

impl PartialSchema for Ssn {
    fn schema() -> RefOr<Schema> {
        string_schema()
            .description(Some(
                "`###-##-####`, a number the SSA issues (not area 000, 666 or 9xx, group 00 or serial 0000)",
            ))
            .pattern(Some(ssn_pattern()))
            .into()
    }
}

/// Parse one of `choices` (exact spelling) into `T`: not a string is
/// `invalid_type`, another string `invalid_value`.
pub fn one_of<T: Copy>(value: &Value, choices: &[(&str, T)]) -> Result<T, Invalid> {
    let found = value
        .as_str()
        .and_then(|s| choices.iter().find(|(name, _)| *name == s));
    found.map(|(_, t)| *t).ok_or_else(|| {
        let names: Vec<String> = choices.iter().map(|(n, _)| format!("\"{n}\"")).collect();
        let list = match names.as_slice() {
            [one] => one.clone(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
            [] => String::new(),
        };
        let code = match value.is_string() {
            true => "invalid_value",
            false => "invalid_type",
        };
        Invalid::new(code, format!("Must be {list}."))
    })
}

/// The schema of a string that is one of `choices`.
pub fn enum_schema(choices: &[&str]) -> RefOr<Schema> {
    string_schema()
        .enum_values(Some(choices.iter().copied()))
        .into()
}

/// The employee's language for the forms and emails: 1 English, 2 Spanish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, sqlx::Type, serde::Serialize)]
#[repr(i16)]
pub enum Language {
    #[default]
    English = 1,
    Spanish = 2,
}

impl Language {
    /// What a value must be, as an error says it.
    pub const RULE: &'static str = "Must be 1 (English) or 2 (Spanish).";

    pub fn from_id(id: i64) -> Option<Self> {
        match id {
            1 => Some(Language::English),
            2 => Some(Language::Spanish),
            _ => None,
        }
    }

    pub fn id(self) -> i16 {
        self as i16
    }
}

impl FromJson for Language {
    /// Not an integer (`"2"`): `invalid_type`; another integer:
    /// `invalid_value`.
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        match integer(value) {
            Some(n) => {
                Language::from_id(n).ok_or_else(|| Invalid::new("invalid_value", Language::RULE))
            }
            None if is_integral(value) => Err(Invalid::new("invalid_value", Language::RULE)),
            None => Err(Invalid::new("invalid_type", Language::RULE)),
        }
    }
}

impl PartialSchema for Language {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .description(Some("1 English, 2 Spanish"))
            .enum_values(Some([1, 2]))
            .into()
    }
}

/// How the employee onboards: on site (the employer examines the documents
/// in person) or remote (the employee gets the Section 1 link by email).
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::Type, serde::Serialize)]
#[sqlx(type_name = "TEXT")]
pub enum OnboardingType {
    #[sqlx(rename = "on-site")]
    #[serde(rename = "on-site")]
    OnSite,
    #[sqlx(rename = "remote")]
    #[serde(rename = "remote")]
    Remote,
}

impl OnboardingType {
    const CHOICES: [(&'static str, OnboardingType); 2] = [
        ("on-site", OnboardingType::OnSite),
        ("remote", OnboardingType::Remote),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OnboardingType::OnSite => "on-site",
            OnboardingType::Remote => "remote",
        }
    }

    pub fn is_remote(self) -> bool {
        self == OnboardingType::Remote
    }

    pub fn of_remote(remote: bool) -> Self {
        if remote {
            OnboardingType::Remote
        } else {
            OnboardingType::OnSite
        }
    }
}

impl FromJson for OnboardingType {
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        one_of(value, &Self::CHOICES)
    }
}

impl PartialSchema for OnboardingType {
    fn schema() -> RefOr<Schema> {
        enum_schema(&["on-site", "remote"])
    }
}

/// `createI9`/`createRemotehireI9`: `yes`, or `if allowed` (only when the
/// employee has no open I-9). Case-sensitive, as the specification writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum I9Choice {
    Yes,
    IfAllowed,
}

impl FromJson for I9Choice {
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        one_of(
            value,
            &[("yes", I9Choice::Yes), ("if allowed", I9Choice::IfAllowed)],
        )
        // Not a string stays `invalid_type` (docs/api.md, "The body").
        .map_err(|e| Invalid::new(e.code, "Must be \"yes\" or \"if allowed\" (lower case)."))
    }
}

impl PartialSchema for I9Choice {
    fn schema() -> RefOr<Schema> {
        enum_schema(&["yes", "if allowed"])
    }
}

/// A flag written `"yes"` (`rehire`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Yes;

impl FromJson for Yes {
    fn from_json(value: &Value) -> Result<Self, Invalid> {
        one_of(value, &[("yes", Yes)])
    }
}

impl PartialSchema for Yes {
    fn schema() -> RefOr<Schema> {
        enum_schema(&["yes"])
    }
}

// Inline in the request types' schemas: no component of their own.
impl<T: utoipa::ToSchema + FromJson> utoipa::ToSchema for Field<T> {}
impl<T: utoipa::ToSchema> utoipa::ToSchema for Required<T> {}
impl<const MAX: usize> utoipa::ToSchema for Text<MAX> {}
impl<const MAX: usize> utoipa::ToSchema for Email<MAX> {}
impl utoipa::ToSchema for CalendarDate {}
impl utoipa::ToSchema for BirthDate {}
impl utoipa::ToSchema for Id {}
impl utoipa::ToSchema for Ssn {}
impl utoipa::ToSchema for Language {}
impl utoipa::ToSchema for OnboardingType {}
impl utoipa::ToSchema for I9Choice {}
impl utoipa::ToSchema for Yes {}

// The limits of an employee's fields (the specification's parameter table).
pub type PersonName = Text<40>;
pub type MiddleName = Text<25>;
pub type OtherName = Text<40>;
pub type ProfileId = Text<30>;
pub type JobTitle = Text<80>;
pub type EmployeeEmail = Email<80>;
pub type NotificationEmail = Email<255>;
pub type Custom = Text<255>;
pub type Street = Text<80>;
pub type City = Text<50>;
pub type State = Text<20>;
pub type Country = Text<50>;
pub type Zip = Text<10>;
pub type Phone = Text<20>;
pub type Extension = Text<10>;
pub type CandidateId = Text<50>;
pub type ReturnUrl = Text<255>;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field<T: FromJson>(v: Value) -> Field<T> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn blank_and_null_are_null_and_bad_values_are_kept_as_invalid() {
        assert_eq!(field::<PersonName>(json!(null)), Field::Null);
        assert_eq!(field::<PersonName>(json!("  ")), Field::Null);
        assert_eq!(
            field::<PersonName>(json!(" Ana ")),
            Field::Value(Text("Ana".into()))
        );
        let Field::Invalid(e) = field::<PersonName>(json!("A".repeat(41))) else {
            panic!("too long must be invalid");
        };
        assert_eq!(e.code, "too_long");
        // Counted as sent, white space around included (the document's
        // `maxLength`), then trimmed.
        let Field::Invalid(e) = field::<PersonName>(json!(format!(" {}", "A".repeat(40)))) else {
            panic!("41 characters as sent must be invalid");
        };
        assert_eq!(e.code, "too_long");
        assert_eq!(
            field::<PersonName>(json!(format!(" {} ", "A".repeat(38)))),
            Field::Value(Text("A".repeat(38)))
        );
        let Field::Invalid(e) = field::<bool>(json!("")) else {
            panic!("a blank boolean is not null");
        };
        assert_eq!(e.code, "invalid_type");
    }

    #[test]
    fn choices_are_exact() {
        assert_eq!(
            field::<I9Choice>(json!("if allowed")),
            Field::Value(I9Choice::IfAllowed)
        );
        assert!(matches!(field::<I9Choice>(json!("Yes")), Field::Invalid(_)));
        assert_eq!(
            field::<OnboardingType>(json!("on-site")),
            Field::Value(OnboardingType::OnSite)
        );
        assert!(matches!(field::<Language>(json!(3)), Field::Invalid(_)));
        for not_an_address in [
            "ana@localhost",
            "Ana <ana@example.com>",
            "<ana@example.com>",
            "ana@[127.0.0.1]",
        ] {
            assert!(
                matches!(field::<Email<80>>(json!(not_an_address)), Field::Invalid(_)),
                "{not_an_address}"
            );
        }
        assert_eq!(
            field::<Email<80>>(json!("ana.diaz@mail.example")),
            Field::Value(Email("ana.diaz@mail.example".into()))
        );
        assert!(matches!(field::<Id>(json!(0)), Field::Invalid(_)));
    }

    /// The wrong JSON type is `invalid_type`; the right type with a value
    /// out of its range or list is `invalid_value` (docs/api.md, "Errors").
    #[test]
    fn a_wrong_type_and_a_wrong_value_have_their_own_codes() {
        fn code<T: FromJson + std::fmt::Debug>(v: Value) -> &'static str {
            match field::<T>(v) {
                Field::Invalid(e) => e.code,
                other => panic!("{other:?} is not invalid"),
            }
        }
        assert_eq!(code::<OnboardingType>(json!(1)), "invalid_type");
        assert_eq!(code::<OnboardingType>(json!("onsite")), "invalid_value");
        assert_eq!(code::<Language>(json!("2")), "invalid_type");
        assert_eq!(code::<Language>(json!(2.5)), "invalid_type");
        assert_eq!(code::<Language>(json!(3)), "invalid_value");
        assert_eq!(
            code::<Language>(json!(9223372036854775808_u64)),
            "invalid_value"
        );
        assert_eq!(code::<Id>(json!("3")), "invalid_type");
        assert_eq!(code::<Id>(json!(3.5)), "invalid_type");
        assert_eq!(code::<Id>(json!(0)), "invalid_value");
        assert_eq!(code::<Id>(json!(-4)), "invalid_value");
        assert_eq!(code::<Id>(json!(9223372036854775808_u64)), "invalid_value");
        assert_eq!(code::<Id>(json!(1e300)), "invalid_value");
        assert_eq!(field::<Id>(json!(3.0)), Field::Value(Id(3)));
    }

    #[test]
    fn errors_never_hold_the_value() {
        let Field::Invalid(e) = field::<Ssn>(json!("123-45-678")) else {
            panic!("a short SSN is invalid");
        };
        assert!(!format!("{e:?}").contains("123-45"));
    }
}
