//! An electronic signature is the signer's name typed again
//! (docs/api.md, "Signatures"): Section 1 (the employee, each Supplement A
//! preparer), Section 2 and Supplement B (the employer's representative).
//! One rule for all of them; what was typed is stored as typed.

/// Whether `signature` is `name` typed again: letter case and runs of
/// spaces aside, nothing else (no accents dropped, no initials).
pub fn signs_as(signature: &str, name: &str) -> bool {
    let words = |s: &str| {
        s.split_whitespace()
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
    };
    let typed = words(signature);
    !typed.is_empty() && typed == words(name)
}

#[cfg(test)]
mod tests {
    use super::signs_as;

    #[test]
    fn case_and_spacing_aside_the_name_itself() {
        assert!(signs_as("wes  turner", "Wes Turner"));
        assert!(signs_as(" ZOË O'NEIL ", "Zoë O'Neil"));
        assert!(!signs_as("Zoe O'Neil", "Zoë O'Neil"));
        assert!(!signs_as("W. Turner", "Wes Turner"));
        assert!(!signs_as("WesTurner", "Wes Turner"));
        assert!(!signs_as("   ", "  "));
    }
}
