//! Where what the employee attested in Section 1 and the employee record
//! disagree: `section1Differences` of an I-9 record (docs/api.md, "I-9s").
//! Field names only, never values.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::text_enum::text_enum;

text_enum! {
    /// A field of the employee record that Section 1 also asks for, named as
    /// the employee record names it.
    pub enum Section1Field {
        DateOfBirth = "dateOfBirth",
        SocialSecurityNumber = "socialSecurityNumber",
        AddressStreet = "addressStreet",
        AddressApartment = "addressApartment",
        AddressCity = "addressCity",
        AddressState = "addressState",
        AddressZip = "addressZip",
    }
}

text_enum! {
    /// Why a field is listed: `differs`, the employee record holds another
    /// value than the one attested, and keeps it; `held_by_another_employee`
    /// (`socialSecurityNumber` only), the employee record had no number and
    /// the one attested belongs to another employee, so it was not copied.
    pub enum DifferenceReason {
        /// The employee record holds another value, and keeps it.
        Differs = "differs",
        /// The employee record had no SSN, and the one attested belongs to
        /// another employee: it was not copied.
        HeldByAnotherEmployee = "held_by_another_employee",
    }
}

/// One field where the employee record and Section 1 disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Section1Difference {
    pub field: Section1Field,
    pub reason: DifferenceReason,
}

impl Section1Difference {
    pub fn new(field: Section1Field, reason: DifferenceReason) -> Self {
        Self { field, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_is_two_names() {
        let d = Section1Difference::new(
            Section1Field::SocialSecurityNumber,
            DifferenceReason::HeldByAnotherEmployee,
        );
        let json = serde_json::to_value(d).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"field": "socialSecurityNumber", "reason": "held_by_another_employee"})
        );
        assert_eq!(
            serde_json::from_value::<Section1Difference>(json).unwrap(),
            d
        );
    }
}
