//! Expiring-document reminders (docs/reminders.md): which date of an I-9 is
//! due ([`DueKind`]), and which threshold a due date has reached on a given
//! day ([`Stage`], [`Thresholds::stages`]).

use chrono::NaiveDate;

use super::text_enum::text_enum;

text_enum! {
    /// What is due on an I-9 by a date.
    pub enum DueKind {
        /// Reverification (Supplement B): the employment authorization or the
        /// List A or List C document expires (`i9Expiration`).
        Reverification = "reverification",
        /// The document a receipt stood for (lost, stolen or damaged) must be
        /// shown (`receiptDueDate`).
        Receipt = "receipt",
        /// Reverification because E-Verify's Status Change Report named the
        /// I-9's EAD as revoked (docs/everify.md, "The Status Change Report
        /// (2025)"): due by the reverification request's `dueDate`.
        Revocation = "revocation",
    }
}

/// A threshold a due date has reached: so many days or fewer before it, or
/// past it (`overdue`, the day after the due date and later).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// At most this many days before the due date (the due date itself is 0).
    Days(u16),
    /// The due date has passed.
    Overdue,
}

impl Stage {
    /// As stored (`reminders.threshold`) and sent (`threshold`): `90`, `overdue`.
    pub fn as_text(self) -> String {
        match self {
            Stage::Days(n) => n.to_string(),
            Stage::Overdue => "overdue".to_owned(),
        }
    }
}

/// The configured day counts (`REMINDER_THRESHOLDS_DAYS`), widest first,
/// without repeats; `overdue` comes after them all, always.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thresholds(Vec<u16>);

/// The longest threshold: ten years, as the `withinDays` of the queues.
pub const MAX_THRESHOLD_DAYS: u16 = 3650;

impl Default for Thresholds {
    fn default() -> Self {
        Self(vec![90, 30, 7])
    }
}

impl Thresholds {
    /// `90,30,7` (any order, spaces allowed): whole numbers of days from 0
    /// (the due date itself) to [`MAX_THRESHOLD_DAYS`], at least one, none
    /// twice.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut days = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            let n = part
                .parse::<u16>()
                .ok()
                .filter(|n| *n <= MAX_THRESHOLD_DAYS)
                .ok_or_else(|| {
                    format!(
                        "{part:?} is not a number of days from 0 to {MAX_THRESHOLD_DAYS} \
                         (give them separated by commas, e.g. 90,30,7)"
                    )
                })?;
            if days.contains(&n) {
                return Err(format!("{n} is given twice"));
            }
            days.push(n);
        }
        days.sort_unstable_by(|a, b| b.cmp(a));
        Ok(Self(days))
    }

    /// The day counts, widest first.
    pub fn days(&self) -> &[u16] {
        &self.0
    }

    /// The widest: a due date further away than this is not looked at.
    pub fn widest(&self) -> u16 {
        self.0.first().copied().unwrap_or(0)
    }

    /// The stages `due` has reached on `today`, the tightest first: the one
    /// a reminder is sent for; the others are passed without one. Empty
    /// before the widest threshold.
    pub fn stages(&self, due: NaiveDate, today: NaiveDate) -> Vec<Stage> {
        let left = (due - today).num_days();
        let mut reached: Vec<Stage> = self
            .0
            .iter()
            .rev()
            .filter(|t| left <= i64::from(**t))
            .map(|t| Stage::Days(*t))
            .collect();
        if left < 0 {
            reached.insert(0, Stage::Overdue);
        }
        reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2027, 3, 1).unwrap() + chrono::Days::new(d.into())
    }

    #[test]
    fn thresholds_parse_widest_first_and_refuse_bad_lists() {
        assert_eq!(Thresholds::parse("7, 90,30").unwrap().days(), [90, 30, 7]);
        assert_eq!(Thresholds::parse("0").unwrap().days(), [0]);
        assert_eq!(Thresholds::default().days(), [90, 30, 7]);
        for bad in ["", "90,", "-1", "3651", "soon", "30,30"] {
            assert!(Thresholds::parse(bad).is_err(), "{bad:?}");
        }
    }

    /// Each threshold is reached on the day that many days before the due
    /// date; the due date itself is not overdue, the day after is; the
    /// tightest comes first.
    #[test]
    fn the_tightest_stage_reached_comes_first() {
        let t = Thresholds::default();
        let due = day(100);
        assert_eq!(t.stages(due, day(9)), []);
        assert_eq!(t.stages(due, day(10)), [Stage::Days(90)]);
        assert_eq!(t.stages(due, day(69)), [Stage::Days(90)]);
        assert_eq!(t.stages(due, day(70)), [Stage::Days(30), Stage::Days(90)]);
        assert_eq!(
            t.stages(due, day(95)),
            [Stage::Days(7), Stage::Days(30), Stage::Days(90)]
        );
        assert_eq!(t.stages(due, day(100))[0], Stage::Days(7));
        assert_eq!(
            t.stages(due, day(101)),
            [
                Stage::Overdue,
                Stage::Days(7),
                Stage::Days(30),
                Stage::Days(90)
            ]
        );
        assert_eq!(Stage::Days(30).as_text(), "30");
        assert_eq!(Stage::Overdue.as_text(), "overdue");
    }
}
