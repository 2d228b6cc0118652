//! Serde helpers for the response formats of docs/api.md, "Dates and formats".

use chrono::{DateTime, Utc};
use serde::Serializer;

/// ISO 8601 UTC with fractional seconds and no zone, or `null`.
pub fn timestamp<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&i9_common::domain::format_timestamp(*t)),
        None => s.serialize_none(),
    }
}
