//! A US social security number in its canonical `###-##-####` form.

use std::fmt;

#[derive(Clone, PartialEq, Eq)]
pub struct Ssn(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SsnError {
    #[error("must be a social security number written ###-##-####")]
    Format,
    #[error(
        "is not a valid social security number (area 000, 666 or 9xx, group 00 or serial 0000)"
    )]
    Invalid,
}

impl Ssn {
    /// What a number not written `###-##-####` is told (`invalid_format`).
    pub const FORMAT_RULE: &'static str = "Must be written ###-##-####.";
    /// What a number written right that is never issued is told
    /// (`invalid_value`); never the number itself.
    pub const NEVER_ISSUED: &'static str = "Not a valid social security number: the first three \
        digits cannot be 000, 666 or 900-999, the middle two cannot be 00 and the last four cannot \
        be 0000.";

    /// Accepts `###-##-####` only (the specification's format).
    pub fn parse(input: &str) -> Result<Self, SsnError> {
        let b = input.as_bytes();
        let shape_ok = b.len() == 11
            && b[3] == b'-'
            && b[6] == b'-'
            && b.iter()
                .enumerate()
                .all(|(i, c)| i == 3 || i == 6 || c.is_ascii_digit());
        if !shape_ok {
            return Err(SsnError::Format);
        }
        let (area, group, serial) = (&input[0..3], &input[4..6], &input[7..11]);
        if area == "000"
            || area == "666"
            || area.starts_with('9')
            || group == "00"
            || serial == "0000"
        {
            return Err(SsnError::Invalid);
        }
        Ok(Self(input.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn last4(&self) -> &str {
        &self.0[7..]
    }

    /// `***-**-1234`, for users without permission 12.
    pub fn masked(&self) -> String {
        mask_last4(self.last4())
    }
}

pub fn mask_last4(last4: &str) -> String {
    format!("***-**-{last4}")
}

/// Never print the number itself: debug output ends up in logs.
impl fmt::Debug for Ssn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ssn({})", self.masked())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_canonical_form() {
        let s = Ssn::parse("123-45-6789").unwrap();
        assert_eq!(s.as_str(), "123-45-6789");
        assert_eq!(s.last4(), "6789");
        assert_eq!(s.masked(), "***-**-6789");
    }

    #[test]
    fn rejects_other_shapes() {
        for bad in [
            "123456789",
            "123-456-789",
            "12-345-6789",
            "abc-de-fghi",
            "123-45-678",
            "",
            "١٢٣-٤٥-٦٧٨٩",
        ] {
            assert_eq!(Ssn::parse(bad), Err(SsnError::Format), "{bad}");
        }
    }

    #[test]
    fn rejects_numbers_never_issued() {
        for bad in [
            "000-12-3456",
            "666-12-3456",
            "912-34-5678",
            "123-00-4567",
            "123-45-0000",
        ] {
            assert_eq!(Ssn::parse(bad), Err(SsnError::Invalid), "{bad}");
        }
    }

    #[test]
    fn debug_does_not_leak() {
        let s = Ssn::parse("123-45-6789").unwrap();
        assert!(!format!("{s:?}").contains("123-45"));
    }
}
