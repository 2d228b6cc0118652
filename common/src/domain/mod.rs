//! Domain types, built only by parsing at the boundary.

mod date;
mod permission;
mod ssn;
mod status;

pub use date::{format_date, format_timestamp, parse_date, DateParseError};
pub use permission::{Permission, Scope, Scopes};
pub use ssn::{Ssn, SsnError};
pub mod ssn_mask {
    pub use super::ssn::mask_last4;
}
pub use status::{EmployeeI9Status, I9Status};
