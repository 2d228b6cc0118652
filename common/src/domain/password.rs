//! The rule for a password a person chooses (the set-password page): long
//! enough, not too long to hash, and not guessable. "Not guessable" is
//! zxcvbn's estimate, which knows common passwords, names, words, dates,
//! repeats (`aaaa`, twelve spaces), sequences and keyboard patterns, and the
//! person's own login and names: no composition rules (docs/api.md, "Web
//! pages for employees").

use zxcvbn::{zxcvbn, Score};

/// At least this many characters.
pub const MIN_CHARS: usize = 12;
/// At most this many (argon2 takes any length; this bounds the work).
pub const MAX_CHARS: usize = 256;
/// zxcvbn's score a password needs: 3, "safely unguessable: moderate
/// protection from an offline slow-hash scenario" (ours is argon2id).
const MIN_SCORE: Score = Score::Three;

/// Why a password is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Weakness {
    TooShort,
    TooLong,
    /// Guessable; zxcvbn's advice, when it has some.
    Guessable(Option<String>),
}

/// What the set-password page, and `i9-admin seed` outside development, say
/// of a refused password (never the password itself).
impl std::fmt::Display for Weakness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Weakness::TooShort => write!(f, "The password needs at least {MIN_CHARS} characters."),
            Weakness::TooLong => write!(f, "The password may have at most {MAX_CHARS} characters."),
            Weakness::Guessable(advice) => {
                f.write_str(
                    "This password is too easy to guess. A few unrelated words make a strong one.",
                )?;
                match advice {
                    Some(advice) => write!(f, " {advice}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// Check `password`; `personal` are the person's login, names and email,
/// which a password must not lean on.
pub fn check(password: &str, personal: &[&str]) -> Result<(), Weakness> {
    let chars = password.chars().count();
    if chars < MIN_CHARS {
        return Err(Weakness::TooShort);
    }
    if chars > MAX_CHARS {
        return Err(Weakness::TooLong);
    }
    let estimate = zxcvbn(password, personal);
    if estimate.score() >= MIN_SCORE {
        return Ok(());
    }
    let advice = estimate.feedback().and_then(|f| {
        f.warning()
            .map(|w| w.to_string())
            .or_else(|| f.suggestions().first().map(|s| s.to_string()))
    });
    Err(Weakness::Guessable(advice))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_unguessable_passwords_pass() {
        for p in [
            "a-long-new-passw0rd",
            "a long pass phrase",
            "correct horse battery staple",
            "Tb7#qLm2!vXe",
        ] {
            assert_eq!(check(p, &["west.hr"]), Ok(()), "{p}");
        }
    }

    #[test]
    fn short_long_and_guessable_passwords_are_refused() {
        assert_eq!(check("short", &[]), Err(Weakness::TooShort));
        assert_eq!(check(&"x".repeat(257), &[]), Err(Weakness::TooLong));
        for p in [
            "            ",
            "aaaaaaaaaaaa",
            "password1234",
            "qwertyuiopas",
            "123456789012",
        ] {
            assert!(
                matches!(check(p, &[]), Err(Weakness::Guessable(_))),
                "{p:?}"
            );
        }
        // The person's own login is no secret.
        let login = "ana.diaz@mail.example";
        assert_eq!(check(login, &[]), Ok(()), "long enough on its own");
        assert!(matches!(
            check(login, &[login, "Ana", "Diaz"]),
            Err(Weakness::Guessable(_))
        ));
    }
}
