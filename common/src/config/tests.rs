use super::*;
use std::cell::RefCell;

const K1: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
const K2: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=";

fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn read_err(binary: Binary, pairs: &[(&str, &str)]) -> String {
    format!("{:#}", read(binary, &vars(pairs)).unwrap_err())
}

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
    let name = "TRUSTED_PROXIES";
    let nets = parse_proxies(name, " 10.0.0.0/8, 192.0.2.7 ,::1,").unwrap();
    assert_eq!(
        nets,
        vec![
            "10.0.0.0/8".parse::<ipnet::IpNet>().unwrap(),
            "192.0.2.7/32".parse().unwrap(),
            "::1/128".parse().unwrap(),
        ]
    );
    let e = parse_proxies(name, "10.0.0.0/8, proxy.local")
        .unwrap_err()
        .to_string();
    assert!(e.contains("proxy.local"), "{e}");
    let dev = [("APP_ENV", "development")];
    let c = read(Binary::Api, &vars(&dev)).unwrap().config;
    assert!(c.trusted_proxies.is_empty());
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
        "postgresql://db/i9?sslmode=verify-full",
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

#[test]
fn the_defaults_are_those_of_the_table() {
    let s = read(Binary::Worker, &vars(&[("APP_ENV", "development")])).unwrap();
    let c = &s.config;
    assert_eq!(c.database_url.expose_secret(), DEFAULT_DATABASE_URL);
    assert_eq!(c.amqp_url.expose_secret(), DEFAULT_AMQP_URL);
    assert_eq!(c.amqp_prefix, "i9");
    assert_eq!(c.database_max_connections, 20);
    assert_eq!(c.startup_timeout, Duration::from_secs(60));
    assert_eq!(c.bind_addr, ([127, 0, 0, 1], 8080).into());
    assert_eq!(c.public_base_url, "http://127.0.0.1:8080");
    assert_eq!(c.mail_dir, PathBuf::from("mail-out"));
    assert!(c.smtp_url.is_none() && !c.smtp_allow_plaintext_auth && !c.allow_private_callbacks);
    assert_eq!(c.refresh_token_ttl, Duration::from_secs(14 * 24 * 3600));
    assert_eq!(c.auth_cache_ttl, Duration::from_secs(5));
    assert_eq!(
        c.sign_in_address,
        ThrottleLimit {
            free_failures: 20,
            forget: Duration::from_secs(12)
        }
    );
    assert_eq!(c.password_hash_concurrency, cores());
    assert_eq!(c.http_max_connections_per_address, 256);
    assert_eq!(
        c.retention_processed_jobs,
        Duration::from_secs(30 * 24 * 3600)
    );
    assert_eq!(
        c.log,
        LogSettings {
            filter: None,
            json: false,
            otlp_endpoint: None,
        }
    );
    // The retry settings' defaults are the policies' constants.
    assert_eq!(s.worker.retry, RetryPolicy::JOBS);
    assert_eq!(s.worker.callback_retry, RetryPolicy::CALLBACKS);
    assert_eq!(s.worker.kinds, JobKind::ALL.to_vec());
    assert_eq!(s.worker.prefetch, 8);
    assert!(!s.worker.no_relay && !s.api.no_relay);
    assert!(!c.production);
}

/// Records which variables a read asks for.
struct Recording(HashMap<String, String>, RefCell<Vec<String>>);

impl Source for Recording {
    fn get(&self, name: &str) -> Option<String> {
        self.1.borrow_mut().push(name.to_owned());
        self.0.get(name).cloned()
    }
}

#[test]
fn every_variable_of_the_table_is_read_by_some_binary_and_only_those() {
    let mut asked = Vec::new();
    for binary in [Binary::Api, Binary::Worker, Binary::Admin] {
        let source = Recording(vars(&[("APP_ENV", "development")]), RefCell::default());
        read(binary, &source).unwrap();
        for name in source.1.take() {
            let spec = VARS.iter().find(|v| v.name == name);
            let retired = RETIRED.iter().any(|(old, _)| *old == name);
            let file = name
                .strip_suffix("_FILE")
                .is_some_and(|n| VARS.iter().any(|v| v.secret && v.name == n));
            assert!(
                spec.is_some_and(|v| v.readers.include(binary)) || retired || file,
                "{binary:?} read {name}"
            );
            asked.push(name);
        }
    }
    for v in VARS {
        assert!(
            asked.iter().any(|a| a == v.name),
            "{} is never read",
            v.name
        );
    }
}

#[test]
fn the_readme_table_lists_every_variable_with_its_default() {
    let readme = include_str!("../../../README.md");
    let table = readme
        .split("## Configuration")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap();
    let rows: Vec<(Vec<&str>, &str)> = table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            let names = cells[1]
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|n| {
                    n.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                })
                .collect();
            (names, cells[2])
        })
        .collect();
    let documented: Vec<&str> = rows.iter().flat_map(|(n, _)| n.iter().copied()).collect();
    for v in VARS {
        let row = rows.iter().find(|(names, _)| names.contains(&v.name));
        let Some((_, default)) = row else {
            panic!("{} is not in the README's Configuration table", v.name)
        };
        if v.secret {
            let line = table
                .lines()
                .find(|l| l.starts_with(&format!("| `{}`", v.name)))
                .unwrap_or_default();
            assert!(
                line.contains("_FILE"),
                "{}: say it may be given as a file",
                v.name
            );
        }
        if let Text(t) = v.default {
            assert!(
                default.contains(&format!("`{t}`")),
                "{}: the README's default {default:?} is not `{t}`",
                v.name
            );
        }
    }
    for name in documented.into_iter().filter(|n| *n != "_FILE") {
        let known = VARS.iter().any(|v| v.name == name)
            || RETIRED.iter().any(|(old, _)| *old == name)
            || table
                .lines()
                .any(|l| l.contains(&format!("`{name}`")) && l.contains("Tests only"));
        assert!(known, "the README documents {name}, which no binary reads");
    }
}

#[test]
fn the_debug_output_of_a_configuration_holds_no_secret() {
    let dir = std::env::temp_dir().join(format!("i9-config-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&dir).unwrap();
    let key_file = dir.join("hash-keys");
    std::fs::write(&key_file, format!("3:{K2}\n")).unwrap();
    let s = read(
        Binary::Worker,
        &vars(&[
            (
                "DATABASE_URL",
                "postgres://i9:db-pass-7Qx@db.internal:5432/i9?sslmode=verify-full",
            ),
            (
                "AMQP_URL",
                "amqps://mq-user:mq-pass-9Zr@mq.internal:5671/i9",
            ),
            ("SMTP_URL", "smtps://mailer:smtp-pass-4Kd@relay.example:465"),
            ("DATA_ENCRYPTION_KEYS", &format!("2:{K1}")),
            ("SSN_HASH_KEYS_FILE", key_file.to_str().unwrap()),
            ("EVERIFY_ADAPTER", "simulator"),
        ]),
    )
    .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let c = &s.config;
    assert!(c.production);
    // The secrets are there, behind expose_secret().
    assert!(c.database_url.expose_secret().contains("db-pass-7Qx"));
    assert!(c
        .smtp_url
        .as_ref()
        .unwrap()
        .expose_secret()
        .contains("smtp-pass-4Kd"));
    assert_eq!(c.data_keys.exposed(), [(2, [1u8; 32])]);
    assert_eq!(c.ssn_hash_keys.exposed(), [(3, vec![2u8; 32])]);
    for shown in [format!("{c:?}"), format!("{c:#?}"), format!("{s:?}")] {
        for secret in [
            "db-pass-7Qx",
            "mq-pass-9Zr",
            "smtp-pass-4Kd",
            "mq-user",
            "mailer:",
            "db.internal",
            "AQEB",
            "AgIC",
            "1, 1, 1",
            "2, 2, 2",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        // What is not secret is still shown.
        assert!(
            shown.contains("public_base_url") && shown.contains("REDACTED"),
            "{shown}"
        );
        assert!(
            shown.contains("KeyRing(ids [2])") && shown.contains("KeyRing(ids [3])"),
            "{shown}"
        );
    }
}

#[test]
fn every_invalid_value_is_named_at_once_never_a_secrets_value() {
    let e = read_err(
        Binary::Api,
        &[
            ("APP_ENV", "development"),
            ("DATABASE_URL", "mysql://u:hunter2@db/i9"),
            ("AMQP_URL", "http://guest:hunter3@mq"),
            ("ACCESS_TOKEN_TTL_SECS", "soon"),
            ("ALLOW_PRIVATE_CALLBACKS", "perhaps"),
            ("HTTP_MAX_CONNECTIONS", "0"),
            ("BIND_ADDR", "localhost"),
            ("LOG_FORMAT", "xml"),
            ("SIGN_IN_WINDOW_SECS", "60"),
        ],
    );
    for expect in [
        "DATABASE_URL must be a postgres:// or postgresql:// URL, not mysql://",
        "AMQP_URL must be an amqp:// or amqps:// URL, not http://",
        "ACCESS_TOKEN_TTL_SECS must be a positive number of seconds",
        "ALLOW_PRIVATE_CALLBACKS must be true or false",
        "HTTP_MAX_CONNECTIONS must be at least 1",
        "BIND_ADDR must be an IP address and port, e.g. 127.0.0.1:8080",
        "LOG_FORMAT must be text or json",
        "SIGN_IN_WINDOW_SECS is no longer read",
    ] {
        assert!(e.contains(expect), "{expect}: {e}");
    }
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(!e.contains("hunter2") && !e.contains("hunter3"), "{e}");
    // Keys are reported with the rest.
    let e = read_err(
        Binary::Admin,
        &[("STARTUP_TIMEOUT_SECS", "x"), ("LOG_FORMAT", "xml")],
    );
    assert!(
        e.contains("no keys: set DATA_ENCRYPTION_KEYS") && e.contains("LOG_FORMAT"),
        "{e}"
    );
    // A secret's file that cannot be read is named, with its path.
    let e = read_err(
        Binary::Admin,
        &[
            ("APP_ENV", "development"),
            ("DATABASE_URL_FILE", "/nonexistent/i9-db-url"),
        ],
    );
    assert!(
        e.starts_with("reading DATABASE_URL_FILE (/nonexistent/i9-db-url)"),
        "{e}"
    );
}

#[test]
fn a_binary_reads_only_its_own_settings() {
    let bad_worker = [
        ("APP_ENV", "development"),
        ("WORKER_KINDS", ","),
        ("SMTP_URL", "smtp://u:pw@relay.example"),
    ];
    assert!(read(Binary::Api, &vars(&bad_worker)).is_ok());
    let e = read_err(Binary::Worker, &bad_worker);
    assert!(
        e.starts_with("WORKER_KINDS (or --kinds) names no job kind")
            && e.contains("SMTP_URL carries a user name and password but no TLS"),
        "{e}"
    );
    let bad_api = [("APP_ENV", "development"), ("TRUSTED_PROXIES", "0.0.0.0/0")];
    assert!(read(Binary::Worker, &vars(&bad_api)).is_ok());
    assert!(read_err(Binary::Api, &bad_api).contains("is every address"));
}

#[test]
fn worker_settings_are_read_and_checked() {
    let dev = ("APP_ENV", "development");
    let s = read(
        Binary::Worker,
        &vars(&[
            dev,
            ("WORKER_KINDS", " send_login_email,create_i9 , create_i9"),
            ("CALLBACK_MAX_ATTEMPTS", "4"),
            ("CALLBACK_RETRY_BASE_SECS", "1"),
            ("CALLBACK_RETRY_CAP_SECS", "2"),
            ("WORKER_NO_RELAY", "yes"),
        ]),
    )
    .unwrap()
    .worker;
    assert_eq!(s.kinds, [JobKind::CreateI9, JobKind::SendLoginEmail]);
    assert_eq!(
        (
            s.callback_retry.max_attempts,
            s.callback_retry.base,
            s.callback_retry.cap
        ),
        (4, Duration::from_secs(1), Duration::from_secs(2))
    );
    assert_eq!(s.callback_retry.jitter, RetryPolicy::CALLBACKS.jitter);
    assert!(s.no_relay);
    let e = read_err(
        Binary::Worker,
        &[
            dev,
            ("CALLBACK_RETRY_BASE_SECS", "10"),
            ("CALLBACK_RETRY_CAP_SECS", "2"),
        ],
    );
    assert!(
        e.contains("CALLBACK_RETRY_BASE_SECS (10) must not exceed CALLBACK_RETRY_CAP_SECS (2)"),
        "{e}"
    );
    for (name, value) in [
        ("JOB_MAX_ATTEMPTS", "0"),
        ("JOB_RETRY_BASE_SECS", "0"),
        ("CALLBACK_RETRY_CAP_SECS", "-1"),
        ("JOB_RETRY_CAP_SECS", "soon"),
        ("WORKER_PREFETCH", "70000"),
        ("WORKER_KINDS", "create_i9,nope"),
    ] {
        let e = read_err(Binary::Worker, &[dev, (name, value)]);
        assert!(e.starts_with(name), "{name}={value}: {e}");
    }
    // The command line stands in for the variable.
    let env = vars(&[dev, ("WORKER_KINDS", "create_i9")]);
    let args = WithArgs {
        args: vec![("WORKER_KINDS", "post_status_callback".into())],
        rest: &env,
    };
    let s = read(Binary::Worker, &args).unwrap().worker;
    assert_eq!(s.kinds, [JobKind::PostStatusCallback]);
}

#[test]
fn smtp_urls_take_lettres_forms_and_keep_passwords_off_plain_connections() {
    let check = |url: &str, allow: bool, ca: bool| {
        SmtpSecurity::check(&SecretString::from(url.to_owned()), allow, ca)
    };
    for (url, security) in [
        ("smtp://mailpit:1025", SmtpSecurity::Plain),
        ("smtps://u:p@relay.example", SmtpSecurity::Implicit),
        (
            "smtp://u:p@relay.example:587?tls=required",
            SmtpSecurity::StartTls,
        ),
        (
            "smtp://relay.example?tls=opportunistic",
            SmtpSecurity::Opportunistic,
        ),
    ] {
        assert_eq!(
            check(url, false, false).map(|(s, _)| s),
            Ok(security),
            "{url}"
        );
    }
    let e = check("smtp://u:s3cret@relay.example", false, false).unwrap_err();
    assert!(
        e.contains("SMTP_ALLOW_PLAINTEXT_AUTH=true") && !e.contains("s3cret"),
        "{e}"
    );
    assert!(check("smtp://u:s3cret@relay.example", true, false).is_ok());
    let e = check("smtp://relay.example", false, true).unwrap_err();
    assert!(
        e.contains("SMTP_CA_FILE is set but SMTP_URL uses no TLS"),
        "{e}"
    );
}

#[test]
fn the_public_base_url_is_an_absolute_http_url_that_links_are_appended_to() {
    let dev = ("APP_ENV", "development");
    for (value, base) in [
        ("https://i9.example.com", "https://i9.example.com"),
        (" https://i9.example.com/ ", "https://i9.example.com"),
        ("https://example.com/i9/", "https://example.com/i9"),
        ("https://example.com/i9//", "https://example.com/i9"),
        (
            "HTTP://I9.Example.com:8443/i9",
            "http://i9.example.com:8443/i9",
        ),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ] {
        for binary in [Binary::Api, Binary::Worker, Binary::Admin] {
            let c = read(binary, &vars(&[dev, ("PUBLIC_BASE_URL", value)]))
                .unwrap()
                .config;
            assert_eq!(c.public_base_url, base, "{value}");
            assert_eq!(
                crate::links::section1(&c.public_base_url, "tok"),
                format!("{base}/i9/section1/tok"),
                "{value}"
            );
        }
    }
    for (bad, expect) in [
        (
            "i9.example.com",
            "must be an absolute URL starting with https:// (or http://), e.g. https://i9.example.com, or https://example.com/i9 under a path prefix, not \"i9.example.com\"",
        ),
        ("ftp://i9.example.com", "must be an https:// (or http://) URL, not ftp://"),
        ("https://", "has no host after https://"),
        ("https:///i9.example.com", "has no host after https://"),
        ("https://:443", "is not a URL (empty host)"),
        ("https://u:pw@i9.example.com", "must not carry a user name or password"),
        ("https://u@i9.example.com", "must not carry a user name or password"),
        ("https://i9.example.com?x=1", "must not have a query (?…) or fragment (#…)"),
        ("https://i9.example.com/?", "must not have a query"),
        ("https://i9.example.com/i9#top", "or fragment (#…)"),
    ] {
        let e = read_err(Binary::Api, &[dev, ("PUBLIC_BASE_URL", bad)]);
        assert!(
            e.starts_with("PUBLIC_BASE_URL ") && e.contains(expect),
            "{bad}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(!e.contains("pw"), "{e}");
    }
}

#[test]
fn a_log_filter_word_that_is_not_a_level_is_refused_not_read_as_a_target() {
    let dev = ("APP_ENV", "development");
    for ok in [
        "info",
        "WARN",
        " Debug ",
        "off",
        "error,sqlx=warn",
        "info,lapin=off,i9_api=debug",
        "warn,[request]=info",
        "i9_common::relay=trace,",
    ] {
        let c = read(Binary::Worker, &vars(&[dev, ("RUST_LOG", ok)]))
            .unwrap()
            .config;
        assert_eq!(c.log.filter.as_deref(), Some(ok.trim()), "{ok}");
    }
    for (bad, word) in [
        ("warning", "warning"),
        ("inf", "inf"),
        ("loud", "loud"),
        ("sqlx=warn, Verbose", "Verbose"),
    ] {
        for binary in [Binary::Api, Binary::Worker, Binary::Admin] {
            let e = read_err(binary, &[dev, ("RUST_LOG", bad)]);
            assert_eq!(
                e,
                format!(
                    "RUST_LOG: {word:?} is not a level: a level is off, error, warn, info, \
                     debug or trace (a module's level is module=level), e.g. info,sqlx=warn"
                ),
                "{bad}"
            );
        }
    }
    // What EnvFilter itself cannot read is refused as before.
    let e = read_err(Binary::Api, &[dev, ("RUST_LOG", "sqlx=loud")]);
    assert!(e.starts_with("RUST_LOG is not a log filter"), "{e}");
}

#[test]
fn the_default_log_filters_are_those_the_docs_and_compose_say() {
    use crate::telemetry::{ADMIN_DEFAULT_FILTER, SERVICES_DEFAULT_FILTER};
    let services = format!("`{SERVICES_DEFAULT_FILTER}`");
    let admin = format!("`{ADMIN_DEFAULT_FILTER}`");
    for filter in [SERVICES_DEFAULT_FILTER, ADMIN_DEFAULT_FILTER] {
        assert_eq!(parse_log_filter("RUST_LOG", filter).unwrap(), filter);
    }
    let spec = VARS.iter().find(|v| v.name == "RUST_LOG").unwrap();
    assert_eq!(
        spec.default,
        Computed("info,sqlx=warn,lapin=off; i9-admin: warn,lapin=off")
    );
    let Computed(text) = spec.default else {
        unreachable!()
    };
    assert!(
        text.starts_with(SERVICES_DEFAULT_FILTER) && text.ends_with(ADMIN_DEFAULT_FILTER),
        "{text}"
    );
    let readme = include_str!("../../../README.md");
    let row = readme
        .lines()
        .find(|l| l.starts_with("| `RUST_LOG`"))
        .unwrap();
    let default = row.split('|').nth(2).unwrap();
    assert!(
        default.contains(&services) && default.contains(&admin),
        "{default}"
    );
    let operations = include_str!("../../../docs/operations.md");
    let logs = operations.split("\n## Logs").nth(1).unwrap();
    assert!(logs.contains(&services) && logs.contains(&admin));
    // The local stack runs on the default: a RUST_LOG there that turned
    // lapin back on would log its shutdown as ERROR lines.
    let compose = include_str!("../../../docker-compose.yml");
    for line in compose.lines().map(str::trim) {
        if line.starts_with('#') || !line.contains("RUST_LOG") {
            continue;
        }
        let value = line
            .split_once(':')
            .map(|(_, v)| v.trim().trim_matches('"'))
            .unwrap_or_default();
        assert_eq!(value, SERVICES_DEFAULT_FILTER, "docker-compose.yml: {line}");
    }
}

#[test]
fn a_secret_set_both_as_a_value_and_as_a_file_is_refused_naming_both() {
    let dir = std::env::temp_dir().join(format!("i9-config-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let hash_file = file("hash", &format!("3:{K2}\n"));
    let data_file = file("data", &format!("2:{K1}\n"));
    let url_file = file("url", "postgres://i9:hunter2@db/i9\n");
    let dev = ("APP_ENV", "development");
    for (pairs, expect) in [
        (
            vec![
                dev,
                ("DATABASE_URL", "postgres://db/i9"),
                ("DATABASE_URL_FILE", "/nonexistent/i9-db-url"),
            ],
            "set DATABASE_URL or DATABASE_URL_FILE, not both",
        ),
        (
            vec![
                dev,
                ("DATABASE_URL", "postgres://db/i9"),
                ("DATABASE_URL_FILE", url_file.as_str()),
            ],
            "set DATABASE_URL or DATABASE_URL_FILE, not both",
        ),
        (
            vec![
                dev,
                ("SSN_HASH_KEYS", &format!("1:{K1}")),
                ("SSN_HASH_KEYS_FILE", hash_file.as_str()),
            ],
            "set SSN_HASH_KEYS or SSN_HASH_KEYS_FILE, not both",
        ),
        // A ring and its single key, as files or not: the variables set are named.
        (
            vec![
                dev,
                ("DATA_ENCRYPTION_KEYS_FILE", data_file.as_str()),
                ("DATA_ENCRYPTION_KEY", K2),
            ],
            "set DATA_ENCRYPTION_KEYS_FILE or DATA_ENCRYPTION_KEY, not both",
        ),
        (
            vec![
                dev,
                ("SSN_HASH_KEYS", &format!("1:{K1}")),
                ("SSN_HASH_KEY_FILE", hash_file.as_str()),
            ],
            "set SSN_HASH_KEYS or SSN_HASH_KEY_FILE, not both",
        ),
        (
            vec![
                dev,
                ("SSN_HASH_KEYS", &format!("1:{K1}")),
                ("SSN_HASH_KEY", K2),
            ],
            "set SSN_HASH_KEYS or SSN_HASH_KEY, not both",
        ),
    ] {
        for binary in [Binary::Api, Binary::Worker, Binary::Admin] {
            let e = read_err(binary, &pairs);
            assert_eq!(e, expect, "{pairs:?}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_empty_amqp_prefix_is_refused_not_read_as_the_default() {
    let dev = ("APP_ENV", "development");
    for empty in ["", "  "] {
        for binary in [Binary::Api, Binary::Worker, Binary::Admin] {
            let e = read_err(binary, &[dev, ("AMQP_PREFIX", empty)]);
            assert!(
                e.starts_with(&format!("AMQP_PREFIX is set but empty ({empty:?})"))
                    && e.contains("it must be non-empty when set"),
                "{binary:?} {empty:?}: {e}"
            );
        }
    }
    let c = read(Binary::Worker, &vars(&[dev, ("AMQP_PREFIX", "i9-blue")]))
        .unwrap()
        .config;
    assert_eq!(c.amqp_prefix, "i9-blue");
    // Every other variable: empty is unset.
    let c = read(
        Binary::Worker,
        &vars(&[dev, ("DATABASE_MAX_CONNECTIONS", ""), ("MAIL_DIR", " ")]),
    )
    .unwrap()
    .config;
    assert_eq!(c.database_max_connections, 20);
    assert_eq!(c.mail_dir, PathBuf::from("mail-out"));
}

#[test]
fn a_certificate_file_the_database_url_names_must_be_readable() {
    let dir = std::env::temp_dir().join(format!("i9-config-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(
        &ca,
        "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let ca = ca.to_str().unwrap();
    let folder = dir.to_str().unwrap();
    let base = "postgres://i9:hunter2@db.internal:5432/i9?sslmode=verify-full";
    for ok in [
        format!("{base}&sslrootcert={ca}"),
        format!("{base}&sslrootcert={ca}&sslcert={ca}&sslkey={ca}"),
        base.to_owned(),
        "postgres://db/i9?sslrootcert=-----BEGIN%20CERTIFICATE-----x-----END%20CERTIFICATE-----"
            .to_owned(),
    ] {
        assert!(check_database_url(&ok).is_ok(), "{ok}");
    }
    for (url, expect) in [
        (
            format!("{base}&sslrootcert=/nonexistent.pem"),
            "DATABASE_URL: sslrootcert=/nonexistent.pem cannot be read (No such file or directory",
        ),
        (
            format!("{base}&sslrootcert={ca}&sslkey=/nonexistent/key.pem"),
            "DATABASE_URL: sslkey=/nonexistent/key.pem cannot be read",
        ),
        (
            format!("{base}&ssl-ca={folder}"),
            &format!("DATABASE_URL: ssl-ca={folder} cannot be read (Is a directory"),
        ),
    ] {
        let e = check_database_url(&url).unwrap_err().to_string();
        assert!(
            e.starts_with(expect)
                && e.ends_with(
                    "name a readable PEM file (docs/operations.md, \"TLS to Postgres\")"
                ),
            "{url}: {e}"
        );
        assert!(!e.contains("hunter2") && !e.contains("db.internal"), "{e}");
    }
    // Read with the rest, at start.
    let e = read_err(
        Binary::Api,
        &[
            ("APP_ENV", "development"),
            (
                "DATABASE_URL",
                &format!("{base}&sslrootcert=/nonexistent.pem"),
            ),
        ],
    );
    assert!(
        e.starts_with("DATABASE_URL: sslrootcert=/nonexistent.pem cannot be read"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_keyless_configuration_reads_no_key_and_checks_the_rest() {
    // Outside development, without keys: read all the same.
    let c = KeylessConfig::read(&vars(&[("AMQP_PREFIX", "i9-blue")])).unwrap();
    assert_eq!(c.topology().dead_letter_queue(), "i9-blue.dead");
    assert_eq!(c.amqp_url().expose_secret(), DEFAULT_AMQP_URL);
    // A key that does not read is not looked at; everything else is.
    let e = KeylessConfig::read(&vars(&[
        ("DATA_ENCRYPTION_KEY", "not a key"),
        ("AMQP_URL", "http://guest:hunter3@mq"),
    ]))
    .err()
    .unwrap()
    .to_string();
    assert_eq!(
        e,
        "AMQP_URL must be an amqp:// or amqps:// URL, not http://"
    );
    // The full read needs them.
    assert!(read_err(Binary::Admin, &[]).contains("no keys: set DATA_ENCRYPTION_KEYS"));
}

/// The README's table says which binaries read a variable as [`VARS`] does:
/// its meaning starts "`i9-api` only: ", "`i9-worker` only: " or "`i9-api`
/// and `i9-worker` only: ", or with none of these when every binary reads
/// it. (The test of the names and defaults above never looked at this.)
#[test]
fn the_readme_table_marks_which_binaries_read_each_variable() {
    let readme = include_str!("../../../README.md");
    let table = readme
        .split("## Configuration")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap();
    let marker = |readers: Readers| match readers {
        Readers::All => None,
        Readers::Api => Some("`i9-api` only: "),
        Readers::Worker => Some("`i9-worker` only: "),
        Readers::Services => Some("`i9-api` and `i9-worker` only: "),
    };
    let mut wrong = Vec::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let meaning = cells[3];
        if meaning.starts_with("Tests only") {
            continue;
        }
        let names: Vec<&str> = cells[1].split('`').skip(1).step_by(2).collect();
        for name in names {
            let Some(v) = VARS.iter().find(|v| v.name == name) else {
                continue;
            };
            let ok = match marker(v.readers) {
                Some(m) => meaning.starts_with(m),
                None => !meaning.starts_with("`i9-"),
            };
            if !ok {
                wrong.push(format!(
                    "{name} ({:?}): {}",
                    v.readers,
                    marker(v.readers).unwrap_or("no marker")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "README's markers:\n{}", wrong.join("\n"));
}

#[test]
fn messages_name_the_option_an_address_and_the_case_rule() {
    let dev = ("APP_ENV", "development");
    // A value given as an option: the error names it beside its variable.
    let args = WithArgs {
        args: vec![("WORKER_PREFETCH", "0".into())],
        rest: &vars(&[dev]),
    };
    let e = format!("{:#}", read(Binary::Worker, &args).unwrap_err());
    assert_eq!(e, "WORKER_PREFETCH (or --prefetch) must be at least 1");
    let e = read_err(Binary::Worker, &[dev, ("JOB_MAX_ATTEMPTS", "0")]);
    assert_eq!(
        e,
        "JOB_MAX_ATTEMPTS (or --job-max-attempts) must be at least 1"
    );
    let e = read_err(
        Binary::Worker,
        &[
            dev,
            ("JOB_RETRY_BASE_SECS", "10"),
            ("JOB_RETRY_CAP_SECS", "2"),
        ],
    );
    assert_eq!(
        e,
        "JOB_RETRY_BASE_SECS (10) must not exceed JOB_RETRY_CAP_SECS (2) (or \
         --job-retry-base-secs and --job-retry-cap-secs)"
    );
    let e = read_err(Binary::Api, &[dev, ("API_NO_RELAY", "maybe")]);
    assert!(
        e.starts_with("API_NO_RELAY (or --no-relay) must be true or false"),
        "{e}"
    );
    // A variable without an option: its name alone.
    let e = read_err(Binary::Api, &[dev, ("HTTP_MAX_CONNECTIONS", "0")]);
    assert_eq!(e, "HTTP_MAX_CONNECTIONS must be at least 1");
    // A host name is not an address.
    for bad in ["localhost:8095", "i9.internal:80", "127.0.0.1"] {
        let e = read_err(Binary::Api, &[dev, ("BIND_ADDR", bad)]);
        assert_eq!(
            e,
            format!(
                "BIND_ADDR must be an IP address and port, e.g. 127.0.0.1:8080 or [::]:8080 (not \
                 a host name such as localhost), not {bad:?}"
            )
        );
    }
    let c = read(Binary::Api, &vars(&[dev, ("BIND_ADDR", "[::1]:8095")]))
        .unwrap()
        .config;
    assert_eq!(c.bind_addr, "[::1]:8095".parse().unwrap());
    // Words are read in any case (README, "Configuration").
    for (format, json) in [("JSON", true), ("Text", false), (" json ", true)] {
        let c = read(Binary::Api, &vars(&[dev, ("LOG_FORMAT", format)]))
            .unwrap()
            .config;
        assert_eq!(c.log.json, json, "{format}");
    }
    // A key id too large for an id says so.
    let e = read_err(
        Binary::Admin,
        &[dev, ("DATA_ENCRYPTION_KEYS", &format!("4294967296:{K1}"))],
    );
    assert_eq!(
        e,
        "DATA_ENCRYPTION_KEYS: entry 1 has key id 4294967296, out of range: ids are 1 to \
         4294967295"
    );
}

/// Expiring-document reminders (docs/reminders.md): the thresholds are read
/// widest first, and a bad list stops the worker naming the variable.
#[test]
fn reminder_thresholds_are_read_and_checked() {
    let dev = ("APP_ENV", "development");
    let c = read(Binary::Worker, &vars(&[dev])).unwrap().config;
    assert_eq!(c.reminder_thresholds.days(), [90, 30, 7]);
    assert_eq!(c.reminder_interval, Duration::from_secs(3600));
    let c = read(
        Binary::Worker,
        &vars(&[
            dev,
            ("REMINDER_THRESHOLDS_DAYS", "14, 60"),
            ("REMINDER_INTERVAL_SECS", "30"),
        ]),
    )
    .unwrap()
    .config;
    assert_eq!(c.reminder_thresholds.days(), [60, 14]);
    assert_eq!(c.reminder_interval, Duration::from_secs(30));
    for bad in ["30,30", "soon", "-7", "90,,7"] {
        let e = read_err(Binary::Worker, &[dev, ("REMINDER_THRESHOLDS_DAYS", bad)]);
        assert!(e.contains("REMINDER_THRESHOLDS_DAYS: "), "{bad}: {e}");
    }
    let e = read_err(Binary::Worker, &[dev, ("REMINDER_INTERVAL_SECS", "0")]);
    assert!(e.contains("REMINDER_INTERVAL_SECS"), "{e}");
}

/// E-Verify cases (docs/everify.md, decision 12): the simulator by default in
/// development; outside it the adapter must be chosen, naming the variable;
/// `e-verify` is not built yet.
#[test]
fn the_everify_adapter_is_chosen_outside_development() {
    let dev = ("APP_ENV", "development");
    let c = read(Binary::Worker, &vars(&[dev])).unwrap().config;
    assert_eq!(
        c.everify_adapter,
        crate::domain::everify::ProgramName::Simulator
    );
    assert_eq!(c.everify_sim.step, Duration::from_secs(2));
    assert_eq!(c.everify_sim.unavailable_retries, 3);
    assert_eq!(c.everify_poll, Duration::from_secs(60));
    let c = read(
        Binary::Worker,
        &vars(&[
            dev,
            ("EVERIFY_SIM_STEP_SECS", "1"),
            ("EVERIFY_POLL_SECS", "5"),
            ("EVERIFY_SIM_UNAVAILABLE_RETRIES", "0"),
        ]),
    )
    .unwrap()
    .config;
    assert_eq!(c.everify_sim.step, Duration::from_secs(1));
    assert_eq!(c.everify_poll, Duration::from_secs(5));
    assert_eq!(c.everify_sim.unavailable_retries, 0);
    for bad in [
        ("EVERIFY_ADAPTER", "magic"),
        ("EVERIFY_ADAPTER", "e-verify"),
    ] {
        let e = read_err(Binary::Worker, &[dev, bad]);
        assert!(e.contains("EVERIFY_ADAPTER"), "{e}");
    }
    let e = read_err(Binary::Api, &[("APP_ENV", "production")]);
    assert!(
        e.contains("EVERIFY_ADAPTER must be set outside development"),
        "{e}"
    );
    let e = read_err(Binary::Worker, &[dev, ("EVERIFY_POLL_SECS", "0")]);
    assert!(e.contains("EVERIFY_POLL_SECS"), "{e}");
}

/// E-Verify's day is the U.S. Eastern date, moved by `CLOCK_OFFSET_DAYS` as
/// `today` is (docs/everify.md, "Which day (7)"). The day may turn during the
/// test: it is the moved Eastern date before the call or the one after.
#[test]
fn everify_today_is_the_eastern_date_moved_by_the_offset() {
    let mut config = Config::for_tests("");
    for offset in [0, 10, -3] {
        config.clock_offset_days = offset;
        let moved = |d: chrono::NaiveDate| d + chrono::TimeDelta::days(offset);
        let before = moved(crate::domain::everify::eastern_date(chrono::Utc::now()));
        let got = config.everify_today();
        let after = moved(crate::domain::everify::eastern_date(chrono::Utc::now()));
        assert!(before <= got && got <= after, "{offset}: {got}");
        let utc = config.today();
        assert!(
            got <= utc && utc - got <= chrono::TimeDelta::days(1),
            "{offset}: Eastern {got}, UTC {utc}"
        );
    }
}

#[test]
fn the_otlp_endpoint_is_an_http_base_url_without_credentials_read_by_the_services_alone() {
    let dev = ("APP_ENV", "development");
    let name = "OTEL_EXPORTER_OTLP_ENDPOINT";
    for (set, read_as) in [
        ("http://collector:4318", "http://collector:4318"),
        (" https://otel.example/base/ ", "https://otel.example/base"),
    ] {
        for binary in [Binary::Api, Binary::Worker] {
            let c = read(binary, &vars(&[dev, (name, set)])).unwrap().config;
            assert_eq!(c.log.otlp_endpoint.as_deref(), Some(read_as), "{set}");
        }
        // i9-admin exports nothing.
        let c = read(Binary::Admin, &vars(&[dev, (name, set)]))
            .unwrap()
            .config;
        assert_eq!(c.log.otlp_endpoint, None);
    }
    let unset = read(Binary::Api, &vars(&[dev])).unwrap().config;
    assert_eq!(unset.log.otlp_endpoint, None);
    for (bad, says) in [
        ("collector:4318", "must be an http:// or https:// URL"),
        (
            "grpc://collector:4317",
            "must be an http:// or https:// URL",
        ),
        (
            "grpc://u:pw@collector:4317",
            "must be an http:// or https:// URL",
        ),
        ("http://user:pw@collector:4318", "user name or password"),
        ("http://collector:4318/?x=1", "query or fragment"),
    ] {
        let e = read_err(Binary::Worker, &[dev, (name, bad)]);
        assert!(e.contains(name) && e.contains(says), "{bad}: {e}");
        assert!(!e.contains("pw@"), "{e}");
    }
}
