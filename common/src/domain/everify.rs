//! E-Verify cases (docs/everify.md): the case's statuses, results and codes,
//! and the workflow, written once as a pure function of the case as it
//! stands and what happens to it ([`apply`]): the program's answer or an
//! employer's step gives the new status, the next step and its due date.
//!
//! Windows are counted in federal working days ([`federal_working_days_after`],
//! docs/calendar.md) from the day each step happened. That day is E-Verify's,
//! the U.S. Eastern date ([`eastern_date`], `America/New_York`; docs/everify.md,
//! "Which day (7)"): the callers hand in `Config::everify_today`, not the
//! service's UTC day.

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::America::New_York;

use super::calendar::federal_working_days_after;
use super::text_enum::text_enum;

/// Federal working days the employer has, after a mismatch, to notify the
/// employee, have the decision and refer or close ([EV-TNC]).
pub const TNC_DECISION_DAYS: u32 = 10;
/// Federal working days the employee has, after the referral, to contact
/// SSA or DHS ([EV-EMPLOYEE-TNC]).
pub const REFERRAL_CONTACT_DAYS: u32 = 8;
/// Federal working days DHS may take on an E-Verify Needs More Time case ([EV-UM-3.2]).
pub const MORE_TIME_DAYS: u32 = 3;
/// Federal working days in continuance before the employer contacts E-Verify ([EV-UM-3.4]).
pub const CONTINUANCE_DAYS: u32 = 60;
/// Federal working days before E-Verify closes an incomplete case ([EV-QRG-3.2.3]).
pub const INCOMPLETE_DAYS: u32 = 180;
/// The longest `lateReasonOther`, `closureNote` and `reasonOther` (E-Verify's 200 characters).
pub const REASON_TEXT_MAX: usize = 200;

text_enum! {
    /// Where a case stands: E-Verify's names, plus the service's `Pending`
    /// and `Closed` (docs/everify.md, "The workflow").
    pub enum CaseStatus {
        Pending = "Pending",
        CaseIncomplete = "Case Incomplete",
        DuplicateCase = "Duplicate Case",
        NeedsMoreTime = "E-Verify Needs More Time",
        Tnc = "Tentative Nonconfirmation",
        Referred = "Referred",
        Continuance = "Case in Continuance",
        Resubmit = "Close Case and Resubmit",
        Fnc = "Final Nonconfirmation",
        Closed = "Closed",
    }
}

text_enum! {
    /// The program's latest result, in E-Verify's words; a closed case keeps it.
    pub enum CaseResult {
        EmploymentAuthorized = "Employment Authorized",
        NeedsMoreTime = "E-Verify Needs More Time",
        Tnc = "Tentative Nonconfirmation",
        Continuance = "Case in Continuance",
        Resubmit = "Close Case and Resubmit",
        Fnc = "Final Nonconfirmation",
        DuplicateCase = "Duplicate Case",
        CaseIncomplete = "Case Incomplete",
    }
}

text_enum! {
    /// The agency of a mismatch.
    pub enum Agency {
        Ssa = "SSA",
        Dhs = "DHS",
        Both = "SSA and DHS",
    }
}

text_enum! {
    /// Why a Final Nonconfirmation: the agency decided, the employee did not
    /// contact it in time, or chose not to take action.
    pub enum Basis {
        Agency = "agency",
        NoShow = "no_show",
        NoAction = "no_action",
    }
}

text_enum! {
    /// Which program answers a case: a simulated result never passes for a real one.
    pub enum ProgramName {
        Simulator = "simulator",
        EVerify = "e-verify",
    }
}

text_enum! {
    /// Why a case is created late (docs/everify.md, "Late case creation";
    /// the federal contractors' reason is left out, open question 6).
    pub enum LateReason {
        AwaitingSsn = "AWAITING_SSN",
        TechnicalProblems = "TECHNICAL_PROBLEMS",
        AuditRevealedNewHireNotRun = "AUDIT_REVEALED_NEW_HIRE_NOT_RUN",
        Other = "OTHER",
    }
}

text_enum! {
    /// Why a duplicate case goes on (docs/everify.md, "Duplicate cases").
    pub enum DuplicateReason {
        Rehire = "REHIRE",
        IncorrectInformation = "INCORRECT_INFORMATION",
        DhsAsked = "DHS_ASKED",
        SsaAsked = "SSA_ASKED",
        PreviousResultResubmit = "PREVIOUS_RESULT_RESUBMIT",
        Other = "OTHER",
    }
}

text_enum! {
    /// How a case was closed (docs/everify.md, "Closure reasons").
    pub enum ClosureReason {
        ContinuesAfterEa = "EMPLOYEE_CONTINUES_TO_WORK_AFTER_EA",
        ContinuesAfterFnc = "EMPLOYEE_CONTINUES_TO_WORK_AFTER_FNC",
        ContinuesAfterNoShow = "EMPLOYEE_CONTINUES_TO_WORK_AFTER_NO_SHOW",
        ContinuesAfterNoAction = "EMPLOYEE_CONTINUES_TO_WORK_AFTER_NO_ACTION",
        TerminatedForFnc = "EMPLOYEE_TERMINATED_FOR_FNC",
        TerminatedForNoShow = "EMPLOYEE_TERMINATED_FOR_NO_SHOW",
        TerminatedForNoAction = "EMPLOYEE_TERMINATED_FOR_NO_ACTION",
        Quit = "EMPLOYEE_QUIT",
        TerminatedOther = "EMPLOYEE_TERMINATED_OTHER",
        IncorrectData = "INCORRECT_DATA",
        DuplicateCase = "DUPLICATE_CASE",
        TechnicalIssues = "TECHNICAL_ISSUES",
        Other = "OTHER",
    }
}

text_enum! {
    /// What changed a case: an employer's step, or `program` (the program's
    /// own answer). Kept in `everify_case_history.step` and the audit's
    /// `everify.step` detail.
    pub enum Step {
        Open = "open",
        Program = "program",
        ConfirmDetails = "confirm-details",
        ContinueDuplicate = "continue-duplicate",
        Notify = "notify",
        Refer = "refer",
        NoAction = "no-action",
        Resubmit = "resubmit",
        Close = "close",
    }
}

impl CaseStatus {
    /// Unresolved: any status but `Closed` (docs/everify.md, decision 3).
    pub fn unresolved(self) -> bool {
        self != CaseStatus::Closed
    }
}

impl CaseResult {
    /// The status a case takes on this result (Employment Authorized closes it).
    pub fn status(self) -> CaseStatus {
        match self {
            CaseResult::EmploymentAuthorized => CaseStatus::Closed,
            CaseResult::NeedsMoreTime => CaseStatus::NeedsMoreTime,
            CaseResult::Tnc => CaseStatus::Tnc,
            CaseResult::Continuance => CaseStatus::Continuance,
            CaseResult::Resubmit => CaseStatus::Resubmit,
            CaseResult::Fnc => CaseStatus::Fnc,
            CaseResult::DuplicateCase => CaseStatus::DuplicateCase,
            CaseResult::CaseIncomplete => CaseStatus::CaseIncomplete,
        }
    }
}

impl ClosureReason {
    /// E-Verify's closure statement, kept with the code so a record reads the
    /// same after E-Verify rewords it. Those not verified in E-Verify's own
    /// text are the service's wording (docs/everify.md, "Closure reasons").
    pub fn statement(self) -> &'static str {
        match self {
            Self::ContinuesAfterEa => "The employee continues to work for the employer after receiving an Employment Authorized result.",
            Self::ContinuesAfterFnc => "The employee continues to work for the employer after receiving a Final Nonconfirmation result.",
            Self::ContinuesAfterNoShow => "The employee continues to work for the employer after receiving a Department of Homeland Security (DHS) No Show result.",
            Self::ContinuesAfterNoAction => "The employee continues to work for the employer after choosing not to take action to resolve a Tentative Nonconfirmation (mismatch).",
            Self::TerminatedForFnc => "The employee was terminated by the employer for receiving a Final Nonconfirmation result.",
            Self::TerminatedForNoShow => "The employee was terminated by the employer for receiving a Department of Homeland Security (DHS) No Show result.",
            Self::TerminatedForNoAction => "The employee was terminated by the employer for choosing not to take action to resolve a Tentative Nonconfirmation (mismatch).",
            Self::Quit => "The employee voluntarily quit working for the employer.",
            Self::TerminatedOther => "The employee was terminated by the employer for reasons other than E-Verify.",
            Self::IncorrectData => "The case is being closed because the data entered is incorrect.",
            Self::DuplicateCase => "The case is invalid because another case with the same data already exists.",
            Self::TechnicalIssues => "This case is being closed because of technical issues with E-Verify.",
            Self::Other => "Other",
        }
    }

    /// Whether the employee still works for the employer after this closure,
    /// when the code says so.
    pub fn employed(self) -> Option<bool> {
        match self {
            Self::ContinuesAfterEa
            | Self::ContinuesAfterFnc
            | Self::ContinuesAfterNoShow
            | Self::ContinuesAfterNoAction => Some(true),
            Self::TerminatedForFnc
            | Self::TerminatedForNoShow
            | Self::TerminatedForNoAction
            | Self::Quit
            | Self::TerminatedOther => Some(false),
            _ => None,
        }
    }

    /// Whether closing a case in `status` with this code needs the employer
    /// to say whether the employee still works here (`employedAtClosure`):
    /// on a Final Nonconfirmation, whose closure is the employer's decision
    /// on the employment (E-Verify's closure asks whether it will continue to
    /// employ the individual, User Manual 4.1 [EV-UM-4.1]), when the code does
    /// not say it itself (`OTHER`). Elsewhere a code that does not say it is
    /// one of E-Verify's "neither of the above applies" closures (the case is
    /// invalid: incorrect data, a duplicate, technical issues, other), which
    /// do not ask it: the flag is optional there (docs/everify.md, "Closure
    /// reasons").
    pub fn needs_employment(self, status: CaseStatus) -> bool {
        status == CaseStatus::Fnc && self.employed().is_none()
    }

    /// Whether a typed `closureNote` is required (E-Verify asks a reason of
    /// an employer that keeps the employee after a nonconfirmation, and with `OTHER`).
    pub fn needs_note(self) -> bool {
        matches!(
            self,
            Self::ContinuesAfterFnc
                | Self::ContinuesAfterNoShow
                | Self::ContinuesAfterNoAction
                | Self::Other
        )
    }
}

/// The closure reasons the employer may choose on a case in `status` whose
/// Final Nonconfirmation (if any) rests on `basis` (docs/everify.md,
/// "Closure reasons", and decision 4: while the agency or DHS has the case,
/// only an employment that ended closes it). Empty: no closure at all.
pub fn closure_reasons(status: CaseStatus, basis: Option<Basis>) -> Vec<ClosureReason> {
    use ClosureReason as C;
    let ended = [C::Quit, C::TerminatedOther];
    let mut allowed: Vec<ClosureReason> = match status {
        CaseStatus::Pending | CaseStatus::Closed => vec![],
        CaseStatus::Referred | CaseStatus::NeedsMoreTime | CaseStatus::Continuance => {
            ended.to_vec()
        }
        CaseStatus::Fnc => match basis.unwrap_or(Basis::Agency) {
            Basis::Agency => vec![C::ContinuesAfterFnc, C::TerminatedForFnc],
            Basis::NoShow => vec![C::ContinuesAfterNoShow, C::TerminatedForNoShow],
            Basis::NoAction => vec![C::ContinuesAfterNoAction, C::TerminatedForNoAction],
        },
        CaseStatus::CaseIncomplete => vec![C::IncorrectData, C::TechnicalIssues],
        CaseStatus::DuplicateCase => vec![C::DuplicateCase, C::IncorrectData],
        CaseStatus::Tnc | CaseStatus::Resubmit => vec![C::IncorrectData],
    };
    if matches!(
        status,
        CaseStatus::Fnc
            | CaseStatus::CaseIncomplete
            | CaseStatus::DuplicateCase
            | CaseStatus::Tnc
            | CaseStatus::Resubmit
    ) {
        allowed.extend(ended);
        allowed.push(C::Other);
    }
    allowed
}

/// E-Verify's day at the instant `at`: the date in `America/New_York`
/// (Eastern Standard Time, UTC-5, in winter; Eastern Daylight Time, UTC-4,
/// from the second Sunday in March to the first Sunday in November), on which
/// E-Verify dates a case's steps and counts its windows (docs/everify.md,
/// "Which day (7)"). Between 00:00 UTC and 04:00 (summer) or 05:00 (winter)
/// UTC it is the day before the UTC date.
pub fn eastern_date(at: DateTime<Utc>) -> NaiveDate {
    at.with_timezone(&New_York).date_naive()
}

/// A case as the workflow reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseState {
    pub status: CaseStatus,
    pub result: Option<CaseResult>,
    pub agency: Option<Agency>,
    pub basis: Option<Basis>,
    pub result_issued_on: Option<NaiveDate>,
    pub employee_notified_on: Option<NaiveDate>,
    pub referred_on: Option<NaiveDate>,
    pub continuance_on: Option<NaiveDate>,
    pub closure_reason: Option<ClosureReason>,
    pub closed_on: Option<NaiveDate>,
}

impl CaseState {
    /// A case just written, waiting for the program's first answer.
    pub fn pending() -> Self {
        Self {
            status: CaseStatus::Pending,
            result: None,
            agency: None,
            basis: None,
            result_issued_on: None,
            employee_notified_on: None,
            referred_on: None,
            continuance_on: None,
            closure_reason: None,
            closed_on: None,
        }
    }

    /// What is to be done next and by when (`None`: nothing, the case is
    /// closed). The due date is informative where no one but the program can
    /// act (DHS's three days).
    pub fn next_step(&self) -> (Option<String>, Option<NaiveDate>) {
        let after = |d: Option<NaiveDate>, n| d.map(|d| federal_working_days_after(d, n));
        let agency = self.agency.map_or("SSA or DHS", |a| match a {
            Agency::Ssa => "SSA",
            Agency::Dhs => "DHS",
            Agency::Both => "SSA and DHS",
        });
        let (step, due): (String, Option<NaiveDate>) = match self.status {
            CaseStatus::Closed => return (None, None),
            CaseStatus::Pending => ("E-Verify answers".into(), None),
            CaseStatus::CaseIncomplete => (
                "Confirm the case data or close the case".into(),
                after(self.result_issued_on, INCOMPLETE_DAYS),
            ),
            CaseStatus::DuplicateCase => ("Continue with a reason or close the case".into(), None),
            CaseStatus::NeedsMoreTime => (
                "DHS answers".into(),
                after(self.result_issued_on, MORE_TIME_DAYS),
            ),
            CaseStatus::Tnc => (
                match self.employee_notified_on {
                    None => "Notify the employee and give the Further Action Notice".into(),
                    Some(_) => "The employee decides: refer the case, or record no action".into(),
                },
                after(self.result_issued_on, TNC_DECISION_DAYS),
            ),
            CaseStatus::Referred => (
                format!("The employee contacts {agency}"),
                after(self.referred_on, REFERRAL_CONTACT_DAYS),
            ),
            CaseStatus::Continuance => (
                format!(
                    "{agency} {}; after the due date, contact E-Verify",
                    if self.agency == Some(Agency::Both) {
                        "decide"
                    } else {
                        "decides"
                    }
                ),
                after(self.continuance_on, CONTINUANCE_DAYS),
            ),
            CaseStatus::Resubmit => ("Close and create a new case".into(), None),
            // E-Verify gives no number of days: close it "immediately" /
            // "promptly" ([EV-SA-3.5], [USCIS-BULLETIN-2018]). The service
            // makes it due on the day the result arrived, so an open Final
            // Nonconfirmation is overdue from the next day on
            // (docs/everify.md, "Windows" and "Deadlines passed").
            CaseStatus::Fnc => ("Close the case".into(), self.result_issued_on),
        };
        (Some(step), due)
    }

    /// Whether the next step's due date has passed on `today`.
    pub fn overdue(&self, today: NaiveDate) -> bool {
        self.next_step().1.is_some_and(|due| due < today)
    }
}

/// What happens to a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The program answered (or changed the case on its own).
    Answer {
        result: CaseResult,
        agency: Option<Agency>,
        basis: Option<Basis>,
    },
    ConfirmDetails,
    ContinueDuplicate,
    Notify,
    Refer,
    NoAction,
    /// Close Case and Resubmit: this case closes (a new one is opened beside it).
    Resubmit,
    Close(ClosureReason),
}

impl Change {
    /// The step this change is, for the history and the audit.
    pub fn step(self) -> Step {
        match self {
            Change::Answer { .. } => Step::Program,
            Change::ConfirmDetails => Step::ConfirmDetails,
            Change::ContinueDuplicate => Step::ContinueDuplicate,
            Change::Notify => Step::Notify,
            Change::Refer => Step::Refer,
            Change::NoAction => Step::NoAction,
            Change::Resubmit => Step::Resubmit,
            Change::Close(_) => Step::Close,
        }
    }
}

/// Why a change does not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The step does not fit the case's status (409), saying what would.
    Conflict(String),
    /// The closure reason does not fit the status (422 naming `closureReason`).
    ClosureReason(String),
}

/// The case after `change` on `today` (the workflow of docs/everify.md, "The
/// workflow: states and transitions", in one place).
pub fn apply(state: &CaseState, change: Change, today: NaiveDate) -> Result<CaseState, Refused> {
    use CaseStatus as S;
    let s = state.status;
    let wrong = |what: &str| {
        Err(Refused::Conflict(format!(
            "{what} does not fit a case in status {:?}{}",
            s.as_str(),
            match state.next_step().0 {
                Some(next) => format!("; next: {next}."),
                None => ": it is closed.".to_owned(),
            }
        )))
    };
    let mut next = state.clone();
    match change {
        Change::Answer {
            result,
            agency,
            basis,
        } => {
            if s == S::Closed {
                return wrong("An answer of the program");
            }
            next.status = result.status();
            next.result = Some(result);
            if agency.is_some() {
                next.agency = agency;
            }
            next.basis = match result {
                CaseResult::Fnc => Some(basis.unwrap_or(Basis::Agency)),
                _ => None,
            };
            match result {
                CaseResult::Continuance => next.continuance_on = Some(today),
                _ => next.result_issued_on = Some(today),
            }
            if result == CaseResult::EmploymentAuthorized {
                // E-Verify closes it itself ([EV-APR2019]).
                next.closure_reason = Some(ClosureReason::ContinuesAfterEa);
                next.closed_on = Some(today);
            }
        }
        Change::ConfirmDetails => {
            if s != S::CaseIncomplete {
                return wrong("confirm-details");
            }
            next.status = S::Pending;
        }
        Change::ContinueDuplicate => {
            if s != S::DuplicateCase {
                return wrong("continue-duplicate");
            }
            next.status = S::Pending;
        }
        Change::Notify => {
            if s != S::Tnc {
                return wrong("notify");
            }
            if state.employee_notified_on.is_some() {
                return Err(Refused::Conflict(
                    "The employee was notified already: refer the case, or record no action."
                        .into(),
                ));
            }
            next.employee_notified_on = Some(today);
        }
        Change::Refer => {
            if s != S::Tnc {
                return wrong("refer");
            }
            if state.employee_notified_on.is_none() {
                return Err(Refused::Conflict(
                    "Notify the employee first (POST .../notify): the Further Action Notice \
                     comes before the referral."
                        .into(),
                ));
            }
            next.status = S::Referred;
            next.referred_on = Some(today);
        }
        Change::NoAction => {
            if s != S::Tnc {
                return wrong("no-action");
            }
            // The employee decides after the Further Action Notice, as for
            // a referral (docs/everify.md, "The steps of a Tentative
            // Nonconfirmation"; the HR trial's no-action without a notice).
            if state.employee_notified_on.is_none() {
                return Err(Refused::Conflict(
                    "Notify the employee first (POST .../notify): the employee decides whether \
                     to take action after the Further Action Notice."
                        .into(),
                ));
            }
            next.status = S::Fnc;
            next.result = Some(CaseResult::Fnc);
            next.basis = Some(Basis::NoAction);
            next.result_issued_on = Some(today);
        }
        Change::Resubmit => {
            if s != S::Resubmit {
                return wrong("resubmit");
            }
            next.status = S::Closed;
            next.closure_reason = Some(ClosureReason::IncorrectData);
            next.closed_on = Some(today);
        }
        Change::Close(reason) => {
            let allowed = closure_reasons(s, state.basis);
            if allowed.is_empty() {
                return wrong("close");
            }
            if !allowed.contains(&reason) {
                return Err(Refused::ClosureReason(format!(
                    "{} does not close a case in status {:?}. Allowed: {}.",
                    reason.as_str(),
                    s.as_str(),
                    allowed
                        .iter()
                        .map(|r| r.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            next.status = S::Closed;
            next.closure_reason = Some(reason);
            next.closed_on = Some(today);
        }
    }
    Ok(next)
}

/// Whether `text` holds something shaped like a Social Security number
/// (nine digits, alone or as ddd-dd-dddd) or an A-Number (A and 7 to 9
/// digits): E-Verify's reason texts must not ([USCIS-3DAY]).
pub fn looks_sensitive(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // A run of digits, spaces and dashes starting with a digit.
        if chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_ascii_alphanumeric()) {
            let mut digits = 0;
            let mut j = i;
            while j < chars.len()
                && (chars[j].is_ascii_digit() || chars[j] == '-' || chars[j] == ' ')
            {
                if chars[j].is_ascii_digit() {
                    digits += 1;
                }
                j += 1;
            }
            if digits == 9 {
                return true;
            }
            i = j.max(i + 1);
            continue;
        }
        if (chars[i] == 'A' || chars[i] == 'a') && (i == 0 || !chars[i - 1].is_ascii_alphanumeric())
        {
            let mut j = i + 1;
            while j < chars.len() && (chars[j] == '-' || chars[j] == ' ') {
                j += 1;
            }
            let start = j;
            while j < chars.len() && chars[j].is_ascii_digit() {
                j += 1;
            }
            let n = j - start;
            if (7..=9).contains(&n) && (j == chars.len() || !chars[j].is_ascii_alphanumeric()) {
                return true;
            }
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    /// E-Verify's day is the Eastern date: the evening in the United States
    /// is the UTC day after (docs/everify.md, "Which day (7)").
    #[test]
    fn eastern_date_of_an_instant() {
        for (instant, day) in [
            // Winter (EST, UTC-5): 00:00 Eastern is 05:00 UTC.
            ("2026-01-15T03:00:00Z", "2026-01-14"),
            ("2026-01-15T04:59:59Z", "2026-01-14"),
            ("2026-01-15T05:00:00Z", "2026-01-15"),
            ("2026-01-15T23:59:59Z", "2026-01-15"),
            // Summer (EDT, UTC-4): 00:00 Eastern is 04:00 UTC.
            ("2026-07-15T03:00:00Z", "2026-07-14"),
            ("2026-07-15T03:59:59Z", "2026-07-14"),
            ("2026-07-15T04:00:00Z", "2026-07-15"),
            // Across a year end and a month end.
            ("2027-01-01T03:00:00Z", "2026-12-31"),
            ("2026-12-01T04:30:00Z", "2026-11-30"),
            // Spring forward, Sun 2026-03-08 02:00 EST → 03:00 EDT (07:00 UTC):
            // the day starts on EST, 05:00 UTC, and the next at 04:00 UTC.
            ("2026-03-08T04:59:59Z", "2026-03-07"),
            ("2026-03-08T05:00:00Z", "2026-03-08"),
            ("2026-03-08T06:59:59Z", "2026-03-08"),
            ("2026-03-08T07:00:00Z", "2026-03-08"),
            ("2026-03-09T03:59:59Z", "2026-03-08"),
            ("2026-03-09T04:00:00Z", "2026-03-09"),
            // Fall back, Sun 2026-11-01 02:00 EDT → 01:00 EST (06:00 UTC): the
            // day starts on EDT, 04:00 UTC, and the next at 05:00 UTC.
            ("2026-11-01T03:59:59Z", "2026-10-31"),
            ("2026-11-01T04:00:00Z", "2026-11-01"),
            ("2026-11-01T05:30:00Z", "2026-11-01"), // 01:30 EDT
            ("2026-11-01T06:30:00Z", "2026-11-01"), // 01:30 EST, the hour again
            ("2026-11-02T04:59:59Z", "2026-11-01"),
            ("2026-11-02T05:00:00Z", "2026-11-02"),
        ] {
            assert_eq!(eastern_date(at(instant)), d(day), "{instant}");
        }
    }

    /// The agency's decision reads as English for one agency and for both
    /// (the HR re-trial: "SSA and DHS decides").
    #[test]
    fn a_continuance_names_who_decides() {
        for (agency, text) in [
            (
                Agency::Ssa,
                "SSA decides; after the due date, contact E-Verify",
            ),
            (
                Agency::Both,
                "SSA and DHS decide; after the due date, contact E-Verify",
            ),
        ] {
            let tnc = apply(
                &CaseState::pending(),
                answer(CaseResult::Tnc, Some(agency)),
                d("2026-11-02"),
            )
            .unwrap();
            let notified = apply(&tnc, Change::Notify, d("2026-11-03")).unwrap();
            let referred = apply(&notified, Change::Refer, d("2026-11-03")).unwrap();
            let held = apply(
                &referred,
                answer(CaseResult::Continuance, None),
                d("2026-11-04"),
            )
            .unwrap();
            assert_eq!(held.status, CaseStatus::Continuance);
            assert_eq!(held.next_step().0.as_deref(), Some(text));
        }
    }

    fn answer(result: CaseResult, agency: Option<Agency>) -> Change {
        Change::Answer {
            result,
            agency,
            basis: None,
        }
    }

    /// A mismatch on Mon 2026-11-02 is due Tue 2026-11-17 (Veterans Day
    /// skipped); a referral on Mon 2026-11-16 makes the employee's contact
    /// due Fri 2026-11-27 (Thanksgiving skipped): docs/everify.md, "Windows".
    #[test]
    fn the_windows_are_federal_working_days() {
        let tnc = apply(
            &CaseState::pending(),
            answer(CaseResult::Tnc, Some(Agency::Dhs)),
            d("2026-11-02"),
        )
        .unwrap();
        assert_eq!(tnc.status, CaseStatus::Tnc);
        let (step, due) = tnc.next_step();
        assert_eq!(
            step.as_deref(),
            Some("Notify the employee and give the Further Action Notice")
        );
        assert_eq!(due, Some(d("2026-11-17")));
        let notified = apply(&tnc, Change::Notify, d("2026-11-10")).unwrap();
        assert_eq!(notified.next_step().1, Some(d("2026-11-17")), "same window");
        let referred = apply(&notified, Change::Refer, d("2026-11-16")).unwrap();
        assert_eq!(referred.status, CaseStatus::Referred);
        assert_eq!(
            referred.next_step(),
            (
                Some("The employee contacts DHS".into()),
                Some(d("2026-11-27"))
            )
        );
        assert!(!referred.overdue(d("2026-11-27")));
        assert!(referred.overdue(d("2026-11-30")));
        let more = apply(
            &CaseState::pending(),
            answer(CaseResult::NeedsMoreTime, None),
            d("2026-11-25"),
        )
        .unwrap();
        assert_eq!(more.next_step().1, Some(d("2026-12-01")), "Thanksgiving");
    }

    #[test]
    fn employment_authorized_closes_the_case_itself() {
        let ea = apply(
            &CaseState::pending(),
            answer(CaseResult::EmploymentAuthorized, None),
            d("2026-11-02"),
        )
        .unwrap();
        assert_eq!(ea.status, CaseStatus::Closed);
        assert_eq!(ea.result, Some(CaseResult::EmploymentAuthorized));
        assert_eq!(ea.closure_reason, Some(ClosureReason::ContinuesAfterEa));
        assert_eq!(ea.next_step(), (None, None));
        assert!(matches!(
            apply(&ea, Change::Close(ClosureReason::Quit), d("2026-11-03")),
            Err(Refused::Conflict(_))
        ));
    }

    #[test]
    fn a_step_that_does_not_fit_the_status_is_a_conflict() {
        let today = d("2026-11-02");
        let pending = CaseState::pending();
        for change in [
            Change::Refer,
            Change::Notify,
            Change::NoAction,
            Change::ConfirmDetails,
            Change::ContinueDuplicate,
            Change::Resubmit,
            Change::Close(ClosureReason::Quit),
        ] {
            assert!(
                matches!(apply(&pending, change, today), Err(Refused::Conflict(_))),
                "{change:?}"
            );
        }
        let tnc = apply(&pending, answer(CaseResult::Tnc, Some(Agency::Ssa)), today).unwrap();
        // Refer needs the notice first.
        assert!(matches!(
            apply(&tnc, Change::Refer, today),
            Err(Refused::Conflict(_))
        ));
        // So does no-action.
        assert!(matches!(
            apply(&tnc, Change::NoAction, today),
            Err(Refused::Conflict(_))
        ));
        let notified = apply(&tnc, Change::Notify, today).unwrap();
        let fnc = apply(&notified, Change::NoAction, today).unwrap();
        assert_eq!(
            (fnc.status, fnc.basis),
            (CaseStatus::Fnc, Some(Basis::NoAction))
        );
        // The closure reason must fit the basis.
        assert!(matches!(
            apply(&fnc, Change::Close(ClosureReason::ContinuesAfterFnc), today),
            Err(Refused::ClosureReason(_))
        ));
        let closed = apply(
            &fnc,
            Change::Close(ClosureReason::TerminatedForNoAction),
            today,
        )
        .unwrap();
        assert_eq!(closed.status, CaseStatus::Closed);
        assert_eq!(closed.result, Some(CaseResult::Fnc), "kept when closed");
    }

    /// E-Verify asks to close a Final Nonconfirmation "immediately": its
    /// "Close the case" is due on the day the result arrived, overdue from
    /// the next day (docs/everify.md, "Deadlines passed"), whether the agency
    /// decided or the employee took no action.
    #[test]
    fn an_open_final_nonconfirmation_is_due_the_day_it_arrived() {
        let fnc = apply(
            &CaseState::pending(),
            Change::Answer {
                result: CaseResult::Fnc,
                agency: Some(Agency::Ssa),
                basis: None,
            },
            d("2026-11-02"),
        )
        .unwrap();
        assert_eq!(
            fnc.next_step(),
            (Some("Close the case".into()), Some(d("2026-11-02")))
        );
        assert!(!fnc.overdue(d("2026-11-02")));
        assert!(fnc.overdue(d("2026-11-03")));
        let tnc = apply(
            &CaseState::pending(),
            answer(CaseResult::Tnc, Some(Agency::Dhs)),
            d("2026-11-02"),
        )
        .unwrap();
        let notified = apply(&tnc, Change::Notify, d("2026-11-03")).unwrap();
        let no_action = apply(&notified, Change::NoAction, d("2026-11-04")).unwrap();
        assert_eq!(no_action.next_step().1, Some(d("2026-11-04")));
        assert!(no_action.overdue(d("2026-11-05")));
        let closed = apply(
            &no_action,
            Change::Close(ClosureReason::TerminatedForNoAction),
            d("2026-11-09"),
        )
        .unwrap();
        assert!(!closed.overdue(d("2026-11-10")), "closed: nothing is due");
    }

    /// `employedAtClosure` is needed only where the closure decides the
    /// employment and the code does not say it: a Final Nonconfirmation
    /// closed with `OTHER`.
    #[test]
    fn only_a_final_nonconfirmation_closed_without_saying_needs_the_employment() {
        for reason in closure_reasons(CaseStatus::Fnc, Some(Basis::Agency)) {
            assert_eq!(
                reason.needs_employment(CaseStatus::Fnc),
                reason == ClosureReason::Other,
                "{reason:?}"
            );
        }
        for status in [
            CaseStatus::CaseIncomplete,
            CaseStatus::DuplicateCase,
            CaseStatus::Tnc,
            CaseStatus::Resubmit,
            CaseStatus::Referred,
        ] {
            for reason in closure_reasons(status, None) {
                assert!(!reason.needs_employment(status), "{status:?} {reason:?}");
            }
        }
    }

    #[test]
    fn while_the_agency_has_the_case_only_an_ended_employment_closes_it() {
        let today = d("2026-11-02");
        let mut referred = CaseState::pending();
        referred.status = CaseStatus::Referred;
        assert!(matches!(
            apply(
                &referred,
                Change::Close(ClosureReason::IncorrectData),
                today
            ),
            Err(Refused::ClosureReason(_))
        ));
        assert!(apply(&referred, Change::Close(ClosureReason::Quit), today).is_ok());
    }

    #[test]
    fn ssn_and_a_number_shapes_are_sensitive() {
        for s in [
            "123456789",
            "ssn 123-45-6789 pending",
            "A123456789",
            "a-12345678",
            "number 123 45 6789",
        ] {
            assert!(looks_sensitive(s), "{s}");
        }
        for s in [
            "Waiting for the card",
            "since 2026-11-02",
            "Apartment 12",
            "1234567890",
            "AB1234567",
        ] {
            assert!(!looks_sensitive(s), "{s}");
        }
    }
}
