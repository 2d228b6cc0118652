//! Jobs: the message that travels through the outbox and RabbitMQ, in one
//! shared place. Tagged by kind and versioned, so a worker of another release
//! can tell what it reads. Each kind has its own queue.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    CreateI9,
    SendLoginEmail,
    SendRemoteHireEmail,
    PostStatusCallback,
    SendReminderEmail,
    SendRevocationEmail,
    SubmitEverifyCase,
}

impl JobKind {
    pub const ALL: [JobKind; 7] = [
        Self::CreateI9,
        Self::SendLoginEmail,
        Self::SendRemoteHireEmail,
        Self::PostStatusCallback,
        Self::SendReminderEmail,
        Self::SendRevocationEmail,
        Self::SubmitEverifyCase,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::CreateI9 => "create_i9",
            Self::SendLoginEmail => "send_login_email",
            Self::SendRemoteHireEmail => "send_remote_hire_email",
            Self::PostStatusCallback => "post_status_callback",
            Self::SendReminderEmail => "send_reminder_email",
            Self::SendRevocationEmail => "send_revocation_email",
            Self::SubmitEverifyCase => "submit_everify_case",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// What a job asks for. Payloads carry ids only: never personal data,
/// tokens or secrets (the outbox is a table like any other).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Job {
    /// Create the I-9 an API write requested (`i9_requests`).
    CreateI9 { request_id: Uuid },
    /// Email an employee's new sign-in a one-time link to set a password.
    SendLoginEmail { user_id: i64 },
    /// Email a remote hire the Section 1 link of its I-9.
    SendRemoteHireEmail { request_id: Uuid },
    /// Post one status event to the partner (issue 4).
    PostStatusCallback { event_id: Uuid },
    /// Email one of the employer's notification addresses (`recipient` 1 or
    /// 2: `notificationEmail1`, `notificationEmail2`) an expiring-document
    /// reminder (`reminders`; docs/reminders.md).
    SendReminderEmail { reminder_id: i64, recipient: u8 },
    /// Email one of the employer's notification addresses (`recipient` 1 or
    /// 2) that E-Verify's Status Change Report named the EAD of an I-9 as
    /// revoked and reverification is due (`i9_reverification_requests`;
    /// docs/everify.md, "The Status Change Report (2025)").
    SendRevocationEmail { request_id: i64, recipient: u8 },
    /// Make a call of an E-Verify case to the program (docs/everify.md, "The
    /// adapter"): open it, or tell it of an employer's step.
    SubmitEverifyCase { case_id: i64, call: EverifyCall },
}

/// The call a `submit_everify_case` job makes (codes only, never case data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum EverifyCall {
    Submit,
    ConfirmDetails,
    ContinueDuplicate {
        reason: crate::domain::everify::DuplicateReason,
    },
    Refer,
    NoAction,
    Close {
        reason: crate::domain::everify::ClosureReason,
    },
}

impl Job {
    pub fn kind(&self) -> JobKind {
        match self {
            Job::CreateI9 { .. } => JobKind::CreateI9,
            Job::SendLoginEmail { .. } => JobKind::SendLoginEmail,
            Job::SendRemoteHireEmail { .. } => JobKind::SendRemoteHireEmail,
            Job::PostStatusCallback { .. } => JobKind::PostStatusCallback,
            Job::SendReminderEmail { .. } => JobKind::SendReminderEmail,
            Job::SendRevocationEmail { .. } => JobKind::SendRevocationEmail,
            Job::SubmitEverifyCase { .. } => JobKind::SubmitEverifyCase,
        }
    }
}

pub const ENVELOPE_VERSION: u16 = 1;

/// The message body on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub version: u16,
    /// Unique per job: the idempotency key of its handler.
    pub job_id: Uuid,
    #[serde(flatten)]
    pub job: Job,
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("unsupported envelope version {0}")]
    Version(u16),
    #[error("malformed job message: {0}")]
    Malformed(#[from] serde_json::Error),
}

impl Envelope {
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let env: Envelope = serde_json::from_slice(bytes)?;
        if env.version != ENVELOPE_VERSION {
            return Err(DecodeError::Version(env.version));
        }
        Ok(env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in JobKind::ALL {
            assert_eq!(JobKind::parse(k.name()), Some(k));
        }
    }

    #[test]
    fn envelopes_are_tagged_and_versioned() {
        let env = Envelope {
            version: ENVELOPE_VERSION,
            job_id: Uuid::nil(),
            job: Job::SendLoginEmail { user_id: 7 },
        };
        let json = serde_json::to_value(&env).unwrap();
        assert_eq!(json["kind"], "send_login_email");
        assert_eq!(json["version"], 1);
        assert_eq!(Envelope::decode(json.to_string().as_bytes()).unwrap(), env);
        let future = json.to_string().replace("\"version\":1", "\"version\":2");
        assert!(matches!(
            Envelope::decode(future.as_bytes()),
            Err(DecodeError::Version(2))
        ));
        assert!(Envelope::decode(b"{\"kind\":\"nope\"}").is_err());
    }
}
