//! Who is calling, for sign-in throttling: the peer address of the
//! connection, or, when the peer is a trusted proxy (`TRUSTED_PROXIES`, none
//! by default), the client it names in `X-Forwarded-For`. The header is read
//! from the right, skipping trusted proxies: the first address that is not
//! one is the client (anything left of it was written by the client itself
//! and is not believed).

use std::{
    convert::Infallible,
    net::{IpAddr, Ipv4Addr, SocketAddr},
};

use axum::{
    extract::{ConnectInfo, FromRequestParts},
    http::{request::Parts, HeaderMap},
};
use ipnet::IpNet;

use crate::state::AppState;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

impl FromRequestParts<AppState> for ClientAddress {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Infallible> {
        // Our server always records the peer; without it (a router called
        // in-process) every caller is one unknown address.
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
        Ok(Self(resolve(
            peer,
            &parts.headers,
            &state.config.trusted_proxies,
        )))
    }
}

/// The client behind `peer`, given the proxies we trust.
pub fn resolve(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| {
        let ip = ip.to_canonical();
        trusted.iter().any(|net| net.contains(&ip))
    };
    if !is_trusted(&peer) {
        return peer;
    }
    // Every X-Forwarded-For header, in order, as one list.
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        match parse_hop(hop) {
            Some(ip) => {
                client = ip;
                if !is_trusted(&ip) {
                    break;
                }
            }
            // What a trusted proxy would not write: stop at the last good hop.
            None => break,
        }
    }
    client
}

/// An address as proxies write it: `a.b.c.d`, `a.b.c.d:port`, `::1` or `[::1]:port`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn without_trusted_proxies_the_header_is_ignored() {
        let h = headers(&["203.0.113.9"]);
        assert_eq!(resolve(ip("127.0.0.1"), &h, &[]), ip("127.0.0.1"));
    }

    #[test]
    fn a_trusted_proxy_names_the_client_and_spoofed_hops_are_skipped() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        // The client wrote "1.2.3.4" itself; the proxy appended the real address.
        let h = headers(&["1.2.3.4, 203.0.113.9"]);
        assert_eq!(resolve(ip("10.0.0.5"), &h, &trusted), ip("203.0.113.9"));
        // Two trusted proxies in a row, over two headers, one with a port.
        let h = headers(&["198.51.100.7:5555, 10.1.1.1", "10.2.2.2"]);
        assert_eq!(resolve(ip("10.0.0.5"), &h, &trusted), ip("198.51.100.7"));
        // An untrusted peer's header is not believed.
        assert_eq!(resolve(ip("192.0.2.1"), &h, &trusted), ip("192.0.2.1"));
        // Garbage stops the walk at the last good hop.
        let h = headers(&["203.0.113.9, not-an-ip, 10.1.1.1"]);
        assert_eq!(resolve(ip("10.0.0.5"), &h, &trusted), ip("10.1.1.1"));
        // No header: the proxy itself.
        assert_eq!(
            resolve(ip("10.0.0.5"), &HeaderMap::new(), &trusted),
            ip("10.0.0.5")
        );
        // IPv6 with brackets, and an IPv4-mapped peer.
        let h = headers(&["[2001:db8::1]:443"]);
        let trusted_v4: Vec<IpNet> = vec!["127.0.0.1/32".parse().unwrap()];
        assert_eq!(
            resolve(ip("::ffff:127.0.0.1"), &h, &trusted_v4),
            ip("2001:db8::1")
        );
    }
}
