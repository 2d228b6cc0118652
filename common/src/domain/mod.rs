//! Domain types, built only by parsing at the boundary.

mod attestation;
pub mod attested;
pub mod calendar;
// E-Verify cases (docs/everify.md).
mod date;
pub mod everify;
pub mod fields;
pub mod password;
mod permission;
mod reminder;
pub mod remote_examination;
mod section1;
pub mod signature;
mod ssn;
mod status;
mod text_enum;

pub use date::{
    check_birth_date, format_date, format_timestamp, parse_birth_date, parse_date, BirthDateError,
    DateParseError, BIRTH_DATE_RULE, DATE_RULE,
};
pub use fields::{Field, FromJson, I9Choice, Invalid, Language, OnboardingType, Required};
pub use permission::{Permission, Scope, Scopes};
pub use section1::{DifferenceReason, Section1Difference, Section1Field};
pub use ssn::{Ssn, SsnError};
pub mod ssn_mask {
    pub use super::ssn::mask_last4;
}
pub use attestation::Attestation;
// Expiring-document reminders (docs/reminders.md).
pub use reminder::{DueKind, Stage, Thresholds, MAX_THRESHOLD_DAYS};
pub use status::{EmployeeI9Status, I9Status, IllegalStep, Step};

/// The edition of Form I-9 in force.
pub const FORM_VERSION: &str = "01/20/25";
