//! The employee's attestation in Section 1: the citizenship or immigration
//! status checked on the form (`i9s.attestation`, `attestation` of an I-9
//! record; docs/api.md, "I-9s").

use super::text_enum::text_enum;

text_enum! {
    /// Which of the four boxes of Section 1 the employee checked.
    pub enum Attestation {
        /// A citizen of the United States.
        Citizen = "citizen",
        /// A noncitizen national of the United States.
        NoncitizenNational = "noncitizen national",
        /// A lawful permanent resident (gives the USCIS A-Number).
        PermanentResident = "permanent resident",
        /// A noncitizen authorized to work (gives an A-Number, a Form I-94
        /// admission number or a foreign passport, and the authorization's
        /// expiration).
        AlienAuthorizedToWork = "alien authorized to work",
    }
}

impl Attestation {
    /// Whether the I-9 of an employee attesting this is reverified when the
    /// work authorization or its document expires (docs/api.md, "Dates").
    /// An attestation not yet known (`None`) counts as reverified.
    pub fn is_reverified(attestation: Option<Self>) -> bool {
        matches!(attestation, None | Some(Self::AlienAuthorizedToWork))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_are_the_stored_ones() {
        assert_eq!(
            Attestation::ALL
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>(),
            [
                "citizen",
                "noncitizen national",
                "permanent resident",
                "alien authorized to work"
            ]
        );
        for &a in Attestation::ALL {
            assert_eq!(Attestation::parse(a.as_str()), Some(a));
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
        assert_eq!(Attestation::parse("Citizen"), None);
        assert_eq!(Attestation::parse(""), None);
    }

    #[test]
    fn the_attestations_are_the_ones_the_database_allows() {
        let allowed = crate::domain::status::tests::schema_words("CHECK (attestation IN");
        assert_eq!(
            allowed,
            Attestation::ALL
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn only_an_alien_authorized_to_work_or_an_unknown_attestation_is_reverified() {
        assert!(Attestation::is_reverified(None));
        assert!(Attestation::is_reverified(Some(
            Attestation::AlienAuthorizedToWork
        )));
        for a in [
            Attestation::Citizen,
            Attestation::NoncitizenNational,
            Attestation::PermanentResident,
        ] {
            assert!(!Attestation::is_reverified(Some(a)));
        }
    }
}
