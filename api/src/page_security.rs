//! The security headers of the employee pages (`/i9/section1/{token}`,
//! `/account/set-password/{token}`; docs/api.md, "The employee pages").
//!
//! The pages carry a live link token in their URL and personal data in their
//! body, so every answer on their routes (pages, redirects, errors alike) is
//! not to be cached, framed, sniffed or given away as a referrer. Each page
//! also sends its own Content-Security-Policy: nothing may load but the
//! page's one inline style sheet (allowed by its hash), and its form may post
//! only to the page itself, or go on to the partner's `employeeReturnUrl`
//! after signing. An answer of these routes that is not a page (a redirect,
//! a problem+json error) gets a policy that allows nothing at all.

use axum::{
    extract::Request,
    http::{header, HeaderMap, HeaderValue},
    middleware::Next,
    response::Response,
};
use base64::{engine::general_purpose::STANDARD, Engine as _};
use sha2::{Digest, Sha256};

/// The policy of an answer that is not one of our pages.
const NOTHING: &str =
    "default-src 'none'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'";

/// The Content-Security-Policy of a page whose only resource is the inline
/// `style` sheet, and whose form may post to the page itself and to
/// `form_target`'s origin (where the signed Section 1 page redirects).
pub fn page_policy(style: &str, form_target: Option<&str>) -> HeaderValue {
    let hash = STANDARD.encode(Sha256::digest(style.as_bytes()));
    let mut form_action = "'self'".to_owned();
    if let Some(origin) = form_target.and_then(origin) {
        form_action.push(' ');
        form_action.push_str(&origin);
    }
    let policy = format!(
        "default-src 'none'; style-src 'sha256-{hash}'; form-action {form_action}; \
         frame-ancestors 'none'; base-uri 'none'"
    );
    HeaderValue::from_str(&policy).unwrap_or_else(|_| HeaderValue::from_static(NOTHING))
}

/// `scheme://host[:port]` of an http(s) URL whose host is a plain DNS name
/// or IPv4 address (what a CSP source expression can name); else `None`.
fn origin(url: &str) -> Option<String> {
    let uri: axum::http::Uri = url.parse().ok()?;
    let scheme = uri
        .scheme_str()
        .filter(|s| matches!(*s, "http" | "https"))?;
    let host = uri.host().filter(|h| {
        !h.is_empty()
            && h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    })?;
    Some(match uri.port_u16() {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    })
}

/// Adds the pages' headers to every answer of their routes.
pub async fn headers(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    set(response.headers_mut());
    response
}

fn set(h: &mut HeaderMap) {
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(NOTHING));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_may_go_on_to_the_return_origin_only() {
        let p = page_policy("body{}", Some("https://ats.example:8443/done/1?x=y"));
        let p = p.to_str().unwrap();
        assert!(
            p.contains("form-action 'self' https://ats.example:8443;"),
            "{p}"
        );
        assert!(
            p.starts_with("default-src 'none'; style-src 'sha256-"),
            "{p}"
        );
        for odd in [
            "javascript:alert(1)",
            "https://a.example;script-src *",
            "https://[::1]/x",
            "ftp://files.example/",
            "not a url",
        ] {
            let p = page_policy("body{}", Some(odd));
            assert!(
                p.to_str().unwrap().contains("form-action 'self';"),
                "{odd}: {p:?}"
            );
        }
    }
}
