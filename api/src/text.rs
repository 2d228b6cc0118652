//! The one rule for text a client sends us: valid UTF-8 without the NUL
//! character, which a Postgres `text` value cannot hold. Query strings and
//! form bodies are decoded here, strictly: a name or value that is not UTF-8
//! once percent-decoded is refused, not silently replaced by U+FFFD (JSON
//! bodies are checked in [`crate::body`], path segments by their extractors).
//! Whoever calls these turns an [`Unreadable`] into their own error: a 400
//! naming the parameter, an OAuth `invalid_request`, a page's "the form could
//! not be read" ([`crate::page_form`]; a page names a field holding NUL itself).

use std::borrow::Cow;

use percent_encoding::percent_decode;

use crate::error::FieldError;

/// Why a name or value was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Not UTF-8 once percent-decoded.
    NotUtf8,
    /// Holds U+0000.
    Nul,
}

/// A parameter whose name or value cannot be read as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The name as the client wrote it, decoded leniently (NUL shown as U+FFFD).
    pub field: String,
    pub reason: Reason,
}

impl Unreadable {
    pub fn field_error(&self) -> FieldError {
        match self.reason {
            Reason::NotUtf8 => {
                FieldError::new(&self.field, "invalid_encoding", "Must be UTF-8 text.")
            }
            Reason::Nul => FieldError::new(
                &self.field,
                "invalid_character",
                "Must not contain the NUL character.",
            ),
        }
    }

    /// The name when it is a plain parameter name (ASCII letters, digits,
    /// `_`), safe to repeat in an error description; else `None`.
    pub fn plain_name(&self) -> Option<&str> {
        let plain = !self.field.is_empty()
            && self.field.len() <= 64
            && self
                .field
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        plain.then_some(self.field.as_str())
    }
}

/// Whether `s` can be stored as Postgres text; the reason if not.
pub fn check(s: &str) -> Result<(), Reason> {
    if s.contains('\0') {
        Err(Reason::Nul)
    } else {
        Ok(())
    }
}

/// `application/x-www-form-urlencoded` (a query string or a form body) as
/// name/value pairs, in order, repeats kept; or every unreadable pair, named.
pub fn form_pairs(input: &[u8]) -> Result<Vec<(String, String)>, Vec<Unreadable>> {
    match decode_form(input) {
        (pairs, bad) if bad.is_empty() => Ok(pairs),
        (_, bad) => Err(bad),
    }
}

/// The readable pairs and the unreadable ones.
pub fn decode_form(input: &[u8]) -> (Vec<(String, String)>, Vec<Unreadable>) {
    let mut pairs = Vec::new();
    let mut bad = Vec::new();
    for part in input.split(|b| *b == b'&').filter(|p| !p.is_empty()) {
        let (name, value) = match part.iter().position(|b| *b == b'=') {
            Some(i) => (&part[..i], &part[i + 1..]),
            None => (part, &b""[..]),
        };
        let name = decode(name);
        let value = decode(value);
        let problem = match (&name, &value) {
            (Err(_), _) | (_, Err(_)) => Some(Reason::NotUtf8),
            (Ok(n), Ok(v)) => check(n).and_then(|()| check(v)).err(),
        };
        match (problem, name, value) {
            (None, Ok(n), Ok(v)) => pairs.push((n, v)),
            (reason, name, _) => bad.push(Unreadable {
                field: match name {
                    Ok(n) => n.replace('\0', "\u{FFFD}"),
                    Err(raw) => String::from_utf8_lossy(&raw).replace('\0', "\u{FFFD}"),
                },
                reason: reason.unwrap_or(Reason::NotUtf8),
            }),
        }
    }
    (pairs, bad)
}

/// `+` is a space, `%XX` a byte; a `%` not followed by two hex digits stays as it is.
fn decode(raw: &[u8]) -> Result<String, Vec<u8>> {
    let plus: Cow<'_, [u8]> = if raw.contains(&b'+') {
        Cow::Owned(
            raw.iter()
                .map(|b| if *b == b'+' { b' ' } else { *b })
                .collect(),
        )
    } else {
        Cow::Borrowed(raw)
    };
    let bytes: Vec<u8> = percent_decode(&plus).collect();
    String::from_utf8(bytes).map_err(|e| e.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Vec<(String, String)> {
        form_pairs(s.as_bytes()).unwrap()
    }

    #[test]
    fn decodes_like_a_browser_sends() {
        assert_eq!(
            ok("lastName=O%27Neil+Smith&x=&y&&=v&caf%C3%A9=%E2%9C%93"),
            [
                ("lastName".into(), "O'Neil Smith".into()),
                ("x".into(), String::new()),
                ("y".into(), String::new()),
                (String::new(), "v".into()),
                ("café".into(), "✓".into()),
            ]
        );
        // Broken escapes stay literal, as in every form decoder.
        assert_eq!(
            ok("a=%zz%&b=%4"),
            [("a".into(), "%zz%".into()), ("b".into(), "%4".into())]
        );
        // Repeats are kept for the caller to refuse.
        assert_eq!(ok("a=1&a=2").len(), 2);
    }

    #[test]
    fn names_every_unreadable_parameter() {
        let bad = form_pairs(b"lastName=%00&ok=1&city=%FF&%C3%28=x&n%00=1&raw=\xff").unwrap_err();
        let got: Vec<(&str, Reason)> = bad.iter().map(|u| (u.field.as_str(), u.reason)).collect();
        assert_eq!(
            got,
            [
                ("lastName", Reason::Nul),
                ("city", Reason::NotUtf8),
                ("\u{FFFD}(", Reason::NotUtf8),
                ("n\u{FFFD}", Reason::Nul),
                ("raw", Reason::NotUtf8),
            ]
        );
        assert_eq!(bad[0].field_error().code, "invalid_character");
        assert_eq!(bad[1].field_error().code, "invalid_encoding");
        assert_eq!(bad[0].plain_name(), Some("lastName"));
        assert_eq!(bad[2].plain_name(), None);
        // A UTF-8 encoded surrogate half is not UTF-8.
        assert!(form_pairs(b"a=%ED%A0%80").is_err());
    }

    #[test]
    fn storable_text_has_no_nul() {
        assert_eq!(check("Zoë 👩‍👩‍👧 \u{202E}abc\u{7f}"), Ok(()));
        assert_eq!(check("a\0b"), Err(Reason::Nul));
    }
}
