//! The write side: one module per record, each a set of typed operations
//! (create, update, re-hire, start an I-9, each lifecycle step) that run
//! inside a transaction the caller hands in. The API handlers, the partner
//! operation and `i9-admin seed` all call these, so each rule is written once
//! (docs/architecture.md, "The write side").
//!
//! An operation takes values already parsed into domain types
//! ([`crate::domain`]) and answers a [`WriteError`] the caller turns into its
//! own terms (a problem+json answer in the API, a message in `i9-admin`).

pub mod audit;
pub mod calendar;
pub mod employee;
mod error;
pub mod everify_case;
pub mod i9;
pub mod i9_request;
pub mod reminder;
pub mod retention;
pub mod section1_feed;
pub mod status_change_report;
pub mod supplement_b;

pub use audit::Actor;
pub use error::{FieldError, WriteError};
