//! How the emails write dates, in the employee's language (English, or
//! Spanish for `languagePreference` 2): "December 1, 2026" and
//! "1 de diciembre de 2026"; a link's expiry also gives the time, in UTC.

use chrono::{DateTime, Datelike, NaiveDate, Timelike, Utc};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const MESES: [&str; 12] = [
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
];

/// `day` written out.
pub fn date(day: NaiveDate, spanish: bool) -> String {
    let month = day.month0() as usize;
    if spanish {
        format!("{} de {} de {}", day.day(), MESES[month], day.year())
    } else {
        format!("{} {}, {}", MONTHS[month], day.day(), day.year())
    }
}

/// `at` written out, to the minute, in UTC.
pub fn moment(at: DateTime<Utc>, spanish: bool) -> String {
    let (h, m) = (at.hour(), at.minute());
    if spanish {
        format!("{} a las {h:02}:{m:02} (UTC)", date(at.date_naive(), true))
    } else {
        format!("{} at {h:02}:{m:02} UTC", date(at.date_naive(), false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn dates_are_written_in_each_language() {
        let d = NaiveDate::from_ymd_opt(2026, 12, 1).unwrap();
        assert_eq!(date(d, false), "December 1, 2026");
        assert_eq!(date(d, true), "1 de diciembre de 2026");
        let at = Utc.with_ymd_and_hms(2026, 12, 15, 9, 5, 59).unwrap();
        assert_eq!(moment(at, false), "December 15, 2026 at 09:05 UTC");
        assert_eq!(
            moment(at, true),
            "15 de diciembre de 2026 a las 09:05 (UTC)"
        );
    }
}
