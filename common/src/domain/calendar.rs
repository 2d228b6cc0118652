//! Business-day arithmetic for I-9 deadlines.

use chrono::{Datelike, Days, NaiveDate, Weekday};

/// The date `n` business days after `start` (the start day does not count;
/// Saturdays and Sundays do not count).
pub fn business_days_after(start: NaiveDate, n: u32) -> NaiveDate {
    let mut d = start;
    let mut left = n;
    while left > 0 {
        d = d.checked_add_days(Days::new(1)).unwrap_or(d);
        if !matches!(d.weekday(), Weekday::Sat | Weekday::Sun) {
            left -= 1;
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn three_business_days() {
        assert_eq!(business_days_after(d("2026-11-02"), 3), d("2026-11-05")); // Mon -> Thu
        assert_eq!(business_days_after(d("2026-11-05"), 3), d("2026-11-10")); // Thu -> Tue, across a weekend
        assert_eq!(business_days_after(d("2026-11-07"), 3), d("2026-11-11")); // Sat -> Wed
        assert_eq!(business_days_after(d("2026-11-08"), 3), d("2026-11-11")); // Sun -> Wed
    }
}
