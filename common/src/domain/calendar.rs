//! The calendar every deadline is counted on (docs/calendar.md): two kinds of
//! day, kept apart.
//!
//! - **Business days**, the employer's: weekdays, less the days the
//!   organization has closed (`closed_days`, configurable). Section 2 is due
//!   within three of them (M-274 4.0, "Completing Section 2: Employer
//!   Review and Verification").
//! - **Federal working days**: weekdays less the U.S. federal holidays of
//!   5 U.S.C. 6103, on their observed dates (a Saturday holiday on the Friday
//!   before, a Sunday one on the Monday after). E-Verify's windows count these.
//!
//! Counting "n days after" a day never counts that day itself: the first
//! day counted is the next one of its kind.

use std::collections::BTreeSet;

use chrono::{Datelike, Days, NaiveDate, Weekday};

/// Business days the employer has to complete Section 2 after the first day
/// of employment (M-274 4.0, "Completing Section 2: Employer Review and
/// Verification"; docs/calendar.md, "Sources").
pub const SECTION2_BUSINESS_DAYS: u32 = 3;

/// The employer's calendar: weekdays, less the organization's closed days.
/// [`Calendar::default`] has no closed day. Read from the database with
/// `Calendar::load` (`common/src/models/calendar.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Calendar {
    closed: BTreeSet<NaiveDate>,
}

/// A legal public holiday of 5 U.S.C. 6103(a) in one year: its `date` by
/// law and the day it is `observed` (moved off a weekend; the observed day
/// of New Year's Day may be December 31 of the year before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FederalHoliday {
    pub name: &'static str,
    pub date: NaiveDate,
    pub observed: NaiveDate,
}

fn is_weekend(d: NaiveDate) -> bool {
    matches!(d.weekday(), Weekday::Sat | Weekday::Sun)
}

/// The day a holiday falling on `d` is observed for a Monday-to-Friday
/// schedule: a Saturday's the Friday before, a Sunday's the Monday after
/// (5 U.S.C. 6103(b); Executive Order 11582).
fn observed(d: NaiveDate) -> NaiveDate {
    match d.weekday() {
        Weekday::Sat => d.pred_opt().unwrap_or(d),
        Weekday::Sun => d.succ_opt().unwrap_or(d),
        _ => d,
    }
}

/// The `n`th `weekday` of `month` in `year` (`n` = 5 with a fallback to 4:
/// the last one).
fn nth(year: i32, month: u32, weekday: Weekday, n: u8) -> Option<NaiveDate> {
    NaiveDate::from_weekday_of_month_opt(year, month, weekday, n)
}

fn last(year: i32, month: u32, weekday: Weekday) -> Option<NaiveDate> {
    nth(year, month, weekday, 5).or_else(|| nth(year, month, weekday, 4))
}

/// The federal holidays of `year` by their legal date, in the order of the
/// year, each with its observed day (5 U.S.C. 6103(a); docs/calendar.md).
/// Juneteenth counts from 2021, the Birthday of Martin Luther King, Jr.
/// from 1986; Inauguration Day (a holiday only in the Washington, D.C. area)
/// is left out.
pub fn federal_holidays(year: i32) -> Vec<FederalHoliday> {
    let fixed = |m, d| NaiveDate::from_ymd_opt(year, m, d);
    let rules: [(&'static str, Option<NaiveDate>, bool); 11] = [
        ("New Year's Day", fixed(1, 1), true),
        (
            "Birthday of Martin Luther King, Jr.",
            nth(year, 1, Weekday::Mon, 3),
            year >= 1986,
        ),
        ("Washington's Birthday", nth(year, 2, Weekday::Mon, 3), true),
        ("Memorial Day", last(year, 5, Weekday::Mon), true),
        (
            "Juneteenth National Independence Day",
            fixed(6, 19),
            year >= 2021,
        ),
        ("Independence Day", fixed(7, 4), true),
        ("Labor Day", nth(year, 9, Weekday::Mon, 1), true),
        ("Columbus Day", nth(year, 10, Weekday::Mon, 2), true),
        ("Veterans Day", fixed(11, 11), true),
        ("Thanksgiving Day", nth(year, 11, Weekday::Thu, 4), true),
        ("Christmas Day", fixed(12, 25), true),
    ];
    rules
        .into_iter()
        .filter(|(_, _, in_force)| *in_force)
        .filter_map(|(name, date, _)| {
            date.map(|date| FederalHoliday {
                name,
                date,
                observed: observed(date),
            })
        })
        .collect()
}

/// The federal holiday observed on `d`, if one is (New Year's Day of the
/// next year may be observed on December 31).
pub fn federal_holiday_on(d: NaiveDate) -> Option<FederalHoliday> {
    [d.year(), d.year().saturating_add(1)]
        .into_iter()
        .flat_map(federal_holidays)
        .find(|h| h.observed == d)
}

/// Whether `d` is a federal working day: a weekday on which no federal
/// holiday is observed.
pub fn is_federal_working_day(d: NaiveDate) -> bool {
    !is_weekend(d) && federal_holiday_on(d).is_none()
}

/// The date `n` federal working days after `start` (`start` itself not
/// counted). E-Verify's windows: e.g. eight of them for the employee to
/// contact SSA or DHS after a referral.
pub fn federal_working_days_after(start: NaiveDate, n: u32) -> NaiveDate {
    count_after(start, n, is_federal_working_day)
}

/// The day `n` days of the kind `counts` after `start`; at the end of the
/// representable dates, the last one.
fn count_after(start: NaiveDate, n: u32, counts: impl Fn(NaiveDate) -> bool) -> NaiveDate {
    let mut d = start;
    let mut left = n;
    while left > 0 {
        let Some(next) = d.checked_add_days(Days::new(1)) else {
            return d;
        };
        d = next;
        if counts(d) {
            left -= 1;
        }
    }
    d
}

impl Calendar {
    /// A calendar whose closed days are `closed`.
    pub fn with_closed_days(closed: impl IntoIterator<Item = NaiveDate>) -> Self {
        Self {
            closed: closed.into_iter().collect(),
        }
    }

    /// Whether the organization closed `d`.
    pub fn is_closed(&self, d: NaiveDate) -> bool {
        self.closed.contains(&d)
    }

    /// Whether `d` is a business day: a weekday the organization has not
    /// closed. Federal holidays are business days unless closed.
    pub fn is_business_day(&self, d: NaiveDate) -> bool {
        !is_weekend(d) && !self.is_closed(d)
    }

    /// Whether `d` is a federal working day ([`is_federal_working_day`]; the
    /// organization's closed days do not change it).
    pub fn is_federal_working_day(&self, d: NaiveDate) -> bool {
        is_federal_working_day(d)
    }

    /// The date `n` business days after `start` (`start` itself not counted).
    pub fn business_days_after(&self, start: NaiveDate, n: u32) -> NaiveDate {
        count_after(start, n, |d| self.is_business_day(d))
    }

    /// The date `n` federal working days after `start`
    /// ([`federal_working_days_after`]).
    pub fn federal_working_days_after(&self, start: NaiveDate, n: u32) -> NaiveDate {
        federal_working_days_after(start, n)
    }

    /// The Section 2 deadline of an employee whose first day of employment
    /// is `start`: [`SECTION2_BUSINESS_DAYS`] business days after it.
    pub fn section2_due(&self, start: NaiveDate) -> NaiveDate {
        self.business_days_after(start, SECTION2_BUSINESS_DAYS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    /// M-274 and the Form I-9 instructions: "if an employee begins
    /// employment on Monday, the employer must complete Section 2 by
    /// Thursday of that week" (docs/calendar.md, "Sources").
    #[test]
    fn section2_handbook_example_monday_to_thursday() {
        let c = Calendar::default();
        for (start, due) in [
            ("2026-11-02", "2026-11-05"), // Mon -> Thu
            ("2025-01-06", "2025-01-09"), // Mon -> Thu
        ] {
            assert_eq!(c.section2_due(d(start)), d(due), "start {start}");
        }
    }

    #[test]
    fn business_days_table() {
        let closed = Calendar::with_closed_days([
            d("2026-11-26"), // Thanksgiving, closed by the organization
            d("2026-11-27"), // the day after, closed too
            d("2026-12-24"),
        ]);
        let open = Calendar::default();
        for (cal, start, n, expected, why) in [
            (
                &open,
                "2026-11-05",
                3,
                "2026-11-10",
                "Thu -> Tue, across a weekend",
            ),
            (&open, "2026-11-07", 3, "2026-11-11", "Sat -> Wed"),
            (&open, "2026-11-08", 3, "2026-11-11", "Sun -> Wed"),
            (
                &open,
                "2026-11-06",
                0,
                "2026-11-06",
                "zero days: the day itself",
            ),
            (&open, "2021-12-30", 3, "2022-01-04", "across the year end"),
            (
                &open,
                "2026-11-25",
                3,
                "2026-11-30",
                "a federal holiday is a business day unless closed",
            ),
            (
                &closed,
                "2026-11-25",
                3,
                "2026-12-02",
                "Thanksgiving and the Friday after closed",
            ),
            (
                &closed,
                "2026-11-26",
                3,
                "2026-12-02",
                "a start on a closed day",
            ),
            (
                &closed,
                "2026-12-22",
                3,
                "2026-12-28",
                "Christmas Eve closed, Christmas on a Friday is open",
            ),
            (
                &closed,
                "2026-11-02",
                3,
                "2026-11-05",
                "closed days elsewhere change nothing",
            ),
        ] {
            assert_eq!(cal.business_days_after(d(start), n), d(expected), "{why}");
        }
    }

    #[test]
    fn business_and_federal_days_are_apart() {
        let c = Calendar::with_closed_days([d("2026-12-24")]);
        // Christmas 2026 (a Friday): a business day, not a federal working day.
        assert!(c.is_business_day(d("2026-12-25")));
        assert!(!c.is_federal_working_day(d("2026-12-25")));
        // The organization's closed day: not a business day, a federal working day.
        assert!(!c.is_business_day(d("2026-12-24")));
        assert!(c.is_federal_working_day(d("2026-12-24")));
        assert!(!c.is_business_day(d("2026-12-26")));
        assert!(!is_federal_working_day(d("2026-12-26")));
    }

    /// OPM's lists of observed dates (docs/calendar.md, "Sources").
    #[test]
    fn observed_federal_holidays() {
        let observed = |year| -> Vec<(String, &'static str)> {
            federal_holidays(year)
                .into_iter()
                .map(|h| (h.observed.to_string(), h.name))
                .collect()
        };
        // 2021: Juneteenth (a Saturday) on Friday June 18, Independence Day
        // (a Sunday) on Monday July 5, Christmas (a Saturday) on Friday Dec 24.
        let y2021 = observed(2021);
        for (day, name) in [
            ("2021-06-18", "Juneteenth National Independence Day"),
            ("2021-07-05", "Independence Day"),
            ("2021-12-24", "Christmas Day"),
        ] {
            assert!(y2021.contains(&(day.to_string(), name)), "{day} {name}");
        }
        // 2022, as OPM lists it: New Year's Day on Friday Dec 31 2021.
        assert_eq!(
            observed(2022),
            [
                ("2021-12-31", "New Year's Day"),
                ("2022-01-17", "Birthday of Martin Luther King, Jr."),
                ("2022-02-21", "Washington's Birthday"),
                ("2022-05-30", "Memorial Day"),
                ("2022-06-20", "Juneteenth National Independence Day"),
                ("2022-07-04", "Independence Day"),
                ("2022-09-05", "Labor Day"),
                ("2022-10-10", "Columbus Day"),
                ("2022-11-11", "Veterans Day"),
                ("2022-11-24", "Thanksgiving Day"),
                ("2022-12-26", "Christmas Day"),
            ]
            .map(|(d, n)| (d.to_string(), n))
        );
        // 2012, as OPM listed it: New Year's Day on Monday Jan 2, Veterans
        // Day on Monday Nov 12.
        let y2012 = observed(2012);
        assert!(y2012.contains(&("2012-01-02".into(), "New Year's Day")));
        assert!(y2012.contains(&("2012-11-12".into(), "Veterans Day")));
        assert!(y2012.contains(&("2012-05-28".into(), "Memorial Day")));
        // Juneteenth is not a federal holiday before 2021.
        assert!(federal_holidays(2020)
            .iter()
            .all(|h| h.name != "Juneteenth National Independence Day"));
        assert_eq!(federal_holidays(2020).len(), 10);
        assert_eq!(federal_holidays(2026).len(), 11);
        // Dec 31 2021 is a federal holiday (next year's New Year's Day).
        assert_eq!(
            federal_holiday_on(d("2021-12-31")).map(|h| h.name),
            Some("New Year's Day")
        );
        assert_eq!(federal_holiday_on(d("2022-01-01")), None);
    }

    /// E-Verify: the employee has eight federal government working days to
    /// contact SSA or DHS after the case is referred; the employer ten to
    /// act on a tentative nonconfirmation (docs/calendar.md, "Sources").
    #[test]
    fn federal_working_days_table() {
        for (start, n, expected, why) in [
            (
                "2026-11-02",
                8,
                "2026-11-13",
                "Mon + 8: Veterans Day (Wed Nov 11) skipped",
            ),
            (
                "2026-11-16",
                8,
                "2026-11-27",
                "Thanksgiving skipped (the Friday after counts)",
            ),
            (
                "2021-12-30",
                1,
                "2022-01-03",
                "Dec 31 2021 is New Year's Day observed",
            ),
            (
                "2021-12-23",
                3,
                "2021-12-29",
                "Christmas 2021 observed Fri Dec 24",
            ),
            (
                "2026-01-16",
                1,
                "2026-01-20",
                "the Friday before MLK Day (Jan 19)",
            ),
            (
                "2021-06-17",
                1,
                "2021-06-21",
                "Juneteenth 2021 observed Fri June 18",
            ),
            (
                "2027-07-02",
                1,
                "2027-07-06",
                "Independence Day 2027 (a Sunday) observed Mon July 5",
            ),
            ("2026-11-02", 10, "2026-11-17", "ten days for the employer"),
            ("2026-11-07", 0, "2026-11-07", "zero days: the day itself"),
        ] {
            assert_eq!(
                federal_working_days_after(d(start), n),
                d(expected),
                "{why}"
            );
        }
    }

    #[test]
    fn counting_stops_at_the_last_date() {
        let c = Calendar::default();
        let max = NaiveDate::MAX;
        assert_eq!(c.business_days_after(max, 3), max);
        assert_eq!(federal_working_days_after(max, 3), max);
    }
}
