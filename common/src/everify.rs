//! The adapter between the service's E-Verify workflow and the program that
//! answers the cases (docs/everify.md, "The adapter"), and the built-in
//! simulator ("The simulator"). The workflow (statuses, windows, events,
//! audit) is the service's, in `domain::everify` and `models::everify_case`,
//! and the same whatever answers: every call runs in the worker
//! (`submit_everify_case`, and the poll round of `workers/src/everify.rs`).
//!
//! Only the simulator exists: a real connection needs E-Verify's web-services
//! enrollment and its ICA (docs/everify.md, "What a real connection needs").

use std::{sync::Arc, time::Duration};

use chrono::NaiveDate;
use sqlx::PgPool;

use crate::domain::{
    calendar::federal_working_days_after,
    everify::{
        Agency, Basis, CaseResult, CaseStatus, ClosureReason, DuplicateReason, ProgramName,
        REFERRAL_CONTACT_DAYS,
    },
};

/// The E-Verify account a call is made for: the legal entity's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub legal_entity_id: i64,
    pub everify_id: Option<String>,
}

/// What the program is sent to open a case. Only what the simulator reads
/// is carried here yet: the real adapter will take the I-9's data
/// (docs/everify.md, "What a case takes from the I-9").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseInput {
    pub case_id: i64,
    /// Section 1's last name.
    pub last_name: String,
    /// The case this one replaces (Close Case and Resubmit).
    pub resubmit_of: Option<i64>,
    /// Failed calls so far, the program being unavailable.
    pub unavailable_attempts: i32,
}

/// A closure as the program is told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closure {
    pub reason: ClosureReason,
    pub employed: Option<bool>,
}

/// A case's change by the program: its answer to a call, or a decision it
/// took on its own (DHS, SSA), applied only while the case is still in
/// `from` (so a second copy of an update changes nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramUpdate {
    pub case_id: i64,
    pub case_number: String,
    pub from: CaseStatus,
    pub result: CaseResult,
    pub agency: Option<Agency>,
    pub basis: Option<Basis>,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    /// The program is down: the case stays as it is and the call is retried.
    #[error("the verification program is unavailable: {0}")]
    Unavailable(String),
    /// The program refused the data (the case becomes Case Incomplete).
    #[error("the verification program refused the case: {0}")]
    Refused(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// The program: E-Verify, or the simulator. Each call answers the change it
/// makes at once, if any (`None`: the program's decision comes later, through
/// [`VerificationProgram::updates`]).
#[async_trait::async_trait]
pub trait VerificationProgram: Send + Sync + std::fmt::Debug {
    fn name(&self) -> ProgramName;
    async fn submit(&self, acct: &Account, case: &CaseInput)
        -> Result<ProgramUpdate, ProgramError>;
    async fn confirm_details(
        &self,
        acct: &Account,
        case: &CaseInput,
        case_number: &str,
    ) -> Result<Option<ProgramUpdate>, ProgramError>;
    async fn continue_duplicate(
        &self,
        acct: &Account,
        case: &CaseInput,
        case_number: &str,
        reason: DuplicateReason,
    ) -> Result<Option<ProgramUpdate>, ProgramError>;
    async fn refer(
        &self,
        acct: &Account,
        case_number: &str,
    ) -> Result<Option<ProgramUpdate>, ProgramError>;
    async fn no_action(
        &self,
        acct: &Account,
        case_number: &str,
    ) -> Result<Option<ProgramUpdate>, ProgramError>;
    async fn close(
        &self,
        acct: &Account,
        case_number: &str,
        closure: &Closure,
    ) -> Result<Option<ProgramUpdate>, ProgramError>;
    /// The changes the program made on its own, to be applied and then
    /// confirmed ([`VerificationProgram::confirm_updates`]).
    async fn updates(
        &self,
        acct: &Account,
        today: NaiveDate,
    ) -> Result<Vec<ProgramUpdate>, ProgramError>;
    async fn confirm_updates(
        &self,
        acct: &Account,
        case_numbers: &[String],
    ) -> Result<(), ProgramError>;
}

/// The program `EVERIFY_ADAPTER` names (only the simulator exists).
pub fn program(
    adapter: ProgramName,
    settings: SimulatorSettings,
    pool: PgPool,
) -> Arc<dyn VerificationProgram> {
    match adapter {
        ProgramName::Simulator | ProgramName::EVerify => Arc::new(Simulator { settings, pool }),
    }
}

/// The simulator's settings (`EVERIFY_SIM_STEP_SECS`, `EVERIFY_SIM_UNAVAILABLE_RETRIES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimulatorSettings {
    /// How long each of the program's own later decisions takes.
    pub step: Duration,
    /// Failed calls before an `UNAVAILABLE` case is answered.
    pub unavailable_retries: i32,
}

/// The built-in simulator (docs/everify.md, "The simulator"): deterministic,
/// driven by Section 1's last name, and stateless: its later decisions are
/// worked out from the case row (its status, its last change, its referral
/// day) whenever [`VerificationProgram::updates`] is asked.
#[derive(Debug, Clone)]
pub struct Simulator {
    pub settings: SimulatorSettings,
    pool: PgPool,
}

/// The scenarios of the simulator, by last name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Authorized,
    MoreTime,
    MoreTimeTnc,
    TncSsa,
    TncDhs,
    TncDual,
    TncSsaFnc,
    TncDhsFnc,
    TncNoShow,
    TncContinuance,
    Resubmit,
    Incomplete,
    Duplicate,
    Unavailable,
}

impl Scenario {
    /// The scenario of `last_name` (ignoring letter case and the spaces around it).
    pub fn of(last_name: &str) -> Self {
        match last_name.trim().to_ascii_uppercase().as_str() {
            "EV-MORETIME" => Self::MoreTime,
            "EV-MORETIME-TNC" => Self::MoreTimeTnc,
            "TNC-SSA" => Self::TncSsa,
            "TNC-DHS" => Self::TncDhs,
            "TNC-DUAL" => Self::TncDual,
            "TNC-SSA-FNC" => Self::TncSsaFnc,
            "TNC-DHS-FNC" => Self::TncDhsFnc,
            "TNC-NOSHOW" => Self::TncNoShow,
            "TNC-CONTINUANCE" => Self::TncContinuance,
            "RESUBMIT" => Self::Resubmit,
            "INCOMPLETE" => Self::Incomplete,
            "DUPLICATE" => Self::Duplicate,
            "UNAVAILABLE" => Self::Unavailable,
            _ => Self::Authorized,
        }
    }

    /// The first answer.
    fn initial(self) -> (CaseResult, Option<Agency>) {
        use CaseResult as R;
        match self {
            Self::Authorized | Self::Unavailable => (R::EmploymentAuthorized, None),
            Self::MoreTime | Self::MoreTimeTnc => (R::NeedsMoreTime, None),
            Self::TncSsa | Self::TncSsaFnc => (R::Tnc, Some(Agency::Ssa)),
            Self::TncDual => (R::Tnc, Some(Agency::Both)),
            Self::TncDhs | Self::TncDhsFnc | Self::TncNoShow | Self::TncContinuance => {
                (R::Tnc, Some(Agency::Dhs))
            }
            Self::Resubmit => (R::Resubmit, None),
            Self::Incomplete => (R::CaseIncomplete, None),
            Self::Duplicate => (R::DuplicateCase, None),
        }
    }

    /// The program's own decision on a case in `status`, once a step of time
    /// has passed (`None`: it waits for the employer, or stays).
    /// `contact_due_passed`: the employee's days to contact the agency are over.
    pub fn later(
        self,
        status: CaseStatus,
        contact_due_passed: bool,
    ) -> Option<(CaseResult, Option<Agency>, Option<Basis>)> {
        use CaseResult as R;
        let ea = Some((R::EmploymentAuthorized, None, None));
        match (status, self) {
            (CaseStatus::NeedsMoreTime, Self::MoreTimeTnc) => {
                Some((R::Tnc, Some(Agency::Dhs), None))
            }
            (CaseStatus::NeedsMoreTime, _) => ea,
            (
                CaseStatus::Referred,
                Self::TncSsa | Self::TncDual | Self::TncDhsFnc | Self::TncContinuance,
            ) => Some((R::Continuance, None, None)),
            (CaseStatus::Referred, Self::TncSsaFnc) => Some((R::Fnc, None, Some(Basis::Agency))),
            (CaseStatus::Referred, Self::TncNoShow) => {
                contact_due_passed.then_some((R::Fnc, None, Some(Basis::NoShow)))
            }
            (CaseStatus::Referred, _) => ea,
            (CaseStatus::Continuance, Self::TncContinuance) => None,
            (CaseStatus::Continuance, Self::TncDhsFnc) => Some((R::Fnc, None, Some(Basis::Agency))),
            (CaseStatus::Continuance, _) => ea,
            _ => None,
        }
    }
}

/// The simulator's case number: `SIM` and the case id to 12 digits.
pub fn simulated_case_number(case_id: i64) -> String {
    format!("SIM{case_id:012}")
}

impl Simulator {
    fn update(
        case_id: i64,
        from: CaseStatus,
        (result, agency): (CaseResult, Option<Agency>),
    ) -> ProgramUpdate {
        ProgramUpdate {
            case_id,
            case_number: simulated_case_number(case_id),
            from,
            result,
            agency,
            basis: None,
        }
    }
}

#[derive(sqlx::FromRow)]
struct Waiting {
    id: i64,
    status: CaseStatus,
    last_name: String,
    referred_on: Option<NaiveDate>,
}

#[async_trait::async_trait]
impl VerificationProgram for Simulator {
    fn name(&self) -> ProgramName {
        ProgramName::Simulator
    }

    async fn submit(
        &self,
        _acct: &Account,
        case: &CaseInput,
    ) -> Result<ProgramUpdate, ProgramError> {
        let scenario = Scenario::of(&case.last_name);
        if case.resubmit_of.is_some() {
            // The resubmitted case is the corrected one.
            return Ok(Self::update(
                case.case_id,
                CaseStatus::Pending,
                (CaseResult::EmploymentAuthorized, None),
            ));
        }
        if scenario == Scenario::Unavailable
            && case.unavailable_attempts < self.settings.unavailable_retries
        {
            return Err(ProgramError::Unavailable(format!(
                "simulated outage (attempt {} of {})",
                case.unavailable_attempts + 1,
                self.settings.unavailable_retries
            )));
        }
        Ok(Self::update(
            case.case_id,
            CaseStatus::Pending,
            scenario.initial(),
        ))
    }

    async fn confirm_details(
        &self,
        _acct: &Account,
        case: &CaseInput,
        _case_number: &str,
    ) -> Result<Option<ProgramUpdate>, ProgramError> {
        Ok(Some(Self::update(
            case.case_id,
            CaseStatus::Pending,
            (CaseResult::EmploymentAuthorized, None),
        )))
    }

    async fn continue_duplicate(
        &self,
        _acct: &Account,
        case: &CaseInput,
        _case_number: &str,
        _reason: DuplicateReason,
    ) -> Result<Option<ProgramUpdate>, ProgramError> {
        // The employer said why the case goes on: the duplicate scenario is
        // then verified; any other name takes its own scenario.
        let answer = match Scenario::of(&case.last_name) {
            Scenario::Duplicate => (CaseResult::EmploymentAuthorized, None),
            scenario => scenario.initial(),
        };
        Ok(Some(Self::update(
            case.case_id,
            CaseStatus::Pending,
            answer,
        )))
    }

    async fn refer(
        &self,
        _acct: &Account,
        _case_number: &str,
    ) -> Result<Option<ProgramUpdate>, ProgramError> {
        Ok(None)
    }

    async fn no_action(
        &self,
        _acct: &Account,
        _case_number: &str,
    ) -> Result<Option<ProgramUpdate>, ProgramError> {
        Ok(None)
    }

    async fn close(
        &self,
        _acct: &Account,
        _case_number: &str,
        _closure: &Closure,
    ) -> Result<Option<ProgramUpdate>, ProgramError> {
        Ok(None)
    }

    async fn updates(
        &self,
        acct: &Account,
        today: NaiveDate,
    ) -> Result<Vec<ProgramUpdate>, ProgramError> {
        let waiting: Vec<Waiting> = sqlx::query_as(
            "SELECT c.id, c.status, i.last_name, c.referred_on
             FROM everify_cases c JOIN i9s i ON i.id = c.i9_id
             WHERE c.program = 'simulator' AND c.legal_entity_id = $1
               AND c.status IN ('E-Verify Needs More Time', 'Referred', 'Case in Continuance')
               AND c.updated_at <= now() - make_interval(secs => $2)
             ORDER BY c.id",
        )
        .bind(acct.legal_entity_id)
        .bind(self.settings.step.as_secs_f64())
        .fetch_all(&self.pool)
        .await?;
        Ok(waiting
            .into_iter()
            .filter_map(|w| {
                let passed = w
                    .referred_on
                    .is_some_and(|r| federal_working_days_after(r, REFERRAL_CONTACT_DAYS) < today);
                let (result, agency, basis) = Scenario::of(&w.last_name).later(w.status, passed)?;
                Some(ProgramUpdate {
                    basis,
                    ..Self::update(w.id, w.status, (result, agency))
                })
            })
            .collect())
    }

    async fn confirm_updates(
        &self,
        _acct: &Account,
        _case_numbers: &[String],
    ) -> Result<(), ProgramError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_name_chooses_the_scenario() {
        assert_eq!(Scenario::of(" tnc-dhs "), Scenario::TncDhs);
        assert_eq!(Scenario::of("Diaz"), Scenario::Authorized);
        assert_eq!(Scenario::of("Duplicate"), Scenario::Duplicate);
        assert_eq!(
            Scenario::Duplicate.initial(),
            (CaseResult::DuplicateCase, None)
        );
        assert_eq!(simulated_case_number(88), "SIM000000000088");
        assert_eq!(simulated_case_number(88).len(), 15);
        assert_eq!(
            Scenario::TncDhsFnc.later(CaseStatus::Referred, false),
            Some((CaseResult::Continuance, None, None))
        );
        assert_eq!(Scenario::TncNoShow.later(CaseStatus::Referred, false), None);
        assert_eq!(
            Scenario::TncNoShow.later(CaseStatus::Referred, true),
            Some((CaseResult::Fnc, None, Some(Basis::NoShow)))
        );
        assert_eq!(
            Scenario::TncContinuance.later(CaseStatus::Continuance, true),
            None
        );
    }
}
