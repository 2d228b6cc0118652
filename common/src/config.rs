//! Configuration from environment variables, each with a default that works
//! for local runs. Secrets may also be given as `<NAME>_FILE` (a path whose
//! contents are the secret). Keys have no default: the development keys are
//! used only with `APP_ENV=development` (`common/src/keys.rs`).

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use anyhow::{bail, Context};

use crate::keys::{self, KeyRing, Keys};

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/i9";
pub const DEFAULT_AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// The API replays an `Idempotency-Key` for 24 hours (api/src/idempotency.rs),
/// never after: the most `RETENTION_IDEMPOTENCY_SECS` keeps a record, and how
/// long a record holds the SSN hash key its fingerprint was made with
/// (`common/src/rekey.rs`).
pub const IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// The environment every binary reads, for `--help` (the README's
/// Configuration table says more).
pub const ENV_HELP: &str = "\
Environment (shared by i9-api, i9-worker and i9-admin; see the README):
  DATABASE_URL, DATABASE_MAX_CONNECTIONS     Postgres (TLS: ?sslmode=verify-full&sslrootcert=)
  AMQP_URL, AMQP_PREFIX                      RabbitMQ
  STARTUP_TIMEOUT_SECS                       wait at start for both (default 60)
  DATA_ENCRYPTION_KEYS, SSN_HASH_KEYS        key rings: ID:BASE64 entries, first current
                                             (2:<key>,1:<key>); or DATA_ENCRYPTION_KEY,
                                             SSN_HASH_KEY (key 1); each also as *_FILE
  APP_ENV                                    only `development` runs without keys (with
                                             the published development keys)
  SMTP_URL, MAIL_DIR                         mail (smtps://, or ?tls=required)
  SMTP_CA_FILE, SMTP_ALLOW_PLAINTEXT_AUTH    its extra root CAs; credentials without TLS
  BIND_ADDR, PUBLIC_BASE_URL                 the API's address and its links
  ALLOW_PRIVATE_CALLBACKS                    partner callbacks to private addresses
  ACCESS_TOKEN_TTL_SECS, REFRESH_TOKEN_TTL_SECS, AUTH_CACHE_TTL_SECS,
  SECTION1_LINK_TTL_SECS, PASSWORD_LINK_TTL_SECS
  SIGN_IN_USERNAME_FAILURES, SIGN_IN_USERNAME_FORGET_SECS (default 5, 60),
  SIGN_IN_ADDRESS_FAILURES, SIGN_IN_ADDRESS_FORGET_SECS (default 20, 12)
                                             sign-in throttling
  SSN_WRITES_FREE, SSN_WRITES_FORGET_SECS (default 5, 3600)
                                             writes of SSNs without permission 12,
                                             per user and last four digits
  TRUSTED_PROXIES                            proxies whose X-Forwarded-For is believed
  PASSWORD_HASH_CONCURRENCY, PASSWORD_HASH_WAIT_SECS
                                             password hashing (default cores, 2)
  HTTP_HEADER_TIMEOUT_SECS, HTTP_MAX_CONNECTIONS, HTTP_MAX_CONNECTIONS_PER_ADDRESS
                                             connections (default 30, 4096, 256)
  PURGE_INTERVAL_SECS, RETENTION_IDEMPOTENCY_SECS, RETENTION_PROCESSED_JOBS_SECS,
  RETENTION_OUTBOX_SECS                      the worker's purge of expired rows
  RUST_LOG, LOG_FORMAT                       logging
Booleans accept 1/0, true/false, yes/no, on/off.";

#[derive(Clone)]
pub struct Config {
    /// False only with `APP_ENV=development`, the one setting that allows the
    /// development keys.
    pub production: bool,
    /// How long a binary waits at start for Postgres and RabbitMQ before it
    /// gives up (`common/src/startup.rs`).
    pub startup_timeout: Duration,
    pub database_url: String,
    pub database_max_connections: u32,
    pub amqp_url: String,
    pub smtp_url: Option<String>,
    /// PEM root certificates trusted for the SMTP server besides the
    /// built-in ones (a private CA).
    pub smtp_ca_file: Option<PathBuf>,
    /// Lets `SMTP_URL` carry credentials without TLS (a relay on this host).
    pub smtp_allow_plaintext_auth: bool,
    pub mail_dir: PathBuf,
    pub public_base_url: String,
    pub bind_addr: SocketAddr,
    pub allow_private_callbacks: bool,
    /// AES-256-GCM keys for SSNs, partner signing secrets and Section 1 link
    /// tokens, the first current.
    pub data_keys: KeyRing<[u8; 32]>,
    /// HMAC-SHA256 keys of the searchable SSN hash, the first current.
    pub ssn_hash_keys: KeyRing<Vec<u8>>,
    pub access_token_ttl: Duration,
    pub refresh_token_ttl: Duration,
    /// Sign-in throttling (docs/api.md, "Throttling"): failures a username
    /// or a client address may have before its delays start, and how often
    /// one of its failures is forgotten.
    pub sign_in_username: ThrottleLimit,
    pub sign_in_address: ThrottleLimit,
    /// Writes that carry an SSN by a caller who may not see SSNs whole, per
    /// user and last four digits (docs/api.md, "Social security numbers"):
    /// how many before delays start, and how often one is forgotten.
    pub ssn_writes: ThrottleLimit,
    /// Peers whose `X-Forwarded-For` names the client (none by default).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Password and client-secret verifications at once (argon2id, 19 MiB
    /// each), and how long a request waits for its turn before 503.
    pub password_hash_concurrency: usize,
    pub password_hash_wait: Duration,
    /// A connection must deliver a request head within this time of the
    /// server waiting for one (a new connection, or a kept-alive one after
    /// its last response), or it is closed.
    pub http_header_timeout: Duration,
    /// Connections served at once; more wait in the listen queue.
    pub http_max_connections: usize,
    /// Connections one client address may hold at once; more are refused
    /// (addresses in `trusted_proxies` are exempt).
    pub http_max_connections_per_address: usize,
    /// How long a Section 1 link works.
    pub section1_link_ttl: Duration,
    /// How long a set-password link works.
    pub password_link_ttl: Duration,
    /// How long an API process may reuse a validated access token without
    /// asking the database (revocations clear it at once; zero disables).
    pub auth_cache_ttl: Duration,
    /// How often a worker purges rows that only matter for a while, and how
    /// long each kind is kept (docs/operations.md, "Purging").
    pub purge_interval: Duration,
    pub retention_idempotency: Duration,
    pub retention_processed_jobs: Duration,
    pub retention_outbox: Duration,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Keys and URLs with credentials stay out of debug output.
        f.debug_struct("Config")
            .field("production", &self.production)
            .field("public_base_url", &self.public_base_url)
            .field("bind_addr", &self.bind_addr)
            .field("smtp", &self.smtp_url.is_some())
            .field("allow_private_callbacks", &self.allow_private_callbacks)
            .finish_non_exhaustive()
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A secret from `NAME`, or from the file named by `NAME_FILE`.
fn secret(name: &str) -> anyhow::Result<Option<String>> {
    if let Some(v) = var(name) {
        return Ok(Some(v));
    }
    if let Some(path) = var(&format!("{name}_FILE")) {
        let v = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {name}_FILE ({path})"))?;
        return Ok(Some(v.trim().to_owned()));
    }
    Ok(None)
}

/// The words a boolean setting accepts, in any case: the same as the
/// command-line flags' (clap's `BoolishValueParser`), so every boolean of
/// every binary is read one way.
pub const TRUE_WORDS: [&str; 6] = ["1", "true", "yes", "on", "y", "t"];
pub const FALSE_WORDS: [&str; 6] = ["0", "false", "no", "off", "n", "f"];

/// `value` as a boolean, by [`TRUE_WORDS`] and [`FALSE_WORDS`].
pub fn bool_word(value: &str) -> Option<bool> {
    let v = value.trim().to_ascii_lowercase();
    if TRUE_WORDS.contains(&v.as_str()) {
        Some(true)
    } else if FALSE_WORDS.contains(&v.as_str()) {
        Some(false)
    } else {
        None
    }
}

fn parse_bool(name: &str, default: bool) -> anyhow::Result<bool> {
    match var(name) {
        None => Ok(default),
        Some(v) => bool_word(&v).with_context(|| {
            format!("{name} must be true or false (1/0, yes/no, on/off), not {v:?}")
        }),
    }
}

fn parse_secs(name: &str, default: u64) -> anyhow::Result<Duration> {
    match var(name) {
        None => Ok(Duration::from_secs(default)),
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|s| *s > 0)
            .map(Duration::from_secs)
            .with_context(|| format!("{name} must be a positive number of seconds")),
    }
}

/// The throttling of one kind of key (docs/api.md, "Throttling").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThrottleLimit {
    /// Failures allowed before the delays start.
    pub free_failures: u32,
    /// One failure is forgotten every `forget` (the level leaks linearly).
    pub forget: Duration,
}

fn parse_count(name: &str, default: u64) -> anyhow::Result<u64> {
    match var(name) {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse::<u64>()
            .with_context(|| format!("{name} must be a whole number, not {v:?}")),
    }
}

fn parse_positive(name: &str, default: u64) -> anyhow::Result<u64> {
    let n = parse_count(name, default)?;
    if n == 0 {
        bail!("{name} must be at least 1");
    }
    Ok(n)
}

fn parse_proxies(name: &str) -> anyhow::Result<Vec<ipnet::IpNet>> {
    let Some(list) = var(name) else {
        return Ok(Vec::new());
    };
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| parse_proxy(name, s))
        .collect()
}

/// One entry of `TRUSTED_PROXIES`: an address or a network. A network of
/// every address (`0.0.0.0/0`, `::/0`) is refused: it would believe every
/// client's `X-Forwarded-For` (docs/operations.md, "Client addresses").
fn parse_proxy(name: &str, s: &str) -> anyhow::Result<ipnet::IpNet> {
    let net = match s.split_once('/') {
        None => s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from).ok(),
        Some((address, prefix)) => {
            let address = address.parse::<std::net::IpAddr>().ok();
            let prefix = prefix.parse::<u8>().ok();
            if let (Some(address), Some(prefix)) = (address, prefix) {
                let max = if address.is_ipv4() { 32 } else { 128 };
                if prefix > max {
                    bail!(
                        "{name}: {s:?} has a prefix length of {prefix}, out of range: an {} \
                         network's is 0 to {max}",
                        if address.is_ipv4() { "IPv4" } else { "IPv6" }
                    );
                }
            }
            s.parse::<ipnet::IpNet>().ok()
        }
    };
    let net = net.with_context(|| {
        format!("{name} must list IP addresses or networks (a.b.c.d/n), not {s:?}")
    })?;
    if net.prefix_len() == 0 {
        bail!(
            "{name}: {s:?} is every address, so any client could choose the address it is \
             throttled under with X-Forwarded-For; list only your proxies' addresses or networks"
        );
    }
    Ok(net)
}

/// `DATABASE_URL` must be a Postgres URL: its scheme is checked here, so
/// that `mysql://…` or `http://…` stops a binary at start naming the
/// setting (sqlx reads the rest: host, port, database, `sslmode`, ...).
/// The URL itself is never printed: it may carry a password.
fn check_database_url(url: &str) -> anyhow::Result<()> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("postgres" | "postgresql") => Ok(()),
        Some(other)
            if other.len() <= 20
                && other
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            bail!("DATABASE_URL must be a postgres:// or postgresql:// URL, not {other}://")
        }
        _ => bail!(
            "DATABASE_URL must be a postgres:// or postgresql:// URL \
             (postgres://user:password@host:5432/database)"
        ),
    }
}

/// The cores this process may use (the default hashing concurrency).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Config {
    pub fn from_env() -> anyhow::Result<Self> {
        let app_env = var("APP_ENV");
        let production = !keys::is_development(app_env.as_deref());
        let keys = Keys::from_settings(app_env.as_deref(), secret)?;

        let bind_addr = var("BIND_ADDR")
            .unwrap_or_else(|| "127.0.0.1:8080".to_owned())
            .parse()
            .context("BIND_ADDR must be host:port, e.g. 127.0.0.1:8080")?;
        let public_base_url = var("PUBLIC_BASE_URL")
            .unwrap_or_else(|| format!("http://{bind_addr}"))
            .trim_end_matches('/')
            .to_owned();

        let database_url =
            secret("DATABASE_URL")?.unwrap_or_else(|| DEFAULT_DATABASE_URL.to_owned());
        check_database_url(&database_url)?;

        for old in ["SIGN_IN_MAX_FAILURES", "SIGN_IN_WINDOW_SECS"] {
            if var(old).is_some() {
                bail!(
                    "{old} is no longer read: sign-in throttling is set with \
                     SIGN_IN_USERNAME_FAILURES, SIGN_IN_USERNAME_FORGET_SECS, \
                     SIGN_IN_ADDRESS_FAILURES and SIGN_IN_ADDRESS_FORGET_SECS (see the README)"
                );
            }
        }

        Ok(Self {
            production,
            startup_timeout: parse_secs("STARTUP_TIMEOUT_SECS", 60)?,
            database_url,
            database_max_connections: var("DATABASE_MAX_CONNECTIONS")
                .map(|v| v.parse())
                .transpose()
                .context("DATABASE_MAX_CONNECTIONS must be a number")?
                .unwrap_or(20),
            amqp_url: secret("AMQP_URL")?.unwrap_or_else(|| DEFAULT_AMQP_URL.to_owned()),
            smtp_url: secret("SMTP_URL")?,
            smtp_ca_file: var("SMTP_CA_FILE").map(PathBuf::from),
            smtp_allow_plaintext_auth: parse_bool("SMTP_ALLOW_PLAINTEXT_AUTH", false)?,
            mail_dir: var("MAIL_DIR")
                .unwrap_or_else(|| "mail-out".to_owned())
                .into(),
            public_base_url,
            bind_addr,
            allow_private_callbacks: parse_bool("ALLOW_PRIVATE_CALLBACKS", false)?,
            data_keys: keys.data,
            ssn_hash_keys: keys.ssn_hash,
            access_token_ttl: parse_secs("ACCESS_TOKEN_TTL_SECS", 3600)?,
            refresh_token_ttl: parse_secs("REFRESH_TOKEN_TTL_SECS", 14 * 24 * 3600)?,
            sign_in_username: ThrottleLimit {
                free_failures: parse_count("SIGN_IN_USERNAME_FAILURES", 5)?
                    .try_into()
                    .context("SIGN_IN_USERNAME_FAILURES is too large")?,
                forget: parse_secs("SIGN_IN_USERNAME_FORGET_SECS", 60)?,
            },
            sign_in_address: ThrottleLimit {
                free_failures: parse_count("SIGN_IN_ADDRESS_FAILURES", 20)?
                    .try_into()
                    .context("SIGN_IN_ADDRESS_FAILURES is too large")?,
                forget: parse_secs("SIGN_IN_ADDRESS_FORGET_SECS", 12)?,
            },
            ssn_writes: ThrottleLimit {
                free_failures: parse_count("SSN_WRITES_FREE", 5)?
                    .try_into()
                    .context("SSN_WRITES_FREE is too large")?,
                forget: parse_secs("SSN_WRITES_FORGET_SECS", 3600)?,
            },
            trusted_proxies: parse_proxies("TRUSTED_PROXIES")?,
            password_hash_concurrency: parse_positive("PASSWORD_HASH_CONCURRENCY", cores() as u64)?
                .try_into()
                .context("PASSWORD_HASH_CONCURRENCY is too large")?,
            password_hash_wait: parse_secs("PASSWORD_HASH_WAIT_SECS", 2)?,
            http_header_timeout: parse_secs("HTTP_HEADER_TIMEOUT_SECS", 30)?,
            http_max_connections: parse_positive("HTTP_MAX_CONNECTIONS", 4096)?
                .try_into()
                .context("HTTP_MAX_CONNECTIONS is too large")?,
            http_max_connections_per_address: parse_positive(
                "HTTP_MAX_CONNECTIONS_PER_ADDRESS",
                256,
            )?
            .try_into()
            .context("HTTP_MAX_CONNECTIONS_PER_ADDRESS is too large")?,
            section1_link_ttl: parse_secs("SECTION1_LINK_TTL_SECS", 14 * 24 * 3600)?,
            password_link_ttl: parse_secs("PASSWORD_LINK_TTL_SECS", 72 * 3600)?,
            auth_cache_ttl: match var("AUTH_CACHE_TTL_SECS").as_deref() {
                Some("0") => Duration::ZERO,
                _ => parse_secs("AUTH_CACHE_TTL_SECS", 5)?,
            },
            purge_interval: parse_secs("PURGE_INTERVAL_SECS", 600)?,
            retention_idempotency: parse_secs("RETENTION_IDEMPOTENCY_SECS", 24 * 3600)?,
            retention_processed_jobs: parse_secs("RETENTION_PROCESSED_JOBS_SECS", 30 * 24 * 3600)?,
            retention_outbox: parse_secs("RETENTION_OUTBOX_SECS", 7 * 24 * 3600)?,
        })
    }

    /// A configuration for tests: development keys and defaults, the given
    /// database, and `AMQP_URL` from the environment if set.
    pub fn for_tests(database_url: &str) -> Self {
        let mut c = Self::dev_defaults();
        database_url.clone_into(&mut c.database_url);
        if let Some(url) = var("AMQP_URL") {
            c.amqp_url = url;
        }
        c
    }

    fn dev_defaults() -> Self {
        let keys = Keys::development();
        Self {
            production: false,
            startup_timeout: Duration::from_secs(60),
            database_url: DEFAULT_DATABASE_URL.to_owned(),
            database_max_connections: 20,
            amqp_url: DEFAULT_AMQP_URL.to_owned(),
            smtp_url: None,
            smtp_ca_file: None,
            smtp_allow_plaintext_auth: false,
            mail_dir: "mail-out".into(),
            public_base_url: "http://127.0.0.1:8080".to_owned(),
            bind_addr: ([127, 0, 0, 1], 8080).into(),
            allow_private_callbacks: false,
            data_keys: keys.data,
            ssn_hash_keys: keys.ssn_hash,
            access_token_ttl: Duration::from_secs(3600),
            refresh_token_ttl: Duration::from_secs(14 * 24 * 3600),
            sign_in_username: ThrottleLimit {
                free_failures: 5,
                forget: Duration::from_secs(60),
            },
            sign_in_address: ThrottleLimit {
                free_failures: 20,
                forget: Duration::from_secs(12),
            },
            ssn_writes: ThrottleLimit {
                free_failures: 5,
                forget: Duration::from_secs(3600),
            },
            trusted_proxies: Vec::new(),
            password_hash_concurrency: cores(),
            password_hash_wait: Duration::from_secs(2),
            http_header_timeout: Duration::from_secs(30),
            http_max_connections: 4096,
            http_max_connections_per_address: 256,
            section1_link_ttl: Duration::from_secs(14 * 24 * 3600),
            password_link_ttl: Duration::from_secs(72 * 3600),
            auth_cache_ttl: Duration::from_secs(5),
            purge_interval: Duration::from_secs(600),
            retention_idempotency: Duration::from_secs(24 * 3600),
            retention_processed_jobs: Duration::from_secs(30 * 24 * 3600),
            retention_outbox: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_accept_every_usual_word() {
        for w in ["1", "true", "TRUE", "yes", "on", " On "] {
            assert_eq!(bool_word(w), Some(true), "{w}");
        }
        for w in ["0", "false", "No", "off"] {
            assert_eq!(bool_word(w), Some(false), "{w}");
        }
        for w in ["", "2", "enable", "truthy"] {
            assert_eq!(bool_word(w), None, "{w}");
        }
    }

    #[test]
    fn trusted_proxies_are_addresses_or_networks() {
        let name = "I9_TEST_TRUSTED_PROXIES_PARSE";
        std::env::set_var(name, " 10.0.0.0/8, 192.0.2.7 ,::1,");
        let nets = parse_proxies(name).unwrap();
        assert_eq!(
            nets,
            vec![
                "10.0.0.0/8".parse::<ipnet::IpNet>().unwrap(),
                "192.0.2.7/32".parse().unwrap(),
                "::1/128".parse().unwrap(),
            ]
        );
        std::env::set_var(name, "10.0.0.0/8, proxy.local");
        let e = parse_proxies(name).unwrap_err().to_string();
        assert!(e.contains("proxy.local"), "{e}");
        std::env::remove_var(name);
        assert!(parse_proxies(name).unwrap().is_empty());
    }

    #[test]
    fn a_proxy_network_of_every_address_is_refused() {
        for all in ["0.0.0.0/0", "::/0", "10.0.0.0/0"] {
            let e = parse_proxy("TRUSTED_PROXIES", all).unwrap_err().to_string();
            assert!(
                e.starts_with("TRUSTED_PROXIES: ") && e.contains("is every address"),
                "{all}: {e}"
            );
        }
        assert!(parse_proxy("TRUSTED_PROXIES", "0.0.0.0/1").is_ok());
        assert!(parse_proxy("TRUSTED_PROXIES", "0.0.0.0").is_ok());
    }

    #[test]
    fn a_prefix_length_out_of_range_is_named_as_such() {
        for (net, expect) in [
            (
                "10.0.0.0/33",
                "prefix length of 33, out of range: an IPv4 network's is 0 to 32",
            ),
            (
                "2001:db8::/129",
                "prefix length of 129, out of range: an IPv6 network's is 0 to 128",
            ),
        ] {
            let e = parse_proxy("TRUSTED_PROXIES", net).unwrap_err().to_string();
            assert!(e.contains(expect), "{net}: {e}");
        }
        for bad in ["10.0.0.0/x", "10.0.0/8", "proxy.local"] {
            let e = parse_proxy("TRUSTED_PROXIES", bad).unwrap_err().to_string();
            assert!(
                e.contains("must list IP addresses or networks"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn the_database_url_must_be_a_postgres_url() {
        for ok in [
            "postgres://u:p@db:5432/i9",
            "postgresql://db/i9?sslmode=verify-full&sslrootcert=/etc/ca.pem",
            "POSTGRES://db/i9",
        ] {
            assert!(check_database_url(ok).is_ok(), "{ok}");
        }
        for (bad, expect) in [
            ("mysql://u:hunter2@db/i9", "not mysql://"),
            ("http://u:hunter2@db/i9", "not http://"),
            (
                "db:5432/i9 hunter2",
                "(postgres://user:password@host:5432/database)",
            ),
        ] {
            let e = check_database_url(bad).unwrap_err().to_string();
            assert!(
                e.starts_with("DATABASE_URL must be a postgres:// or postgresql:// URL")
                    && e.contains(expect),
                "{bad}: {e}"
            );
            assert!(!e.contains("hunter2"), "{e}");
        }
    }
}
