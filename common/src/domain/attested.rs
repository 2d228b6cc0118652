//! What an employee types on the Section 1 form, read into the forms the
//! I-9 stores (docs/api.md, "Web pages for employees"): a US state or
//! territory, a ZIP code, a USCIS A-Number, a Form I-94 admission number.
//! Each parser answers the stored form, or `None` for a value it refuses.

/// The two-letter codes Form I-9 accepts for a state: the 50 states, the
/// District of Columbia, the territories and freely associated states
/// (AS, FM, GU, MH, MP, PR, PW, VI), and the military post offices (AA, AE,
/// AP).
pub const US_STATES: [&str; 62] = [
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
    "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY",
    "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV",
    "WI", "WY", "DC", "AS", "FM", "GU", "MH", "MP", "PR", "PW", "VI", "AA", "AE", "AP",
];

/// The name of each code of [`US_STATES`], in the same order: what the
/// Section 1 page's state list shows (docs/supplement-a.md, "On a phone").
pub const US_STATE_NAMES: [&str; 62] = [
    "Alabama",
    "Alaska",
    "Arizona",
    "Arkansas",
    "California",
    "Colorado",
    "Connecticut",
    "Delaware",
    "Florida",
    "Georgia",
    "Hawaii",
    "Idaho",
    "Illinois",
    "Indiana",
    "Iowa",
    "Kansas",
    "Kentucky",
    "Louisiana",
    "Maine",
    "Maryland",
    "Massachusetts",
    "Michigan",
    "Minnesota",
    "Mississippi",
    "Missouri",
    "Montana",
    "Nebraska",
    "Nevada",
    "New Hampshire",
    "New Jersey",
    "New Mexico",
    "New York",
    "North Carolina",
    "North Dakota",
    "Ohio",
    "Oklahoma",
    "Oregon",
    "Pennsylvania",
    "Rhode Island",
    "South Carolina",
    "South Dakota",
    "Tennessee",
    "Texas",
    "Utah",
    "Vermont",
    "Virginia",
    "Washington",
    "West Virginia",
    "Wisconsin",
    "Wyoming",
    "District of Columbia",
    "American Samoa",
    "Federated States of Micronesia",
    "Guam",
    "Marshall Islands",
    "Northern Mariana Islands",
    "Puerto Rico",
    "Palau",
    "U.S. Virgin Islands",
    "Armed Forces Americas",
    "Armed Forces Europe, Middle East, Africa, Canada",
    "Armed Forces Pacific",
];

/// A code of [`US_STATES`] in any letter case, as the upper-case code.
pub fn parse_us_state(s: &str) -> Option<&'static str> {
    let s = s.trim();
    US_STATES
        .iter()
        .copied()
        .find(|code| code.eq_ignore_ascii_case(s))
}

/// A ZIP code: `12345` or ZIP+4 `12345-6789`, kept as written; ZIP+4 typed
/// as 9 digits (a phone's number pad has no dash) is stored `12345-6789`.
pub fn parse_zip(s: &str) -> Option<String> {
    let s = s.trim();
    let digits = |p: &str| p.bytes().all(|c| c.is_ascii_digit());
    match s.split_once('-') {
        None if s.len() == 9 && digits(s) => Some(format!("{}-{}", &s[..5], &s[5..])),
        None => (s.len() == 5 && digits(s)).then(|| s.to_owned()),
        Some((zip, plus4)) => (zip.len() == 5 && plus4.len() == 4 && digits(zip) && digits(plus4))
            .then(|| s.to_owned()),
    }
}

/// A USCIS A-Number: 7 to 9 digits, optionally after an `A` (any case),
/// dashes and spaces anywhere ignored. Stored as `A` and 9 digits, zeros
/// added before a shorter number as USCIS asks (`a-1234567` is
/// `A001234567`).
pub fn parse_a_number(s: &str) -> Option<String> {
    let compact: String = s
        .chars()
        .filter(|c| *c != '-' && !c.is_whitespace())
        .collect();
    let digits = compact.strip_prefix(['A', 'a']).unwrap_or(&compact);
    ((7..=9).contains(&digits.len()) && digits.bytes().all(|c| c.is_ascii_digit()))
        .then(|| format!("A{digits:0>9}"))
}

/// A Form I-94 admission number: 11 digits and letters, letters stored
/// upper-case.
pub fn parse_admission_number(s: &str) -> Option<String> {
    let s = s.trim();
    (s.len() == 11 && s.bytes().all(|c| c.is_ascii_alphanumeric())).then(|| s.to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_in_any_case_are_their_upper_case_code() {
        assert_eq!(parse_us_state("ca"), Some("CA"));
        assert_eq!(parse_us_state(" Pr "), Some("PR"));
        assert_eq!(parse_us_state("ae"), Some("AE"));
        for bad in ["", "C", "XX", "UM", "Oregon", "CAL", "C A"] {
            assert_eq!(parse_us_state(bad), None, "{bad}");
        }
        let mut sorted = US_STATES.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), US_STATES.len(), "no code twice");
    }

    #[test]
    fn zip_codes_are_five_digits_or_zip_plus_four() {
        assert_eq!(parse_zip("97201").as_deref(), Some("97201"));
        assert_eq!(parse_zip("97201-1234").as_deref(), Some("97201-1234"));
        assert_eq!(parse_zip("972011234").as_deref(), Some("97201-1234"));
        for bad in [
            "97201123",
            "9720112345",
            "9720",
            "972011",
            "97201-123",
            "97201 1234",
            "9720A",
            "ABCDE",
            "-97201",
            "97201-",
        ] {
            assert_eq!(parse_zip(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_numbers_are_an_a_and_nine_digits() {
        for (typed, stored) in [
            ("A123456789", "A123456789"),
            ("a-123-456-789", "A123456789"),
            ("123 456 789", "A123456789"),
            ("12345678", "A012345678"),
            ("A1234567", "A001234567"),
        ] {
            assert_eq!(parse_a_number(typed).as_deref(), Some(stored), "{typed}");
        }
        for bad in [
            "",
            "A",
            "123456",
            "A1234567890",
            "B123456789",
            "AA123456789",
            "12345678X",
            "A12.345.678",
        ] {
            assert_eq!(parse_a_number(bad), None, "{bad}");
        }
    }

    #[test]
    fn admission_numbers_are_eleven_digits_and_letters() {
        assert_eq!(
            parse_admission_number("12345678901").as_deref(),
            Some("12345678901")
        );
        assert_eq!(
            parse_admission_number("123456789a1").as_deref(),
            Some("123456789A1")
        );
        for bad in ["1234567890", "123456789012", "12345-78901", "1234567890é"] {
            assert_eq!(parse_admission_number(bad), None, "{bad}");
        }
    }
}
