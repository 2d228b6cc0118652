//! Job kinds, each with its own queue. Workers can be limited to some kinds.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    CreateI9,
    SendLoginEmail,
    SendRemoteHireEmail,
    PostStatusCallback,
}

impl JobKind {
    pub const ALL: [JobKind; 4] = [
        Self::CreateI9,
        Self::SendLoginEmail,
        Self::SendRemoteHireEmail,
        Self::PostStatusCallback,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::CreateI9 => "create_i9",
            Self::SendLoginEmail => "send_login_email",
            Self::SendRemoteHireEmail => "send_remote_hire_email",
            Self::PostStatusCallback => "post_status_callback",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
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
}
