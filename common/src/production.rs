//! Settings that suit a developer's machine and are a risk in production:
//! outside `APP_ENV=development`, `i9-api` and `i9-worker` log one WARN line
//! at start for each, naming the setting and the risk (docs/operations.md,
//! "Production checklist"). None stops the start: each has a use (a
//! private network's partner, a relay that is not ready yet), but none
//! should pass unnoticed.

use std::net::IpAddr;

use ipnet::IpNet;

use crate::{destination, Config};

/// Which binary is starting: each warns about the settings it uses.
pub use crate::config::Binary;

/// One risky setting: the variable, and what it risks (one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Risk {
    pub setting: &'static str,
    pub risk: String,
}

/// The risky settings of `config` that `binary` uses; none in development.
pub fn risks(config: &Config, binary: Binary) -> Vec<Risk> {
    let mut risks = Vec::new();
    if !config.production {
        return risks;
    }
    if config.allow_private_callbacks {
        risks.push(Risk {
            setting: "ALLOW_PRIVATE_CALLBACKS",
            risk: "ALLOW_PRIVATE_CALLBACKS is true outside development: partner callbacks may \
                   go over plain http and to loopback and private addresses of this network \
                   (a partner's URL can then reach internal services), and employeeReturnUrl \
                   may be http; set it to false"
                .into(),
        });
    }
    if config.everify_adapter == crate::domain::everify::ProgramName::Simulator {
        risks.push(Risk {
            setting: "EVERIFY_ADAPTER",
            risk: "EVERIFY_ADAPTER=simulator outside development: E-Verify cases are answered by \
                   the built-in simulator, never by E-Verify (every case, answer and event says \
                   \"program\": \"simulator\"); docs/everify.md, \"The simulator\""
                .into(),
        });
    }
    if binary == Binary::Worker && config.smtp_url.is_none() {
        risks.push(Risk {
            setting: "SMTP_URL",
            risk: format!(
                "SMTP_URL is not set: no mail is sent; each email is written to MAIL_DIR ({}) as \
                 an .eml file holding a live Section 1 or set-password link (files 0600, folder \
                 0700); set SMTP_URL",
                config.mail_dir.display()
            ),
        });
    }
    if config
        .public_base_url
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
    {
        risks.push(Risk {
            setting: "PUBLIC_BASE_URL",
            risk: format!(
                "PUBLIC_BASE_URL ({}) is plain http: the links the service hands out (Section 1 \
                 and set-password pages, where employees type their SSN and password) would be \
                 followed without TLS; use the https:// address of the TLS proxy in front",
                config.public_base_url
            ),
        });
    }
    if binary == Binary::Api {
        let wide: Vec<String> = config
            .trusted_proxies
            .iter()
            .filter(|n| very_wide(n))
            .map(ToString::to_string)
            .collect();
        if !wide.is_empty() {
            risks.push(Risk {
                setting: "TRUSTED_PROXIES",
                risk: format!(
                    "TRUSTED_PROXIES lists {}, so wide that clients may be inside it: such a \
                     client chooses, with X-Forwarded-For, the address its sign-ins are \
                     throttled under, and escapes the per-address connection cap; list only \
                     your proxies' addresses",
                    wide.join(", ")
                ),
            });
        }
    }
    risks
}

/// Log [`risks`] at WARN, one line each.
pub fn warn_at_start(config: &Config, binary: Binary) {
    for r in risks(config, binary) {
        tracing::warn!(setting = r.setting, "{}", r.risk);
    }
}

/// A network of proxies so wide that clients may be in it: wider than /8
/// (IPv6: /32), or wider than /16 (IPv6: /48) and reaching public addresses
/// (its first or last address is not in a private or reserved range).
pub fn very_wide(net: &IpNet) -> bool {
    let (widest, widest_public) = match net {
        IpNet::V4(_) => (8, 16),
        IpNet::V6(_) => (32, 48),
    };
    let public = |ip: IpAddr| destination::blocked(ip).is_none();
    net.prefix_len() < widest
        || (net.prefix_len() < widest_public && (public(net.network()) || public(net.broadcast())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn production() -> Config {
        let mut c = Config::for_tests("postgres://postgres@127.0.0.1:1/none");
        c.production = true;
        c.smtp_url = Some("smtps://relay.example".into());
        c.public_base_url = "https://i9.example".into();
        // The real program (not built yet): the simulator is a risk.
        c.everify_adapter = crate::domain::everify::ProgramName::EVerify;
        c
    }

    fn settings(config: &Config, binary: Binary) -> Vec<&'static str> {
        risks(config, binary).iter().map(|r| r.setting).collect()
    }

    #[test]
    fn a_production_configuration_raises_nothing() {
        let mut c = production();
        c.trusted_proxies = vec![
            "10.0.0.0/8".parse().unwrap(),
            "192.0.2.7/32".parse().unwrap(),
        ];
        assert!(settings(&c, Binary::Api).is_empty());
        assert!(settings(&c, Binary::Worker).is_empty());
    }

    #[test]
    fn each_development_setting_raises_one_risk_in_production_and_none_in_development() {
        let mut c = production();
        c.allow_private_callbacks = true;
        c.smtp_url = None;
        c.public_base_url = "HTTP://i9.example".into();
        c.trusted_proxies = vec!["0.0.0.0/1".parse().unwrap(), "10.0.0.0/8".parse().unwrap()];
        c.everify_adapter = crate::domain::everify::ProgramName::Simulator;
        assert_eq!(
            settings(&c, Binary::Api),
            [
                "ALLOW_PRIVATE_CALLBACKS",
                "EVERIFY_ADAPTER",
                "PUBLIC_BASE_URL",
                "TRUSTED_PROXIES"
            ]
        );
        assert_eq!(
            settings(&c, Binary::Worker),
            [
                "ALLOW_PRIVATE_CALLBACKS",
                "EVERIFY_ADAPTER",
                "SMTP_URL",
                "PUBLIC_BASE_URL"
            ]
        );
        let proxies = risks(&c, Binary::Api).pop().unwrap().risk;
        assert!(
            proxies.contains("0.0.0.0/1") && !proxies.contains("10.0.0.0/8"),
            "{proxies}"
        );
        c.production = false;
        assert!(settings(&c, Binary::Api).is_empty());
        assert!(settings(&c, Binary::Worker).is_empty());
    }

    #[test]
    fn wide_proxy_networks() {
        for wide in [
            "0.0.0.0/1",
            "10.0.0.0/7",
            "172.0.0.0/9",
            "8.8.0.0/15",
            "::/1",
            "2001:db8::/31",
            "2a00::/40",
            "fd00::/8",
        ] {
            assert!(very_wide(&wide.parse().unwrap()), "{wide}");
        }
        for narrow in [
            "10.0.0.0/8",
            "172.16.0.0/12",
            "192.168.0.0/16",
            "100.64.0.0/10",
            "203.0.113.0/24",
            "8.8.0.0/16",
            "2a00:1::/48",
            "192.0.2.7/32",
        ] {
            assert!(!very_wide(&narrow.parse().unwrap()), "{narrow}");
        }
    }
}
