//! I-9 statuses and the lifecycle between them (docs/api.md, "The I-9's
//! states"). The steps ask [`I9Status::after`] for the next status; an
//! illegal step is an [`IllegalStep`], never a string compared in SQL.

use super::text_enum::text_enum;

text_enum! {
    /// The status of an I-9 (`i9s.status`, `i9Status` of an I-9 record).
    pub enum I9Status {
        /// Created; the employee has not signed Section 1.
        Section1Incomplete = "Section 1 Incomplete",
        /// The employee signed Section 1; Section 2 is due.
        SignedSec1 = "Signed Sec 1",
        /// The employer recorded Section 2.
        SignedSec2 = "Signed Sec 2",
        /// The employer marked the I-9 complete.
        Completed = "Completed",
        /// An approver approved it. Final.
        Approved = "Approved",
        /// Set aside from any status before `Approved`. Final.
        Parked = "Parked",
    }
}

text_enum! {
    /// The `i9Status` of an employee, derived from its latest I-9: `Not
    /// Started` without one, `Started` for `Section 1 Incomplete`, any other
    /// status as is.
    // EmployeeI9Status::of_latest; docs/api.md, "Employees".
    pub enum EmployeeI9Status {
        /// The employee has no I-9.
        NotStarted = "Not Started",
        /// The latest I-9 is `Section 1 Incomplete`.
        Started = "Started",
        SignedSec1 = "Signed Sec 1",
        SignedSec2 = "Signed Sec 2",
        Completed = "Completed",
        Approved = "Approved",
        Parked = "Parked",
    }
}

/// A step of the lifecycle (docs/api.md, "The I-9's states"). Creating an
/// I-9 is not a step: an I-9 starts in [`I9Status::INITIAL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// The employee signs Section 1 on the page behind the link.
    SignSection1,
    /// `POST /v1/i9s/{id}/section2`.
    RecordSection2,
    /// `POST /v1/i9s/{id}/complete`.
    Complete,
    /// `POST /v1/i9s/{id}/approve`.
    Approve,
    /// `POST /v1/i9s/{id}/park`.
    Park,
}

impl Step {
    pub const ALL: [Step; 5] = [
        Self::SignSection1,
        Self::RecordSection2,
        Self::Complete,
        Self::Approve,
        Self::Park,
    ];

    /// The step as a 409's `detail` names it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::SignSection1 => "signing Section 1",
            Self::RecordSection2 => "recording Section 2",
            Self::Complete => "completing",
            Self::Approve => "approving",
            Self::Park => "parking",
        }
    }
}

/// A step the I-9's current status does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("The I-9 is {status}; {} is not allowed from that status.", step.describe())]
pub struct IllegalStep {
    pub step: Step,
    pub status: I9Status,
}

impl I9Status {
    /// The status an I-9 is created in.
    pub const INITIAL: Self = Self::Section1Incomplete;

    /// The open statuses: an employee has at most one open I-9 (the index
    /// `i9s_one_open_per_employee`), and an open I-9 blocks another.
    pub const OPEN: [Self; 3] = [Self::Section1Incomplete, Self::SignedSec1, Self::SignedSec2];

    /// The status after `step`, or the refusal of a step this status does
    /// not allow. The whole machine (docs/api.md, "The I-9's states").
    pub fn after(self, step: Step) -> Result<Self, IllegalStep> {
        use I9Status::*;
        match (self, step) {
            (Section1Incomplete, Step::SignSection1) => Ok(SignedSec1),
            (SignedSec1, Step::RecordSection2) => Ok(SignedSec2),
            (SignedSec2, Step::Complete) => Ok(Completed),
            (Completed, Step::Approve) => Ok(Approved),
            (Section1Incomplete | SignedSec1 | SignedSec2 | Completed, Step::Park) => Ok(Parked),
            (status, step) => Err(IllegalStep { step, status }),
        }
    }

    /// Whether `step` may be taken from this status.
    pub fn allows(self, step: Step) -> bool {
        self.after(step).is_ok()
    }

    /// Open I-9s block the creation of another.
    pub fn is_open(self) -> bool {
        Self::OPEN.contains(&self)
    }

    /// What must happen next, as the partner callbacks word it
    /// (docs/partners.md); `None` once approved or parked (a parked I-9 is
    /// locked: no step follows).
    pub fn next_step(self) -> Option<&'static str> {
        match self {
            Self::Section1Incomplete => Some("The employee completes and signs Section 1"),
            Self::SignedSec1 => Some("The employer examines the documents and completes Section 2"),
            Self::SignedSec2 => Some("The employer marks the I-9 complete"),
            Self::Completed => Some("An approver approves the I-9"),
            Self::Parked | Self::Approved => None,
        }
    }
}

/// [`I9Status::INITIAL`]: the status a new I-9 has (so an I-9's row has a
/// default, as a test builds one: common/src/inspection/render.rs).
impl Default for I9Status {
    fn default() -> Self {
        Self::INITIAL
    }
}

impl EmployeeI9Status {
    /// The employee's status given its latest I-9's (`None`: it has none).
    pub fn of_latest(latest: Option<I9Status>) -> Self {
        match latest {
            None => Self::NotStarted,
            Some(I9Status::Section1Incomplete) => Self::Started,
            Some(I9Status::SignedSec1) => Self::SignedSec1,
            Some(I9Status::SignedSec2) => Self::SignedSec2,
            Some(I9Status::Completed) => Self::Completed,
            Some(I9Status::Approved) => Self::Approved,
            Some(I9Status::Parked) => Self::Parked,
        }
    }
}

impl Default for EmployeeI9Status {
    /// An employee without an I-9.
    fn default() -> Self {
        Self::NotStarted
    }
}

impl From<Option<I9Status>> for EmployeeI9Status {
    fn from(latest: Option<I9Status>) -> Self {
        Self::of_latest(latest)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use I9Status::*;

    /// The legal steps, as docs/api.md's table states them.
    const LEGAL: [(I9Status, Step, I9Status); 8] = [
        (Section1Incomplete, Step::SignSection1, SignedSec1),
        (SignedSec1, Step::RecordSection2, SignedSec2),
        (SignedSec2, Step::Complete, Completed),
        (Completed, Step::Approve, Approved),
        (Section1Incomplete, Step::Park, Parked),
        (SignedSec1, Step::Park, Parked),
        (SignedSec2, Step::Park, Parked),
        (Completed, Step::Park, Parked),
    ];

    #[test]
    fn every_legal_step_leads_where_the_lifecycle_says() {
        for (from, step, to) in LEGAL {
            assert_eq!(from.after(step), Ok(to), "{from} {step:?}");
            assert!(from.allows(step));
        }
    }

    #[test]
    fn every_other_step_is_refused_naming_the_step_and_the_status() {
        let mut refused = 0;
        for &status in I9Status::ALL {
            for step in Step::ALL {
                if LEGAL.iter().any(|(f, s, _)| (*f, *s) == (status, step)) {
                    continue;
                }
                let err = status.after(step).expect_err("refused");
                assert_eq!(err, IllegalStep { step, status });
                assert!(!status.allows(step));
                let message = err.to_string();
                assert!(message.contains(status.as_str()), "{message}");
                assert!(message.contains(step.describe()), "{message}");
                refused += 1;
            }
        }
        // 6 statuses × 5 steps, 8 of them legal.
        assert_eq!(refused, 22);
    }

    #[test]
    fn final_statuses_allow_nothing_and_open_ones_are_the_unsigned_ones() {
        for status in [Approved, Parked] {
            assert!(Step::ALL.iter().all(|s| !status.allows(*s)), "{status}");
        }
        assert_eq!(Approved.next_step(), None);
        assert_eq!(Parked.next_step(), None);
        assert!(I9Status::ALL
            .iter()
            .filter(|s| !matches!(s, Approved | Parked))
            .all(|s| s.next_step().is_some()));
        let open: Vec<I9Status> = I9Status::ALL
            .iter()
            .copied()
            .filter(|s| s.is_open())
            .collect();
        assert_eq!(open, [Section1Incomplete, SignedSec1, SignedSec2]);
        assert_eq!(I9Status::INITIAL, Section1Incomplete);
        assert!(I9Status::INITIAL.is_open());
    }

    #[test]
    fn spellings_are_the_stored_and_shown_ones() {
        assert_eq!(
            I9Status::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            [
                "Section 1 Incomplete",
                "Signed Sec 1",
                "Signed Sec 2",
                "Completed",
                "Approved",
                "Parked"
            ]
        );
        for &s in I9Status::ALL {
            assert_eq!(I9Status::parse(s.as_str()), Some(s));
            let json = serde_json::to_value(s).unwrap();
            assert_eq!(json, s.as_str());
            assert_eq!(serde_json::from_value::<I9Status>(json).unwrap(), s);
        }
        assert_eq!(I9Status::parse("signed sec 1"), None);
        assert!(serde_json::from_value::<I9Status>("Started".into()).is_err());
    }

    /// The quoted words of the first `IN (...)` from `marker` on, in the schema
    /// (migrations/20261122000001_schema.sql; no later migration changes them).
    pub(crate) fn schema_words(marker: &str) -> Vec<String> {
        let schema = include_str!("../../../migrations/20261122000001_schema.sql");
        let at = schema.find(marker).expect("the marker is in the schema");
        let list = &schema[at..];
        let list = &list[list.find("IN (").expect("an IN list") + 4..];
        let list = &list[..list.find(')').expect("the list ends")];
        list.split(',')
            .map(|w| w.trim().trim_matches('\'').to_owned())
            .collect()
    }

    #[test]
    fn the_statuses_are_the_ones_the_database_allows_and_opens() {
        let allowed = schema_words("CHECK (status IN");
        assert_eq!(
            allowed,
            I9Status::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>()
        );
        let open = schema_words("CREATE UNIQUE INDEX i9s_one_open_per_employee");
        assert_eq!(open, I9Status::OPEN.map(|s| s.as_str()));
    }

    #[test]
    fn employee_status_words() {
        assert_eq!(EmployeeI9Status::of_latest(None).as_str(), "Not Started");
        assert_eq!(EmployeeI9Status::default(), EmployeeI9Status::NotStarted);
        assert_eq!(
            EmployeeI9Status::of_latest(Some(Section1Incomplete)).as_str(),
            "Started"
        );
        // Every other status appears as is.
        for &s in &I9Status::ALL[1..] {
            assert_eq!(EmployeeI9Status::of_latest(Some(s)).as_str(), s.as_str());
        }
        assert_eq!(
            serde_json::to_value(EmployeeI9Status::NotStarted).unwrap(),
            "Not Started"
        );
    }
}
