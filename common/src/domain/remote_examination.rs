//! Remote examination of documents: the DHS-authorized alternative procedure
//! (8 CFR 274a.2(b)(1)(ii)(C); docs/remote-examination.md). Only an employer
//! participating in E-Verify in good standing may use it, and it records so
//! in the form's checkbox ("Check here if you used an alternative procedure
//! authorized by DHS to examine documents.") of Section 2 or Supplement B.
//!
//! What this service knows of an employer's E-Verify participation is its
//! legal entity's `everifyId`, `everifyEffectiveDate`, `everifyStatus` and
//! `active`. Good standing is read from them as
//! [`legal_entity_allows_alternative_procedure`] says.

use chrono::NaiveDate;

use super::Invalid;

/// The `everifyStatus` of a legal entity in good standing with E-Verify
/// (compared ignoring ASCII case and white space around it).
pub const GOOD_STANDING_STATUS: &str = "Active";

/// The field of Section 2 (and Supplement B) that records the procedure.
pub const FIELD: &str = "alternativeProcedure";

/// A legal entity's E-Verify participation, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enrollment {
    pub entity_name: String,
    pub everify_id: Option<String>,
    pub everify_effective_date: Option<NaiveDate>,
    pub everify_status: String,
    pub active: bool,
}

/// Why the alternative procedure is not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The employee has no legal entity, so no E-Verify employer.
    NoLegalEntity,
    /// The legal entity is marked inactive.
    Inactive { entity: String },
    /// The legal entity has no E-Verify account id.
    NotEnrolled { entity: String },
    /// Its E-Verify enrollment takes effect after the day of examination.
    NotYetEnrolled {
        entity: String,
        effective: NaiveDate,
    },
    /// Its `everifyStatus` is not [`GOOD_STANDING_STATUS`].
    NotInGoodStanding { entity: String, status: String },
}

impl Refusal {
    /// The stable code of the 422's field error.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::NoLegalEntity
            | Refusal::NotEnrolled { .. }
            | Refusal::NotYetEnrolled { .. } => "everify_not_enrolled",
            Refusal::Inactive { .. } | Refusal::NotInGoodStanding { .. } => {
                "everify_not_in_good_standing"
            }
        }
    }

    /// Why, in words (names the legal entity and its status, never personal
    /// data).
    pub fn message(&self) -> String {
        const RULE: &str = "The DHS alternative procedure (remote examination of documents) is \
                            only for an employer participating in E-Verify in good standing; \
                            examine the documents in person.";
        match self {
            Refusal::NoLegalEntity => format!(
                "The employee has no legal entity, so no E-Verify employer. {RULE}"
            ),
            Refusal::Inactive { entity } => {
                format!("The legal entity {entity:?} is inactive. {RULE}")
            }
            Refusal::NotEnrolled { entity } => format!(
                "The legal entity {entity:?} is not enrolled in E-Verify (it has no E-Verify account). {RULE}"
            ),
            Refusal::NotYetEnrolled { entity, effective } => format!(
                "The E-Verify enrollment of the legal entity {entity:?} takes effect on {effective}. {RULE}"
            ),
            Refusal::NotInGoodStanding { entity, status } => format!(
                "The legal entity {entity:?} is not in good standing with E-Verify: its E-Verify status is {status:?}, not {GOOD_STANDING_STATUS:?}. {RULE}"
            ),
        }
    }

    pub fn invalid(&self) -> Invalid {
        Invalid::new(self.code(), self.message())
    }
}

/// Whether the legal entity `entity` (`None`: the employee has none) may
/// examine documents under the alternative procedure on `on`: it is active,
/// has an E-Verify account id (`everifyId`), its enrollment is in effect
/// (`everifyEffectiveDate` empty or not after `on`), and its `everifyStatus`
/// is `Active` (docs/remote-examination.md, "Good standing").
pub fn legal_entity_allows_alternative_procedure(
    entity: Option<&Enrollment>,
    on: NaiveDate,
) -> Result<(), Refusal> {
    let Some(e) = entity else {
        return Err(Refusal::NoLegalEntity);
    };
    let name = || e.entity_name.clone();
    if !e.active {
        return Err(Refusal::Inactive { entity: name() });
    }
    if e.everify_id
        .as_deref()
        .is_none_or(|id| id.trim().is_empty())
    {
        return Err(Refusal::NotEnrolled { entity: name() });
    }
    if let Some(effective) = e.everify_effective_date.filter(|d| *d > on) {
        return Err(Refusal::NotYetEnrolled {
            entity: name(),
            effective,
        });
    }
    if !e
        .everify_status
        .trim()
        .eq_ignore_ascii_case(GOOD_STANDING_STATUS)
    {
        return Err(Refusal::NotInGoodStanding {
            entity: name(),
            status: e.everify_status.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn acme() -> Enrollment {
        Enrollment {
            entity_name: "Acme Staffing US LLC".into(),
            everify_id: Some("1234567".into()),
            everify_effective_date: Some(d("2023-04-01")),
            everify_status: "Active".into(),
            active: true,
        }
    }

    #[test]
    fn good_standing_table() {
        let on = d("2026-11-24");
        let allowed = |e: Enrollment| legal_entity_allows_alternative_procedure(Some(&e), on);
        assert_eq!(allowed(acme()), Ok(()));
        assert_eq!(
            allowed(Enrollment {
                everify_status: " active ".into(),
                ..acme()
            }),
            Ok(())
        );
        assert_eq!(
            allowed(Enrollment {
                everify_effective_date: None,
                ..acme()
            }),
            Ok(())
        );
        assert_eq!(
            allowed(Enrollment {
                everify_effective_date: Some(on),
                ..acme()
            }),
            Ok(())
        );
        let code = |e: Enrollment| allowed(e).unwrap_err().code();
        assert_eq!(
            code(Enrollment {
                everify_id: None,
                ..acme()
            }),
            "everify_not_enrolled"
        );
        assert_eq!(
            code(Enrollment {
                everify_id: Some(" ".into()),
                ..acme()
            }),
            "everify_not_enrolled"
        );
        assert_eq!(
            code(Enrollment {
                everify_effective_date: Some(d("2026-11-25")),
                ..acme()
            }),
            "everify_not_enrolled"
        );
        assert_eq!(
            code(Enrollment {
                everify_status: "Not Ready".into(),
                ..acme()
            }),
            "everify_not_in_good_standing"
        );
        assert_eq!(
            code(Enrollment {
                everify_status: "Terminated".into(),
                ..acme()
            }),
            "everify_not_in_good_standing"
        );
        assert_eq!(
            code(Enrollment {
                active: false,
                ..acme()
            }),
            "everify_not_in_good_standing"
        );
        assert_eq!(
            legal_entity_allows_alternative_procedure(None, on),
            Err(Refusal::NoLegalEntity)
        );
    }

    #[test]
    fn the_message_says_why() {
        let r = legal_entity_allows_alternative_procedure(
            Some(&Enrollment {
                everify_status: "Not Ready".into(),
                ..acme()
            }),
            d("2026-11-24"),
        )
        .unwrap_err();
        let m = r.message();
        assert!(m.contains("\"Not Ready\""), "{m}");
        assert!(m.contains("not in good standing"), "{m}");
        assert!(m.contains("Acme Staffing US LLC"), "{m}");
    }
}
