//! Dates in and out: inputs accept `YYYY-MM-DD` and `MM/DD/YYYY` of the years
//! [`FIRST_YEAR`] to [`LAST_YEAR`]; outputs are `YYYY-MM-DD`, timestamps ISO
//! 8601 UTC with fractional seconds and no zone (docs/api.md, "Dates").

use chrono::{DateTime, NaiveDate, Utc};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be a date written YYYY-MM-DD or MM/DD/YYYY, in the years 1900 to 2099")]
pub struct DateParseError;

/// What a value that is not such a date is told (`invalid_date`), once.
pub const DATE_RULE: &str =
    "Must be a date written YYYY-MM-DD or MM/DD/YYYY, in the years 1900 to 2099.";

/// The years a date may have. No date of an employee or an I-9 falls
/// outside them, and a date computed from one (`dateDue`, three business
/// days later) stays a four-digit year.
pub const FIRST_YEAR: i32 = 1900;
pub const LAST_YEAR: i32 = 2099;

pub fn parse_date(input: &str) -> Result<NaiveDate, DateParseError> {
    let date = parse_any_year(input)?;
    match (FIRST_YEAR..=LAST_YEAR).contains(&chrono::Datelike::year(&date)) {
        true => Ok(date),
        false => Err(DateParseError),
    }
}

/// Why a date of birth is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BirthDateError {
    /// Not a date [`parse_date`] reads, nor one of before [`FIRST_YEAR`].
    NotADate,
    /// Before 1 January [`FIRST_YEAR`].
    TooEarly,
    /// After `today` (the year 2100 and later included).
    Future,
}

/// What a date of birth in the future is told (`invalid_value`), once.
pub const BIRTH_DATE_RULE: &str = "A date of birth cannot be in the future.";

/// A date of birth: a date [`parse_date`] reads that is not after `today`
/// (docs/api.md, "Dates and formats").
pub fn parse_birth_date(input: &str, today: NaiveDate) -> Result<NaiveDate, BirthDateError> {
    let date = parse_any_year(input).map_err(|_| BirthDateError::NotADate)?;
    check_birth_date(date, today)
}

/// Whether `date`, read as a date, may be a date of birth when it is `today`.
pub fn check_birth_date(date: NaiveDate, today: NaiveDate) -> Result<NaiveDate, BirthDateError> {
    if chrono::Datelike::year(&date) < FIRST_YEAR {
        Err(BirthDateError::TooEarly)
    } else if date > today {
        Err(BirthDateError::Future)
    } else {
        Ok(date)
    }
}

/// `YYYY-MM-DD` or `MM/DD/YYYY` of a day that exists, whatever its year.
fn parse_any_year(input: &str) -> Result<NaiveDate, DateParseError> {
    let s = input.trim();
    let ok_shape = |pattern: &[u8]| {
        s.len() == pattern.len()
            && s.bytes().zip(pattern).all(|(c, p)| match p {
                b'9' => c.is_ascii_digit(),
                sep => c == *sep,
            })
    };
    let date = if ok_shape(b"9999-99-99") {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| DateParseError)?
    } else if ok_shape(b"99/99/9999") {
        NaiveDate::parse_from_str(s, "%m/%d/%Y").map_err(|_| DateParseError)?
    } else {
        return Err(DateParseError);
    };
    Ok(date)
}

pub fn format_date(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

pub fn format_timestamp(t: DateTime<Utc>) -> String {
    t.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_input_formats() {
        let d = NaiveDate::from_ymd_opt(2026, 3, 14).unwrap();
        assert_eq!(parse_date("2026-03-14"), Ok(d));
        assert_eq!(parse_date("03/14/2026"), Ok(d));
        assert_eq!(format_date(d), "2026-03-14");
        assert!(parse_date("1900-01-01").is_ok());
        assert!(parse_date("12/31/2099").is_ok());
    }

    #[test]
    fn impossible_or_odd_dates_are_errors() {
        for bad in [
            "2026-02-30",
            "13/01/2026",
            "2026-3-14",
            "3/14/2026",
            "14.03.2026",
            "",
            "+2026-03-14",
            "2026-03-14T00:00",
            "1899-12-31",
            "2100-01-01",
            "9999-12-31",
            "0000-01-01",
            "12/31/9999",
        ] {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_date_of_birth_is_not_in_the_future_nor_before_1900() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 24).unwrap();
        let d = |y, m, day| NaiveDate::from_ymd_opt(y, m, day).unwrap();
        assert_eq!(parse_birth_date("1990-03-14", today), Ok(d(1990, 3, 14)));
        assert_eq!(parse_birth_date("11/24/2026", today), Ok(today));
        assert_eq!(parse_birth_date("1900-01-01", today), Ok(d(1900, 1, 1)));
        use BirthDateError::*;
        for (typed, why) in [
            ("2026-11-25", Future),
            ("2030-01-01", Future),
            ("2100-01-01", Future),
            ("1899-12-31", TooEarly),
            ("0001-01-01", TooEarly),
            ("1990-02-30", NotADate),
            ("", NotADate),
        ] {
            assert_eq!(parse_birth_date(typed, today), Err(why), "{typed}");
        }
    }

    #[test]
    fn timestamps_have_fraction_and_no_zone() {
        let t = DateTime::parse_from_rfc3339("2026-11-22T14:03:07.123456Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(format_timestamp(t), "2026-11-22T14:03:07.123456");
    }
}
