//! Permissions of a role (docs/api.md, "Permissions and visibility") and OAuth scopes (section 2).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
pub enum Permission {
    ViewEmployees = 1,
    EditEmployees = 2,
    ViewI9s = 3,
    WorkOnI9s = 4,
    ApproveI9s = 5,
    ViewLegalEntities = 6,
    ViewGroups = 7,
    ViewUsers = 8,
    ViewRoles = 9,
    PartnerOperation = 10,
    AllGroups = 11,
    FullSsn = 12,
}

impl Permission {
    pub const ALL: [Permission; 12] = [
        Self::ViewEmployees,
        Self::EditEmployees,
        Self::ViewI9s,
        Self::WorkOnI9s,
        Self::ApproveI9s,
        Self::ViewLegalEntities,
        Self::ViewGroups,
        Self::ViewUsers,
        Self::ViewRoles,
        Self::PartnerOperation,
        Self::AllGroups,
        Self::FullSsn,
    ];

    pub fn id(self) -> i16 {
        self as i16
    }

    pub fn from_id(id: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|p| i64::from(p.id()) == id)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Read,
    Write,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
        }
    }
}

/// A set of scopes. Written `read`, `write` or `read+write`; parsed from
/// those or from the space-separated form of RFC 6749 (`read write`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes {
    pub read: bool,
    pub write: bool,
}

impl Scopes {
    pub fn parse(input: &str) -> Option<Self> {
        let mut s = Scopes::default();
        let mut any = false;
        for part in input.split([' ', '+']).filter(|p| !p.is_empty()) {
            any = true;
            match part {
                "read" => s.read = true,
                "write" => s.write = true,
                _ => return None,
            }
        }
        any.then_some(s)
    }

    pub fn from_list<S: AsRef<str>>(list: &[S]) -> Option<Self> {
        Self::parse(&list.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(" "))
    }

    pub fn to_list(self) -> Vec<String> {
        let mut v = Vec::new();
        if self.read {
            v.push("read".to_owned());
        }
        if self.write {
            v.push("write".to_owned());
        }
        v
    }

    pub fn contains(self, scope: Scope) -> bool {
        match scope {
            Scope::Read => self.read,
            Scope::Write => self.write,
        }
    }

    pub fn is_subset_of(self, other: Scopes) -> bool {
        (!self.read || other.read) && (!self.write || other.write)
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match (self.read, self.write) {
            (true, true) => "read+write",
            (true, false) => "read",
            (false, true) => "write",
            (false, false) => "",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_every_spelling() {
        let both = Scopes {
            read: true,
            write: true,
        };
        assert_eq!(Scopes::parse("read+write"), Some(both));
        assert_eq!(Scopes::parse("read write"), Some(both));
        assert_eq!(
            Scopes::parse("write"),
            Some(Scopes {
                read: false,
                write: true
            })
        );
        assert_eq!(Scopes::parse("admin"), None);
        assert_eq!(Scopes::parse(""), None);
        assert_eq!(both.to_string(), "read+write");
    }

    #[test]
    fn permission_ids_round_trip() {
        for p in Permission::ALL {
            assert_eq!(Permission::from_id(p.id().into()), Some(p));
        }
        assert_eq!(Permission::from_id(13), None);
    }
}
