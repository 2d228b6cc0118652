//! Absolute links the service hands out, in one place.

/// The employee's Section 1 page.
pub fn section1(public_base_url: &str, token: &str) -> String {
    format!("{public_base_url}/i9/section1/{token}")
}

/// The page where an employee sets the password of a new sign-in.
pub fn set_password(public_base_url: &str, token: &str) -> String {
    format!("{public_base_url}/account/set-password/{token}")
}

/// The employee's sign-in page (docs/api.md, "The employee's own page"), in
/// Spanish when `spanish`.
pub fn sign_in(public_base_url: &str, spanish: bool) -> String {
    let lang = if spanish { "es" } else { "en" };
    format!("{public_base_url}/account/sign-in?lang={lang}")
}
