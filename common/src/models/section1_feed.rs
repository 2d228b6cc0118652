//! Section 1 feeds the employee record (docs/api.md, "Web pages for
//! employees"): in the transaction that signs Section 1, each of the
//! employee record's date of birth, SSN and address fields (street,
//! apartment, city, state, zip) that is empty takes what the employee
//! attested; a value the record already has is kept. Where the two disagree,
//! or the attested SSN belongs to another employee and so is not copied, the
//! I-9 lists the field in `section1Differences` (names only, never values).
//!
//! The fill is an ordinary write of the employee ([`employee::update`]: the
//! SSN encrypted, hashed and held unique as every write holds it), audited
//! as `employee.section1_fill` with the names of the fields filled.

use chrono::NaiveDate;
use serde_json::json;
use sqlx::{Connection, PgConnection};

use super::{
    audit::{self, Actor, Entry},
    employee::{self, EmployeeFields},
    WriteError,
};
use crate::{
    crypto::DataCipher,
    domain::{fields::Text, DifferenceReason, Section1Difference, Section1Field, Ssn},
};

/// What the employee attested in Section 1 that the employee record holds too.
#[derive(Debug, Clone, Copy)]
pub struct Attested<'a> {
    pub date_of_birth: NaiveDate,
    /// The number typed, or else the one the I-9 holds (a blank field keeps
    /// the number on file); `None` when there is neither.
    pub ssn: Option<&'a Ssn>,
    pub address_street: &'a str,
    pub address_apartment: Option<&'a str>,
    pub address_city: &'a str,
    pub address_state: &'a str,
    pub address_zip: &'a str,
}

/// The employee record's fields that Section 1 may fill, as the fill finds them.
#[derive(Debug, Clone, Default)]
struct Record {
    date_of_birth: Option<NaiveDate>,
    ssn_hash: Option<Vec<u8>>,
    address_street: Option<String>,
    address_apartment: Option<String>,
    address_city: Option<String>,
    address_state: Option<String>,
    address_zip: Option<String>,
}

/// What to write to the employee record, and where it disagrees with Section 1.
#[derive(Debug, Default)]
struct Plan {
    fields: EmployeeFields,
    differences: Vec<Section1Difference>,
}

/// Two texts that read the same: case and runs of white space aside.
fn same_text(a: &str, b: &str) -> bool {
    let normal = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    normal(a) == normal(b)
}

/// A text field: fill it when the record has none, else compare. `slot`,
/// the employee's field, sets the limit the value is parsed to.
fn text<const N: usize>(
    plan: &mut Plan,
    field: Section1Field,
    record: Option<&str>,
    attested: Option<&str>,
    slot: impl FnOnce(&mut EmployeeFields) -> &mut Option<Option<Text<N>>>,
) {
    let record = record.filter(|r| !r.trim().is_empty());
    let attested = attested.filter(|a| !a.trim().is_empty());
    match (record, attested) {
        (None, Some(a)) => {
            // The page holds its fields to these same limits: a value it
            // took always parses.
            if let Ok(v) = Text::<N>::parse(a) {
                *slot(&mut plan.fields) = Some(Some(v));
            }
        }
        (Some(r), Some(a)) if same_text(r, a) => {}
        (Some(_), _) => plan
            .differences
            .push(Section1Difference::new(field, DifferenceReason::Differs)),
        (None, None) => {}
    }
}

/// The fill and the differences, but for the SSN's holder (which takes a query).
fn plan(record: &Record, attested: &Attested<'_>, cipher: &DataCipher) -> Plan {
    let mut plan = Plan::default();
    match record.date_of_birth {
        None => plan.fields.date_of_birth = Some(Some(attested.date_of_birth)),
        Some(d) if d == attested.date_of_birth => {}
        Some(_) => plan.differences.push(Section1Difference::new(
            Section1Field::DateOfBirth,
            DifferenceReason::Differs,
        )),
    }
    if let Some(ssn) = attested.ssn {
        match &record.ssn_hash {
            None => plan.fields.ssn = Some(Some(ssn.clone())),
            // Compared by its hash under every key of the ring: never decrypted.
            Some(hash) if cipher.ssn_search_hashes(ssn).contains(hash) => {}
            Some(_) => plan.differences.push(Section1Difference::new(
                Section1Field::SocialSecurityNumber,
                DifferenceReason::Differs,
            )),
        }
    }
    text(
        &mut plan,
        Section1Field::AddressStreet,
        record.address_street.as_deref(),
        Some(attested.address_street),
        |f| &mut f.address_street,
    );
    text(
        &mut plan,
        Section1Field::AddressApartment,
        record.address_apartment.as_deref(),
        attested.address_apartment,
        |f| &mut f.address_apartment,
    );
    text(
        &mut plan,
        Section1Field::AddressCity,
        record.address_city.as_deref(),
        Some(attested.address_city),
        |f| &mut f.address_city,
    );
    text(
        &mut plan,
        Section1Field::AddressState,
        record.address_state.as_deref(),
        Some(attested.address_state),
        |f| &mut f.address_state,
    );
    text(
        &mut plan,
        Section1Field::AddressZip,
        record.address_zip.as_deref(),
        Some(attested.address_zip),
        |f| &mut f.address_zip,
    );
    plan
}

/// Fill the empty fields of employee `employee_id` from Section 1 of I-9
/// `i9_id`, in the caller's transaction; returns the differences, in the
/// order of [`Section1Field`]. An attested SSN that another employee holds
/// is not copied (the signing goes on): it is a difference, and the refusal
/// is audited as every refusal for a taken number is (`ssn.conflict`, with
/// the holder's id).
pub async fn feed(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    actor: &Actor,
    i9_id: i64,
    employee_id: i64,
    attested: &Attested<'_>,
) -> Result<Vec<Section1Difference>, WriteError> {
    // Locked: an HR write of the same employee waits for the signing, and
    // a field found empty here is still empty when it is filled.
    let record = sqlx::query_as!(
        Record,
        "SELECT date_of_birth, ssn_hash, address_street, address_apartment, address_city,
                address_state, address_zip
         FROM employees WHERE id = $1 FOR UPDATE",
        employee_id,
    )
    .fetch_one(&mut *conn)
    .await?;
    let Plan {
        mut fields,
        mut differences,
    } = plan(&record, attested, cipher);
    let held = Section1Difference::new(
        Section1Field::SocialSecurityNumber,
        DifferenceReason::HeldByAnotherEmployee,
    );
    if fields.new_ssn().is_some() {
        if let Some(holder) = employee::holder(conn, cipher, &fields, Some(employee_id)).await? {
            refused(conn, actor, holder.id).await?;
            fields.ssn = None;
            differences.push(held);
        }
    }
    if fields.new_ssn().is_some() {
        // A holder that committed after the look above: the uniqueness
        // trigger refuses the number, and the rest is written without it.
        let mut savepoint = conn.begin().await?;
        match employee::update(&mut savepoint, cipher, employee_id, &fields).await {
            Ok(()) => savepoint.commit().await?,
            Err(WriteError::Conflict(_)) => {
                savepoint.rollback().await?;
                if let Some(holder) =
                    employee::holder(conn, cipher, &fields, Some(employee_id)).await?
                {
                    refused(conn, actor, holder.id).await?;
                }
                fields.ssn = None;
                differences.push(held);
                employee::update(conn, cipher, employee_id, &fields).await?;
            }
            Err(e) => return Err(e),
        }
    } else {
        employee::update(conn, cipher, employee_id, &fields).await?;
    }
    let filled = fields.names();
    if !filled.is_empty() {
        audit::record(
            &mut *conn,
            actor,
            Entry::new("employee.section1_fill", "employee", employee_id)
                .detail(json!({ "fields": filled, "i9Id": i9_id })),
        )
        .await?;
    }
    differences.sort_by_key(|d| Section1Field::ALL.iter().position(|f| *f == d.field));
    Ok(differences)
}

/// Audit that the attested number was not copied because `holder` has it.
async fn refused(conn: &mut PgConnection, actor: &Actor, holder: i64) -> Result<(), sqlx::Error> {
    audit::record(conn, actor, Entry::new("ssn.conflict", "employee", holder)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cipher() -> DataCipher {
        DataCipher::new(&[7; 32], b"a hash key for the tests of section1_feed")
    }

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    fn attested(ssn: Option<&Ssn>) -> Attested<'_> {
        Attested {
            date_of_birth: day(1990, 3, 14),
            ssn,
            address_street: "12 Harbor Way",
            address_apartment: None,
            address_city: "Portland",
            address_state: "OR",
            address_zip: "97201",
        }
    }

    fn names(p: &Plan) -> Vec<&'static str> {
        p.fields.names()
    }

    fn differences(p: &Plan) -> Vec<(&'static str, &'static str)> {
        p.differences
            .iter()
            .map(|d| (d.field.as_str(), d.reason.as_str()))
            .collect()
    }

    #[test]
    fn an_empty_record_takes_every_attested_value() {
        let cipher = cipher();
        let ssn = Ssn::parse("456-78-9012").unwrap();
        let p = plan(&Record::default(), &attested(Some(&ssn)), &cipher);
        assert_eq!(
            names(&p),
            [
                "date_of_birth",
                "address_street",
                "address_city",
                "address_state",
                "address_zip",
                "ssn"
            ]
        );
        assert_eq!(p.fields.new_ssn(), Some(&ssn));
        assert!(p.differences.is_empty());
        // Blank in Section 1 and on the record: nothing to fill.
        assert!(p.fields.address_apartment.is_none());
    }

    #[test]
    fn values_the_record_has_are_kept_and_differences_named() {
        let cipher = cipher();
        let ssn = Ssn::parse("456-78-9012").unwrap();
        let other = Ssn::parse("456-78-9013").unwrap();
        let record = Record {
            date_of_birth: Some(day(1991, 3, 14)),
            ssn_hash: Some(cipher.ssn_search_hash(&other)),
            address_street: Some("12  HARBOR way".into()),
            address_apartment: Some("4B".into()),
            address_city: Some("Salem".into()),
            address_state: None,
            address_zip: Some("97201".into()),
        };
        let p = plan(&record, &attested(Some(&ssn)), &cipher);
        assert_eq!(names(&p), ["address_state"], "only the empty one is filled");
        assert_eq!(
            differences(&p),
            [
                ("dateOfBirth", "differs"),
                ("socialSecurityNumber", "differs"),
                // Case and spacing aside, the street is the same.
                ("addressApartment", "differs"),
                ("addressCity", "differs"),
            ]
        );
    }

    #[test]
    fn equal_values_fill_nothing_and_differ_in_nothing() {
        let cipher = cipher();
        let ssn = Ssn::parse("456-78-9012").unwrap();
        let record = Record {
            date_of_birth: Some(day(1990, 3, 14)),
            ssn_hash: Some(cipher.ssn_search_hash(&ssn)),
            address_street: Some("12 Harbor Way".into()),
            address_apartment: None,
            address_city: Some("Portland".into()),
            address_state: Some("or".into()),
            address_zip: Some("97201".into()),
        };
        let p = plan(&record, &attested(Some(&ssn)), &cipher);
        assert!(names(&p).is_empty());
        assert!(p.differences.is_empty());
        // No number attested at all: the record's is neither compared nor touched.
        let p = plan(&record, &attested(None), &cipher);
        assert!(names(&p).is_empty() && p.differences.is_empty());
    }
}
