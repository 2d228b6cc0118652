//! Where a partner's URLs may point (docs/partners.md, "Callback URLs").
//!
//! - A status callback (`integrationHrUrl`) is posted by the worker: it must
//!   be `https`, and the address it connects to must be a public one (not in
//!   [`BLOCKED`]), unless `ALLOW_PRIVATE_CALLBACKS` is true (local runs and
//!   tests). The worker checks the address it actually connects to
//!   (`workers/src/callback_client.rs`); a seed file is checked up front.
//! - An `employeeReturnUrl` is where the employee's browser goes after signing
//!   Section 1: it must be `https` under the same setting (the service never
//!   fetches it, so its address is not checked).

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    sync::OnceLock,
};

use ipnet::IpNet;

/// Addresses that are not on the public Internet (the IANA special-purpose
/// registries), each with what it is. An IPv4-mapped address
/// (`::ffff:0:0/96`) and a NAT64 address (`64:ff9b::/96`) are judged by the
/// IPv4 address they carry; any other IPv6 address outside global unicast
/// (`2000::/3`) is refused as well.
pub const BLOCKED: &[(&str, &str)] = &[
    ("0.0.0.0/8", "\"this network\" (unspecified)"),
    ("10.0.0.0/8", "private-use"),
    ("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local (cloud metadata services)"),
    ("172.16.0.0/12", "private-use"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation (TEST-NET-1)"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private-use"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation (TEST-NET-2)"),
    ("203.0.113.0/24", "documentation (TEST-NET-3)"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved (and broadcast)"),
    ("::/96", "unspecified, loopback and IPv4-compatible"),
    ("::ffff:0:0:0/96", "IPv4-translated"),
    ("64:ff9b:1::/48", "local-use IPv4/IPv6 translation"),
    ("100::/64", "discard-only"),
    (
        "2001::/23",
        "IETF protocol assignments (Teredo, benchmarking, ORCHID)",
    ),
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4"),
    ("3fff::/20", "documentation"),
    ("fc00::/7", "unique local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
];

fn blocked_nets() -> &'static [(IpNet, &'static str)] {
    static NETS: OnceLock<Vec<(IpNet, &'static str)>> = OnceLock::new();
    NETS.get_or_init(|| {
        BLOCKED
            .iter()
            .filter_map(|(net, what)| net.parse().ok().map(|n| (n, *what)))
            .collect()
    })
}

/// Why a callback may not reach an address: the range and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub range: String,
    pub what: &'static str,
}

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.what, self.range)
    }
}

/// `Some` when a callback may not reach `ip` (unless private callbacks are allowed).
pub fn blocked(ip: IpAddr) -> Option<Blocked> {
    if let IpAddr::V6(v6) = ip {
        if let Some(v4) = v6.to_ipv4_mapped() {
            return blocked(IpAddr::V4(v4));
        }
        if let Some(v4) = nat64_embedded(v6) {
            return blocked(IpAddr::V4(v4));
        }
    }
    if let Some((net, what)) = blocked_nets().iter().find(|(net, _)| net.contains(&ip)) {
        return Some(Blocked {
            range: net.to_string(),
            what,
        });
    }
    match ip {
        IpAddr::V6(v6) if (v6.segments()[0] & 0xe000) != 0x2000 => Some(Blocked {
            range: "outside 2000::/3".into(),
            what: "not global unicast IPv6",
        }),
        _ => None,
    }
}

/// The IPv4 address inside a well-known-prefix NAT64 address (`64:ff9b::/96`).
fn nat64_embedded(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0]).then(|| {
        let [.., a, b, c, d] = v6.octets();
        Ipv4Addr::new(a, b, c, d)
    })
}

/// What is wrong with a partner's URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlProblem {
    /// Not an absolute http(s) URL with a host.
    NotHttpUrl,
    /// `http` while private callbacks are not allowed.
    HttpsRequired,
    /// A user name or password in the URL (`https://user:pass@host/`):
    /// stored and sent in clear, and shown in the browser's address bar.
    Credentials,
    /// A literal address a callback may not reach.
    Blocked(Blocked),
    /// An `employeeReturnUrl` whose host is not a DNS name written in ASCII
    /// (an IP address, an underscore, a name not yet in punycode), or whose
    /// scheme is not written `https://` (docs/partners.md, "Callback URLs").
    NotHostName,
}

impl UrlProblem {
    /// A short code for problem details.
    pub fn code(&self) -> &'static str {
        match self {
            UrlProblem::NotHttpUrl => "invalid_format",
            UrlProblem::HttpsRequired => "https_required",
            UrlProblem::Credentials => "credentials_in_url",
            UrlProblem::Blocked(_) => "forbidden_address",
            UrlProblem::NotHostName => "invalid_format",
        }
    }
}

impl std::fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlProblem::NotHttpUrl => f.write_str("must be an absolute https URL"),
            UrlProblem::HttpsRequired => f.write_str("must be an https URL"),
            UrlProblem::Credentials => {
                f.write_str("must not hold a user name or password (user:password@)")
            }
            UrlProblem::Blocked(b) => write!(f, "must not be a {b} address"),
            UrlProblem::NotHostName => f.write_str(
                "must start with https:// and name its host by a DNS name in ASCII \
                 (letters, digits and hyphens; not an IP address)",
            ),
        }
    }
}

fn http_url(url: &str, allow_http: bool) -> Result<url::Url, UrlProblem> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlProblem::NotHttpUrl);
    }
    let parsed = url::Url::parse(url).map_err(|_| UrlProblem::NotHttpUrl)?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlProblem::Credentials);
    }
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(parsed),
        "http" if parsed.host().is_some() && allow_http => Ok(parsed),
        "http" if parsed.host().is_some() => Err(UrlProblem::HttpsRequired),
        _ => Err(UrlProblem::NotHttpUrl),
    }
}

/// A partner's status callback URL (`integrationHrUrl`): https, and not a
/// blocked literal address, unless private callbacks are allowed.
pub fn check_callback_url(url: &str, allow_private: bool) -> Result<url::Url, UrlProblem> {
    let parsed = http_url(url, allow_private)?;
    if !allow_private {
        let ip = match parsed.host() {
            Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
            _ => None,
        };
        if let Some(b) = ip.and_then(blocked) {
            return Err(UrlProblem::Blocked(b));
        }
    }
    Ok(parsed)
}

/// Where an employee's browser is sent (`employeeReturnUrl`): https, of a
/// host name as the OpenAPI document's pattern states it, unless private
/// callbacks (local runs) are allowed, when http and any host do.
pub fn check_browser_url(url: &str, allow_http: bool) -> Result<(), UrlProblem> {
    http_url(url, allow_http)?;
    if allow_http {
        return Ok(());
    }
    match url.strip_prefix("https://") {
        Some(rest) if is_host_name(authority_host(rest)) => Ok(()),
        _ => Err(UrlProblem::NotHostName),
    }
}

/// The host of an authority followed by the rest of a URL
/// (`ats.example:8443/x?y` → `ats.example`).
fn authority_host(rest: &str) -> &str {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority.split(':').next().unwrap_or_default()
}

/// A DNS name in ASCII: labels of 1 to 63 letters, digits and hyphens, not
/// starting or ending with a hyphen, the last one starting with a letter
/// (so that no IP address passes).
fn is_host_name(host: &str) -> bool {
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let mut labels = host.split('.').rev();
    let Some(last) = labels.next() else {
        return false;
    };
    label_ok(last) && last.as_bytes()[0].is_ascii_alphabetic() && labels.all(label_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn urls_with_credentials_are_refused_whatever_else_is_allowed() {
        for url in [
            "https://user:pw@ats.example/x",
            "https://user@ats.example/x",
            "https://:pw@ats.example/x",
            "http://user:pw@127.0.0.1:9099/i9-status",
        ] {
            assert_eq!(
                check_browser_url(url, true),
                Err(UrlProblem::Credentials),
                "{url}"
            );
            assert_eq!(
                check_callback_url(url, true).err(),
                Some(UrlProblem::Credentials),
                "{url}"
            );
        }
        assert_eq!(
            check_browser_url("https://ats.example/x?user=a@b", false),
            Ok(())
        );
    }

    #[test]
    fn a_return_url_names_a_host_name_over_https_as_the_document_says() {
        for url in [
            "https://ats.example/candidates/8812",
            "https://ats.example:8443/x?y=1#z",
            "https://xn--bcher-kva.example/",
            "https://a-b.c0.example",
        ] {
            assert_eq!(check_browser_url(url, false), Ok(()), "{url}");
        }
        for url in [
            "https://127.0.0.1/x",
            "https://10.0.0.1/x",
            "https://[::1]/x",
            "https://ats_example.com/",
            "HTTPS://ats.example/x",
            "https://bücher.example/",
            "https://-ats.example/",
        ] {
            assert_eq!(
                check_browser_url(url, false),
                Err(UrlProblem::NotHostName),
                "{url}"
            );
            // A local run (ALLOW_PRIVATE_CALLBACKS) takes them.
            assert_eq!(check_browser_url(url, true), Ok(()), "{url}");
        }
    }

    #[test]
    fn every_range_of_the_table_parses() {
        assert_eq!(blocked_nets().len(), BLOCKED.len());
    }

    /// One address inside each range, at its first and last address too, is
    /// blocked and named by that range; the neighbours outside are not.
    #[test]
    fn each_range_is_blocked_from_its_first_to_its_last_address() {
        for (net, _) in blocked_nets() {
            for inside in [net.network(), net.broadcast()] {
                let b = blocked(inside).unwrap_or_else(|| panic!("{inside} in {net}"));
                // A narrower range listed inside a wider one names itself.
                let named: IpNet = b.range.parse().unwrap();
                assert!(named.contains(&inside), "{inside}: {b}");
            }
        }
    }

    #[test]
    fn the_addresses_of_each_range_that_the_issue_names_are_blocked() {
        for (addr, range) in [
            ("0.0.0.0", "0.0.0.0/8"),
            ("10.1.2.3", "10.0.0.0/8"),
            ("100.64.0.1", "100.64.0.0/10"),
            ("100.127.255.254", "100.64.0.0/10"),
            ("127.0.0.1", "127.0.0.0/8"),
            ("169.254.169.254", "169.254.0.0/16"),
            ("172.16.0.1", "172.16.0.0/12"),
            ("172.31.255.255", "172.16.0.0/12"),
            ("192.0.0.8", "192.0.0.0/24"),
            ("192.0.2.10", "192.0.2.0/24"),
            ("192.88.99.1", "192.88.99.0/24"),
            ("192.168.1.1", "192.168.0.0/16"),
            ("198.18.0.1", "198.18.0.0/15"),
            ("198.19.255.255", "198.18.0.0/15"),
            ("198.51.100.7", "198.51.100.0/24"),
            ("203.0.113.9", "203.0.113.0/24"),
            ("224.0.0.251", "224.0.0.0/4"),
            ("239.255.255.250", "224.0.0.0/4"),
            ("240.0.0.1", "240.0.0.0/4"),
            ("255.255.255.255", "240.0.0.0/4"),
            ("::", "::/96"),
            ("::1", "::/96"),
            ("::10.0.0.1", "::/96"),
            ("::ffff:0:8.8.8.8", "::ffff:0:0:0/96"),
            ("64:ff9b:1::1", "64:ff9b:1::/48"),
            ("100::1", "100::/64"),
            ("2001::1", "2001::/23"),
            ("2001:2::1", "2001::/23"),
            ("2001:db8::1", "2001:db8::/32"),
            ("2002:a00:1::1", "2002::/16"),
            ("3fff::1", "3fff::/20"),
            ("fd00::1", "fc00::/7"),
            ("fc00::1", "fc00::/7"),
            ("fe80::1", "fe80::/10"),
            ("fec0::1", "fec0::/10"),
            ("ff02::1", "ff00::/8"),
            ("ff0e::1", "ff00::/8"),
        ] {
            let b = blocked(ip(addr)).unwrap_or_else(|| panic!("{addr} is not blocked"));
            assert_eq!(b.range, range, "{addr}");
        }
    }

    #[test]
    fn mapped_and_nat64_addresses_are_judged_by_their_ipv4_address() {
        for (addr, range) in [
            ("::ffff:127.0.0.1", "127.0.0.0/8"),
            ("::ffff:10.0.0.1", "10.0.0.0/8"),
            ("::ffff:169.254.169.254", "169.254.0.0/16"),
            ("64:ff9b::7f00:1", "127.0.0.0/8"),
            ("64:ff9b::a9fe:a9fe", "169.254.0.0/16"),
            ("64:ff9b::c0a8:101", "192.168.0.0/16"),
            ("64:ff9b::e000:1", "224.0.0.0/4"),
        ] {
            assert_eq!(
                blocked(ip(addr)).map(|b| b.range).as_deref(),
                Some(range),
                "{addr}"
            );
        }
        for public in ["::ffff:8.8.8.8", "64:ff9b::808:808"] {
            assert_eq!(blocked(ip(public)), None, "{public}");
        }
    }

    #[test]
    fn other_ipv6_outside_global_unicast_is_blocked() {
        for addr in ["5f00::1", "4000::1", "1::1", "c000::1", "::2:0:0:1"] {
            assert!(blocked(ip(addr)).is_some(), "{addr}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for addr in [
            "8.8.8.8",
            "1.1.1.1",
            "151.101.1.1",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "192.0.1.1",
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "2001:4860:4860::8888",
        ] {
            assert_eq!(blocked(ip(addr)), None, "{addr}");
        }
    }

    #[test]
    fn callback_urls_are_https_to_a_public_host_unless_private_is_allowed() {
        use UrlProblem::*;
        let check = |u: &str, allow| check_callback_url(u, allow).map(|_| ()).err();
        assert_eq!(check("https://ats.example/hooks/i9", false), None);
        assert_eq!(check("https://8.8.8.8/hook", false), None);
        assert_eq!(
            check("http://ats.example/hooks/i9", false),
            Some(HttpsRequired)
        );
        assert_eq!(check("http://ats.example/hooks/i9", true), None);
        assert_eq!(check("ftp://ats.example/x", true), Some(NotHttpUrl));
        assert_eq!(check("https://", false), Some(NotHttpUrl));
        assert_eq!(check("https://a .example/", false), Some(NotHttpUrl));
        assert_eq!(check("/relative", false), Some(NotHttpUrl));
        assert!(matches!(
            check("https://10.0.0.5/hook", false),
            Some(Blocked(b)) if b.range == "10.0.0.0/8"
        ));
        assert!(matches!(
            check("https://[64:ff9b::a9fe:a9fe]/", false),
            Some(Blocked(b)) if b.range == "169.254.0.0/16"
        ));
        assert_eq!(check("http://127.0.0.1:9099/i9-status", true), None);
        let msg = HttpsRequired.to_string();
        assert_eq!(msg, "must be an https URL");
    }

    #[test]
    fn browser_urls_are_https_unless_http_is_allowed() {
        assert!(check_browser_url("https://ats.example/done", false).is_ok());
        // An IP address is not a host name (the document's pattern).
        assert_eq!(
            check_browser_url("https://10.1.2.3/done", false),
            Err(UrlProblem::NotHostName)
        );
        assert_eq!(
            check_browser_url("http://ats.example/done", false),
            Err(UrlProblem::HttpsRequired)
        );
        assert!(check_browser_url("http://ats.example/done", true).is_ok());
        assert_eq!(
            check_browser_url("javascript:alert(1)", true),
            Err(UrlProblem::NotHttpUrl)
        );
    }
}
