//! I-9 statuses (docs/api.md, "The I-9 lifecycle").

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum I9Status {
    Section1Incomplete,
    SignedSec1,
    SignedSec2,
    Completed,
    Approved,
    Parked,
}

impl I9Status {
    pub const ALL: [I9Status; 6] = [
        Self::Section1Incomplete,
        Self::SignedSec1,
        Self::SignedSec2,
        Self::Completed,
        Self::Approved,
        Self::Parked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Section1Incomplete => "Section 1 Incomplete",
            Self::SignedSec1 => "Signed Sec 1",
            Self::SignedSec2 => "Signed Sec 2",
            Self::Completed => "Completed",
            Self::Approved => "Approved",
            Self::Parked => "Parked",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Open I-9s block the creation of another.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            Self::Section1Incomplete | Self::SignedSec1 | Self::SignedSec2
        )
    }
}

/// The `i9Status` of an employee, derived from its latest I-9.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmployeeI9Status(pub Option<I9Status>);

impl EmployeeI9Status {
    pub fn as_str(self) -> &'static str {
        match self.0 {
            None => "Not Started",
            Some(I9Status::Section1Incomplete) => "Started",
            Some(s) => s.as_str(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn employee_status_words() {
        assert_eq!(EmployeeI9Status(None).as_str(), "Not Started");
        assert_eq!(
            EmployeeI9Status(Some(I9Status::Section1Incomplete)).as_str(),
            "Started"
        );
        assert_eq!(
            EmployeeI9Status(Some(I9Status::SignedSec1)).as_str(),
            "Signed Sec 1"
        );
        for s in I9Status::ALL {
            assert_eq!(I9Status::parse(s.as_str()), Some(s));
        }
    }
}
