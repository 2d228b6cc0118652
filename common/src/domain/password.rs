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
        return without_personal(password, personal);
    }
    let advice = estimate.feedback().and_then(|f| {
        f.warning()
            .map(|w| w.to_string())
            .or_else(|| f.suggestions().first().map(|s| s.to_string()))
    });
    Err(Weakness::Guessable(advice))
}

/// What a password must still be once the person's own words, and the
/// common Spanish ones zxcvbn's English lists lack, are taken out of it:
/// zxcvbn credits `liamlogin12345` or `contraseña123` for their length
/// although they are the person's name and login, or "password", and a
/// sequence. The person's words are the parts of the names, login and email
/// split at anything that is not a letter or digit, of three characters or
/// more; they are found in any case and in look-alike digits (`L1amL0g1n`).
/// What remains must have [`MIN_REST`] characters and pass the same
/// estimate.
fn without_personal(password: &str, personal: &[&str]) -> Result<(), Weakness> {
    let mut words: Vec<String> = personal
        .iter()
        .flat_map(|p| p.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .chain(COMMON_SPANISH.iter().map(|w| (*w).to_owned()))
        .collect();
    words.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
    let plain = unleet(&password.to_lowercase());
    let mut rest = plain.clone();
    for w in &words {
        rest = rest.replace(w.as_str(), "");
    }
    if rest == plain {
        return Ok(());
    }
    if rest.trim().chars().count() >= MIN_REST && zxcvbn(&rest, personal).score() >= MIN_SCORE {
        return Ok(());
    }
    Err(Weakness::Guessable(Some(
        "Do not build it on your name or login.".into(),
    )))
}

/// What a password must hold besides the person's own words.
const MIN_REST: usize = 8;

/// Words of common Spanish passwords (the employee pages are also in
/// Spanish), lower-case.
const COMMON_SPANISH: &[&str] = &[
    "contraseña",
    "contrasena",
    "clave",
    "secreto",
    "teamo",
    "tequiero",
    "amor",
    "hola",
    "bienvenido",
    "princesa",
    "mariposa",
    "corazon",
    "corazón",
    "futbol",
    "fútbol",
    "estrella",
    "españa",
    "espana",
    "mexico",
    "méxico",
    "usuario",
    "cambiar",
    "acceso",
    "entrar",
];

/// `s` with the digits and signs that stand for letters read as those
/// letters (`l1am` as `liam`, `p@ss` as `pass`).
fn unleet(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '0' => 'o',
            '1' | '!' => 'i',
            '3' => 'e',
            '4' | '@' => 'a',
            '5' | '$' => 's',
            '7' => 't',
            c => c,
        })
        .collect()
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
    fn a_password_built_on_the_name_or_login_is_refused() {
        let personal = [
            "liam.login@mail.example",
            "Liam",
            "Login",
            "liam.login@mail.example",
        ];
        for p in [
            "liamlogin12345",
            "LiamLogin2026!",
            "login.liam.1990",
            "luciaacceso2026",
            "mail.example.liam",
            "liam@mail.example",
            "L1amL0g1n2026",
            "contraseña123",
            "micontraseña12",
        ] {
            let who = if p.starts_with("lucia") {
                [
                    "lucia.acceso@mail.example",
                    "Lucia",
                    "Acceso",
                    "lucia.acceso@mail.example",
                ]
            } else {
                personal
            };
            assert!(
                matches!(check(p, &who), Err(Weakness::Guessable(_))),
                "{p:?}"
            );
        }
        // The person's words inside a strong password do not weaken it.
        assert_eq!(check("liam likes green tea at noon", &personal), Ok(()));
        assert_eq!(check("a long pass phrase", &personal), Ok(()));
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
