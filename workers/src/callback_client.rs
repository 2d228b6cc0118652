//! The HTTP client of partner status callbacks, and its guard against being
//! turned on the service's own network (server-side request forgery;
//! docs/partners.md, "Callback URLs").
//!
//! Unless `ALLOW_PRIVATE_CALLBACKS` is true:
//! - the URL must be `https`;
//! - its host is resolved once, and every address it resolves to must be a
//!   public one (`i9_common::destination::blocked`): loopback, private,
//!   link-local, CGNAT, multicast, reserved, documentation, NAT64 or mapped
//!   forms of those, and so on are refused without a connection.
//!
//! Always:
//! - the request connects to the addresses just checked (no second lookup
//!   that could answer differently);
//! - no proxy is used, whatever `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` say: a
//!   proxy would resolve the name again and connect wherever it likes;
//! - redirects are not followed, and the whole exchange is bounded;
//! - TLS is rustls with the ring provider, trusting the Mozilla root
//!   certificates built into the binary (webpki-roots), whatever the host's
//!   certificate store holds.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use i9_common::destination::{self, UrlProblem};

/// Why a callback was not answered.
#[derive(Debug)]
pub enum Attempt {
    /// Never to be sent (a bad or forbidden destination).
    Refused(String),
    /// Worth trying again.
    Failed(String),
}

/// How [`describe`] begins for a callback without an answer in time.
pub const TIMED_OUT: &str = "no answer within";
/// How [`describe`] begins for a callback that found no connection.
pub const CANNOT_CONNECT: &str = "cannot connect";

/// The time one callback may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(15);

/// Why a request to `url` failed, for `callback_attempts.error`, the
/// dead-letter header and the log: what went wrong (no answer in time, no
/// connection, ...) and the chain of causes beneath (connection refused, a
/// DNS failure, the TLS error), at most 500 characters. The URL's query
/// string, which may carry a partner's token, never appears; nor does the
/// rest of the URL.
pub fn describe(e: &reqwest::Error, url: &str) -> String {
    let what = if e.is_timeout() {
        format!("{TIMED_OUT} {} s", TIMEOUT.as_secs())
    } else if e.is_connect() {
        CANNOT_CONNECT.to_owned()
    } else if e.is_body() || e.is_decode() {
        "the answer could not be read".to_owned()
    } else {
        "the request failed".to_owned()
    };
    let mut causes: Vec<String> = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let mut text = cause.to_string();
        if i9_common::tls::is_tls_failure(cause) {
            text = format!("TLS: {text}");
        }
        // Wrappers often repeat their cause's text, or only the kind
        // already said (hyper's "client error (Connect)"): keep it once.
        if !text.is_empty()
            && !text.starts_with("client error (")
            && !causes.iter().any(|c| c.contains(&text))
        {
            causes.push(text);
        }
        source = cause.source();
    }
    let mut text = std::iter::once(what)
        .chain(causes)
        .collect::<Vec<_>>()
        .join(": ");
    if let Ok(parsed) = reqwest::Url::parse(url) {
        text = text.replace(url, parsed.host_str().unwrap_or("the callback host"));
        if let Some(query) = parsed.query().filter(|q| !q.is_empty()) {
            text = text.replace(query, "…");
        }
    }
    if text.len() > 500 {
        let mut end = 500;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// The URL to post to and a client that reaches only its checked addresses.
pub async fn connect(
    url: &str,
    allow_private: bool,
) -> Result<(reqwest::Url, reqwest::Client), Attempt> {
    let parsed = destination::check_callback_url(url, allow_private).map_err(|p| {
        Attempt::Refused(match p {
            UrlProblem::HttpsRequired => {
                "refused: the callback URL must be https (ALLOW_PRIVATE_CALLBACKS is off)".into()
            }
            UrlProblem::Blocked(b) => format!(
                "refused: the callback URL names a {b} address (ALLOW_PRIVATE_CALLBACKS is off)"
            ),
            UrlProblem::NotHttpUrl | UrlProblem::NotHostName => {
                "refused: the callback URL is not an http(s) URL".into()
            }
            UrlProblem::Credentials => {
                "refused: the callback URL holds a user name or password".into()
            }
        })
    })?;
    let port = parsed.port_or_known_default().unwrap_or(443);
    let tls = tls_config().map_err(|e| Attempt::Failed(format!("TLS settings: {e}")))?;
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT);
    if let Some(host) = parsed.domain() {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| Attempt::Failed(format!("cannot resolve the callback host: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(Attempt::Failed(
                "the callback host resolves to nothing".into(),
            ));
        }
        if !allow_private {
            if let Some((addr, b)) = addrs
                .iter()
                .find_map(|a| destination::blocked(a.ip()).map(|b| (a.ip(), b)))
            {
                return Err(Attempt::Refused(format!(
                    "refused: the callback host resolves to {addr}, a {b} address (ALLOW_PRIVATE_CALLBACKS is off)"
                )));
            }
        }
        // Connect to the addresses just checked, not to a second lookup's answer.
        builder = builder.resolve_to_addrs(host, &addrs);
    }
    let client = builder
        .build()
        .map_err(|e| Attempt::Failed(format!("HTTP client: {e}")))?;
    Ok((parsed, client))
}

/// The TLS settings of a callback: rustls with the ring provider (the crypto
/// of every other TLS client of the service), the built-in Mozilla roots,
/// TLS 1.2 and 1.3, HTTP/1.1. Given to reqwest whole, so its choice does not
/// depend on a process-wide default provider.
fn tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: panics are failures
    use super::*;

    #[test]
    fn callbacks_use_ring_the_built_in_roots_and_http_1_1() {
        let config = tls_config().unwrap();
        let ring = rustls::crypto::ring::default_provider();
        let groups = |p: &rustls::crypto::CryptoProvider| {
            p.kx_groups.iter().map(|g| g.name()).collect::<Vec<_>>()
        };
        let suites = |p: &rustls::crypto::CryptoProvider| {
            p.cipher_suites
                .iter()
                .map(|s| s.suite())
                .collect::<Vec<_>>()
        };
        assert_eq!(groups(config.crypto_provider()), groups(&ring));
        assert_eq!(suites(config.crypto_provider()), suites(&ring));
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
}
