//! Every setting of `i9-api`, `i9-worker` and `i9-admin`, read from the
//! environment in this one module (README, "Configuration", is the table
//! operators read; a test keeps it and [`VARS`] in step).
//!
//! [`VARS`] lists each variable once: its name, its default, which binaries
//! read it and what it means (`--help` prints it). One function,
//! [`read`], reads them for a binary from a [`Source`]: the process
//! environment for the binaries, a map for the tests ([`Config::for_tests`]),
//! so both build the configuration the same way. A default is written in
//! [`VARS`] as text and parsed like a value that was set. Every invalid value
//! is reported at once, in one line naming each variable; a secret's value is
//! never printed. Secrets may also be given as `<NAME>_FILE` (a path whose
//! contents are the secret), not both.
//!
//! Secrets (the database and RabbitMQ URLs, which carry passwords, the SMTP
//! URL and the keys) are held as [`secrecy`] types: their `Debug` is
//! redacted, and reading one takes `expose_secret()` where it is used.

use std::{collections::HashMap, net::SocketAddr, path::PathBuf, time::Duration};

use anyhow::{anyhow, bail, Context};
use secrecy::{ExposeSecret, SecretString};

use crate::{
    amqp::MAX_PREFIX_BYTES,
    jobs::JobKind,
    keys::{self, DataKey, HashKey, KeyRing, Keys},
    retry::RetryPolicy,
};

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/i9";
pub const DEFAULT_AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// The API replays an `Idempotency-Key` for 24 hours (api/src/idempotency.rs),
/// never after: the most `RETENTION_IDEMPOTENCY_SECS` keeps a record, and how
/// long a record holds the SSN hash key its fingerprint was made with
/// (`common/src/rekey.rs`).
pub const IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// The binaries that read settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    Api,
    Worker,
    Admin,
}

/// Which binaries read a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readers {
    All,
    Api,
    Worker,
    /// `i9-api` and `i9-worker`, not `i9-admin`.
    Services,
}

impl Readers {
    pub fn include(self, binary: Binary) -> bool {
        match self {
            Readers::All => true,
            Readers::Api => binary == Binary::Api,
            Readers::Worker => binary == Binary::Worker,
            Readers::Services => binary != Binary::Admin,
        }
    }
}

/// A variable's value when it is unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultValue {
    /// This text, read as if it had been set.
    Text(&'static str),
    /// Worked out at start (this says how).
    Computed(&'static str),
    /// Nothing: the setting is off, or (the keys) required outside development.
    Unset,
}

/// One environment variable.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    pub name: &'static str,
    pub default: DefaultValue,
    pub readers: Readers,
    /// A secret: also read from the file `<name>_FILE`, never printed.
    pub secret: bool,
    /// One line for `--help`.
    pub help: &'static str,
}

const fn var(
    name: &'static str,
    default: DefaultValue,
    readers: Readers,
    help: &'static str,
) -> Var {
    Var {
        name,
        default,
        readers,
        secret: false,
        help,
    }
}

const fn secret(
    name: &'static str,
    default: DefaultValue,
    readers: Readers,
    help: &'static str,
) -> Var {
    Var {
        name,
        default,
        readers,
        secret: true,
        help,
    }
}

use DefaultValue::{Computed, Text, Unset};
use Readers::{All, Api, Services, Worker};

/// Every variable the binaries read (README, "Configuration", says more).
#[rustfmt::skip]
pub const VARS: &[Var] = &[
    secret("DATABASE_URL", Text(DEFAULT_DATABASE_URL), All, "Postgres (postgres:// or postgresql://; TLS: ?sslmode=verify-full&sslrootcert=)"),
    var("DATABASE_MAX_CONNECTIONS", Text("20"), All, "pool size per process"),
    secret("AMQP_URL", Text(DEFAULT_AMQP_URL), All, "RabbitMQ (amqp:// or amqps://)"),
    var("AMQP_PREFIX", Text("i9"), All, "prefix of exchange and queue names"),
    var("STARTUP_TIMEOUT_SECS", Text("60"), Services, "wait at start for Postgres and RabbitMQ"),
    var("APP_ENV", Unset, All, "`development` alone runs without keys (on the published development keys)"),
    var("CLOCK_OFFSET_DAYS", Text("0"), All, "development only: days added to today's date for the date-driven jobs (reminders, retention), the work queues and the signing days of Section 1, Section 2 and Supplement B, and E-Verify's (Eastern) day of the case steps, to try them"),
    secret("DATA_ENCRYPTION_KEYS", Unset, All, "data key ring, ID:BASE64 entries, the first current (2:<key>,1:<key>)"),
    secret("DATA_ENCRYPTION_KEY", Unset, All, "one data key, as key id 1"),
    secret("SSN_HASH_KEYS", Unset, All, "SSN hash key ring, same form"),
    secret("SSN_HASH_KEY", Unset, All, "one SSN hash key, as key id 1"),
    secret("SMTP_URL", Unset, Worker, "mail: smtps://user:pw@host, smtp://user:pw@host?tls=required, smtp://host"),
    var("SMTP_CA_FILE", Unset, Worker, "PEM root certificates for the SMTP server"),
    var("SMTP_ALLOW_PLAINTEXT_AUTH", Text("false"), Worker, "let SMTP_URL carry credentials without TLS"),
    var("MAIL_DIR", Text("mail-out"), Worker, "folder of .eml files when SMTP_URL is unset"),
    var("BIND_ADDR", Text("127.0.0.1:8080"), All, "where i9-api listens"),
    var("PUBLIC_BASE_URL", Computed("http://<BIND_ADDR>"), All, "base of the links handed out"),
    var("ALLOW_PRIVATE_CALLBACKS", Text("false"), All, "partner callbacks over http and to private addresses"),
    var("ACCESS_TOKEN_TTL_SECS", Text("3600"), All, "access token lifetime"),
    var("REFRESH_TOKEN_TTL_SECS", Text("1209600"), All, "refresh token lifetime"),
    var("AUTH_CACHE_TTL_SECS", Text("5"), Api, "reuse of a validated token (0: off)"),
    var("SECTION1_LINK_TTL_SECS", Text("1209600"), All, "how long a Section 1 link works"),
    var("PASSWORD_LINK_TTL_SECS", Text("259200"), All, "how long a set-password link works"),
    var("SIGN_IN_USERNAME_FAILURES", Text("5"), Api, "sign-in failures per username, free"),
    var("SIGN_IN_USERNAME_FORGET_SECS", Text("60"), Api, "one of them forgotten every"),
    var("SIGN_IN_ADDRESS_FAILURES", Text("20"), Api, "sign-in failures per address, free"),
    var("SIGN_IN_ADDRESS_FORGET_SECS", Text("12"), Api, "one of them forgotten every"),
    var("SSN_WRITES_FREE", Text("5"), Api, "writes of an SSN without permission 12 per user and last four, free"),
    var("SSN_WRITES_FORGET_SECS", Text("3600"), Api, "one of them forgotten every"),
    var("TRUSTED_PROXIES", Unset, Api, "proxies whose X-Forwarded-For is believed"),
    var("PASSWORD_HASH_CONCURRENCY", Computed("the number of cores"), Api, "password checks at once"),
    var("PASSWORD_HASH_WAIT_SECS", Text("2"), Api, "wait for a password check before 503"),
    var("HTTP_HEADER_TIMEOUT_SECS", Text("30"), Api, "a request head must arrive within"),
    var("HTTP_MAX_CONNECTIONS", Text("4096"), Api, "connections served at once"),
    var("HTTP_MAX_CONNECTIONS_PER_ADDRESS", Text("256"), Api, "connections per client address"),
    var("API_NO_RELAY", Text("false"), Api, "run no outbox relay in i9-api (--no-relay)"),
    var("WORKER_KINDS", Computed("every kind"), Worker, "job kinds to serve, comma-separated (--kinds)"),
    var("WORKER_PREFETCH", Text("8"), Worker, "jobs in hand at once per kind (--prefetch)"),
    var("JOB_MAX_ATTEMPTS", Text("12"), Worker, "attempts of a job before the dead letters"),
    var("JOB_RETRY_BASE_SECS", Text("5"), Worker, "wait before a job's first retry, doubling"),
    var("JOB_RETRY_CAP_SECS", Text("900"), Worker, "longest wait between a job's attempts"),
    var("CALLBACK_MAX_ATTEMPTS", Text("30"), Worker, "attempts of a partner callback"),
    var("CALLBACK_RETRY_BASE_SECS", Text("5"), Worker, "wait before a callback's first retry"),
    var("CALLBACK_RETRY_CAP_SECS", Text("3600"), Worker, "longest wait between its attempts"),
    var("WORKER_NO_RELAY", Text("false"), Worker, "run no outbox relay in i9-worker (--no-relay)"),
    var("WORKER_HTTP_ADDR", Text("127.0.0.1:9090"), Worker, "where i9-worker serves /healthz and /metrics (port 0: any free port, logged)"),
    var("PURGE_INTERVAL_SECS", Text("600"), Worker, "how often expired rows are purged"),
    var("RECORDS_PURGE_INTERVAL_SECS", Text("86400"), Worker, "how often I-9s past their retention date are purged"),
    var("RETENTION_IDEMPOTENCY_SECS", Text("86400"), Worker, "Idempotency-Key records kept"),
    var("RETENTION_PROCESSED_JOBS_SECS", Text("2592000"), Worker, "job done-records kept"),
    var("RETENTION_OUTBOX_SECS", Text("604800"), Worker, "published outbox rows kept"),
    var("REMINDER_THRESHOLDS_DAYS", Text("90,30,7"), Worker, "days before a reverification or receipt due date when reminders go (overdue always)"),
    var("REMINDER_INTERVAL_SECS", Text("3600"), Worker, "how often a worker looks for reminders to send"),
    var("EVERIFY_ADAPTER", Computed("simulator in development; required otherwise"), Services, "what answers E-Verify cases: simulator (the built-in simulator; warned outside development) or e-verify (not built yet)"),
    var("EVERIFY_POLL_SECS", Text("60"), Worker, "how often a worker asks the program for its updates of E-Verify cases"),
    var("EVERIFY_SIM_STEP_SECS", Text("2"), Worker, "the simulator: seconds each of its later decisions takes"),
    var("EVERIFY_SIM_UNAVAILABLE_RETRIES", Text("3"), Worker, "the simulator: failed calls before an UNAVAILABLE case is answered"),
    var("EVERIFY_REVOCATION_DUE_BUSINESS_DAYS", Text("10"), All, "business days from a Status Change Report's import to the reverification it asks for (1 to 365)"),
    var("HOSTNAME", Computed("the kernel's host name"), Services, "this host's name in the process registry"),
    var("RUST_LOG", Computed("info,sqlx=warn,lapin=off; i9-admin: warn,lapin=off"), All, "log filter, e.g. info,sqlx=warn (replaces the whole default)"),
    var("LOG_FORMAT", Text("text"), All, "text, or json for JSON lines"),
    var("OTEL_EXPORTER_OTLP_ENDPOINT", Unset, Services, "OTLP/HTTP collector spans are exported to (http(s)://host:4318; /v1/traces is added)"),
];

/// The command-line options that stand for a variable (`i9-worker`'s and
/// `i9-api`'s), named beside it in its errors: `WORKER_PREFETCH (or
/// --prefetch) must be at least 1`.
const OPTIONS: &[(&str, &str)] = &[
    ("WORKER_KINDS", "--kinds"),
    ("WORKER_PREFETCH", "--prefetch"),
    ("JOB_MAX_ATTEMPTS", "--job-max-attempts"),
    ("JOB_RETRY_BASE_SECS", "--job-retry-base-secs"),
    ("JOB_RETRY_CAP_SECS", "--job-retry-cap-secs"),
    ("CALLBACK_MAX_ATTEMPTS", "--callback-max-attempts"),
    ("CALLBACK_RETRY_BASE_SECS", "--callback-retry-base-secs"),
    ("CALLBACK_RETRY_CAP_SECS", "--callback-retry-cap-secs"),
    ("WORKER_NO_RELAY", "--no-relay"),
    ("API_NO_RELAY", "--no-relay"),
];

/// How errors name variable `name`: with its option, if it has one.
fn label(name: &str) -> String {
    match OPTIONS.iter().find(|(n, _)| *n == name) {
        Some((_, option)) => format!("{name} (or {option})"),
        None => name.to_owned(),
    }
}

/// Variables no longer read, refused at start with what replaced them.
const RETIRED: &[(&str, &str)] = &[
    (
        "SIGN_IN_MAX_FAILURES",
        "sign-in throttling is set with SIGN_IN_USERNAME_FAILURES, SIGN_IN_USERNAME_FORGET_SECS, \
         SIGN_IN_ADDRESS_FAILURES and SIGN_IN_ADDRESS_FORGET_SECS (see the README)",
    ),
    (
        "SIGN_IN_WINDOW_SECS",
        "sign-in throttling is set with SIGN_IN_USERNAME_FAILURES, SIGN_IN_USERNAME_FORGET_SECS, \
         SIGN_IN_ADDRESS_FAILURES and SIGN_IN_ADDRESS_FORGET_SECS (see the README)",
    ),
];

/// The variables `binary` reads, for its `--help`.
pub fn env_help(binary: Binary) -> String {
    let mut out = String::from(
        "Environment (README, \"Configuration\", says more; secrets also as NAME_FILE):\n",
    );
    for v in VARS.iter().filter(|v| v.readers.include(binary)) {
        let default = match v.default {
            Text(t) if v.secret && t.contains('@') => " [default: local]".to_owned(),
            Text(t) => format!(" [default: {t}]"),
            Computed(c) => format!(" [default: {c}]"),
            Unset => String::new(),
        };
        out.push_str(&format!("  {:<33} {}{default}\n", v.name, v.help));
    }
    out.push_str(
        "Booleans accept 1/0, true/false, yes/no, on/off; they, APP_ENV, LOG_FORMAT and log \
         levels are read in any case.",
    );
    out
}

/// Where values come from: a variable's name to its value.
pub trait Source {
    fn get(&self, name: &str) -> Option<String>;
}

/// The process environment.
pub struct Env;

impl Source for Env {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl Source for HashMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        HashMap::get(self, name).cloned()
    }
}

/// Values given on the command line (`--kinds`, `--no-relay`, ...) under
/// the name of the variable they stand for, before the environment.
pub struct WithArgs<'a> {
    pub args: Vec<(&'static str, String)>,
    pub rest: &'a dyn Source,
}

impl Source for WithArgs<'_> {
    fn get(&self, name: &str) -> Option<String> {
        self.args
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .or_else(|| self.rest.get(name))
    }
}

#[derive(Clone)]
pub struct Config {
    /// False only with `APP_ENV=development`, the one setting that allows the
    /// development keys.
    pub production: bool,
    /// How long a binary waits at start for Postgres and RabbitMQ before it
    /// gives up (`common/src/startup.rs`).
    pub startup_timeout: Duration,
    /// May carry a password.
    pub database_url: SecretString,
    pub database_max_connections: u32,
    /// Carries the RabbitMQ credentials.
    pub amqp_url: SecretString,
    /// The prefix of the exchange and queue names (`common/src/amqp.rs`).
    pub amqp_prefix: String,
    /// May carry the relay's password; read by lettre (`workers/src/mailer.rs`).
    pub smtp_url: Option<SecretString>,
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
    pub data_keys: KeyRing<DataKey>,
    /// HMAC-SHA256 keys of the searchable SSN hash, the first current.
    pub ssn_hash_keys: KeyRing<HashKey>,
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
    /// How often a worker purges I-9s past their retention date
    /// (docs/retention.md, "The daily purge").
    pub records_purge_interval: Duration,
    /// Days added to today's date ([`Config::today`]); not 0 only with
    /// `APP_ENV=development`, to try the date-driven jobs (reminders,
    /// retention) without waiting (docs/operations.md, "Configuration").
    pub clock_offset_days: i64,
    /// Expiring-document reminders (docs/reminders.md): the days before a
    /// due date when one goes (overdue always), and how often a worker looks.
    pub reminder_thresholds: crate::domain::Thresholds,
    pub reminder_interval: Duration,
    /// E-Verify cases (docs/everify.md): what answers them, how often a
    /// worker asks for the program's updates, and the simulator's settings.
    pub everify_adapter: crate::domain::everify::ProgramName,
    pub everify_poll: Duration,
    pub everify_sim: crate::everify::SimulatorSettings,
    /// Business days from the import of E-Verify's Status Change Report to
    /// the reverification each of its applied rows asks for (docs/everify.md,
    /// "The Status Change Report (2025)", decision 11).
    pub everify_revocation_due_business_days: u32,
    pub retention_idempotency: Duration,
    pub retention_processed_jobs: Duration,
    pub retention_outbox: Duration,
    pub log: LogSettings,
    /// The name this host is listed under in the process registry
    /// (`common/src/processes.rs`): `HOSTNAME` (set in containers), else the
    /// kernel's.
    pub host_name: String,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field: the secrets' own Debug redacts them.
        f.debug_struct("Config")
            .field("production", &self.production)
            .field("startup_timeout", &self.startup_timeout)
            .field("database_url", &self.database_url)
            .field("database_max_connections", &self.database_max_connections)
            .field("amqp_url", &self.amqp_url)
            .field("amqp_prefix", &self.amqp_prefix)
            .field("smtp_url", &self.smtp_url)
            .field("smtp_ca_file", &self.smtp_ca_file)
            .field("smtp_allow_plaintext_auth", &self.smtp_allow_plaintext_auth)
            .field("mail_dir", &self.mail_dir)
            .field("public_base_url", &self.public_base_url)
            .field("bind_addr", &self.bind_addr)
            .field("allow_private_callbacks", &self.allow_private_callbacks)
            .field("data_keys", &self.data_keys)
            .field("ssn_hash_keys", &self.ssn_hash_keys)
            .field("access_token_ttl", &self.access_token_ttl)
            .field("refresh_token_ttl", &self.refresh_token_ttl)
            .field("sign_in_username", &self.sign_in_username)
            .field("sign_in_address", &self.sign_in_address)
            .field("ssn_writes", &self.ssn_writes)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("password_hash_concurrency", &self.password_hash_concurrency)
            .field("password_hash_wait", &self.password_hash_wait)
            .field("http_header_timeout", &self.http_header_timeout)
            .field("http_max_connections", &self.http_max_connections)
            .field(
                "http_max_connections_per_address",
                &self.http_max_connections_per_address,
            )
            .field("section1_link_ttl", &self.section1_link_ttl)
            .field("password_link_ttl", &self.password_link_ttl)
            .field("auth_cache_ttl", &self.auth_cache_ttl)
            .field("purge_interval", &self.purge_interval)
            .field("records_purge_interval", &self.records_purge_interval)
            .field("clock_offset_days", &self.clock_offset_days)
            .field("reminder_thresholds", &self.reminder_thresholds)
            .field("reminder_interval", &self.reminder_interval)
            .field("everify_adapter", &self.everify_adapter)
            .field("everify_poll", &self.everify_poll)
            .field("everify_sim", &self.everify_sim)
            .field(
                "everify_revocation_due_business_days",
                &self.everify_revocation_due_business_days,
            )
            .field("retention_idempotency", &self.retention_idempotency)
            .field("retention_processed_jobs", &self.retention_processed_jobs)
            .field("retention_outbox", &self.retention_outbox)
            .field("log", &self.log)
            .field("host_name", &self.host_name)
            .finish()
    }
}

/// `RUST_LOG` and `LOG_FORMAT` (`common/src/telemetry.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogSettings {
    /// `RUST_LOG`, checked; None: the binary's default filter.
    pub filter: Option<String>,
    pub json: bool,
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`: the base URL of the OTLP/HTTP collector
    /// spans are exported to (`i9-api` and `i9-worker`); None: not exported.
    pub otlp_endpoint: Option<String>,
}

/// `i9-api`'s own settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiSettings {
    /// Run no outbox relay in this process (`API_NO_RELAY`, `--no-relay`).
    pub no_relay: bool,
}

/// `i9-worker`'s own settings.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerSettings {
    /// The job kinds this worker serves (`WORKER_KINDS`, `--kinds`).
    pub kinds: Vec<JobKind>,
    /// Jobs in hand at once per kind.
    pub prefetch: u16,
    /// I-9 creation and emails (`JOB_*`).
    pub retry: RetryPolicy,
    /// Partner status callbacks (`CALLBACK_*`).
    pub callback_retry: RetryPolicy,
    /// Run no outbox relay in this process (`WORKER_NO_RELAY`, `--no-relay`).
    pub no_relay: bool,
    /// Where `/healthz` and `/metrics` are served (`WORKER_HTTP_ADDR`).
    pub http_addr: SocketAddr,
}

/// What [`read`] gives: the shared configuration, and the settings of the
/// binary it read for (the other binaries' are their defaults).
#[derive(Debug, Clone)]
pub struct Settings {
    pub config: Config,
    pub api: ApiSettings,
    pub worker: WorkerSettings,
}

/// The throttling of one kind of key (docs/api.md, "Throttling").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThrottleLimit {
    /// Failures allowed before the delays start.
    pub free_failures: u32,
    /// One failure is forgotten every `forget` (the level leaks linearly).
    pub forget: Duration,
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

/// Reads variables from a source for one binary, collecting every error.
struct Reader<'a> {
    source: &'a dyn Source,
    binary: Binary,
    errors: Vec<String>,
}

impl Reader<'_> {
    fn spec(&mut self, name: &str) -> Option<&'static Var> {
        let spec = VARS.iter().find(|v| v.name == name);
        if spec.is_none() {
            self.errors
                .push(format!("{name} is read but not listed in config::VARS"));
        }
        spec
    }

    /// The value set for `name` (or, for a secret, in the file `NAME_FILE`);
    /// None when unset or blank.
    fn set(&mut self, name: &str) -> Option<String> {
        self.set_from(name).map(|(value, _)| value)
    }

    /// [`Self::set`], with the variable the value came from: `name`, or
    /// `NAME_FILE`. A secret given both ways is refused naming both (neither
    /// silently wins).
    fn set_from(&mut self, name: &str) -> Option<(String, String)> {
        let spec = self.spec(name)?;
        let value = self.source.get(name).filter(|v| !v.trim().is_empty());
        if !spec.secret {
            return value.map(|v| (v, name.to_owned()));
        }
        let file_name = format!("{name}_FILE");
        let path = self.source.get(&file_name).filter(|v| !v.trim().is_empty());
        let path = match (value, path) {
            (Some(_), Some(_)) => {
                self.errors
                    .push(format!("set {name} or {file_name}, not both"));
                return None;
            }
            (Some(value), None) => return Some((value, name.to_owned())),
            (None, None) => return None,
            (None, Some(path)) => path,
        };
        match std::fs::read_to_string(&path) {
            Ok(v) => Some(v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .map(|v| (v, file_name)),
            Err(e) => {
                self.errors
                    .push(format!("reading {file_name} ({path}): {e}"));
                None
            }
        }
    }

    /// `name` parsed by `parse`, its default text when unset; None when
    /// unset without one, or invalid (the error is kept).
    fn get<T>(
        &mut self,
        name: &str,
        parse: impl FnOnce(&str, &str) -> anyhow::Result<T>,
    ) -> Option<T> {
        let spec = self.spec(name)?;
        if !spec.readers.include(self.binary) {
            // Another binary's setting: its default, never an error here.
            return match spec.default {
                Text(t) => parse(name, t).ok(),
                Computed(_) | Unset => None,
            };
        }
        let text = match (self.set(name), spec.default) {
            (Some(v), _) => v,
            (None, Text(t)) => t.to_owned(),
            (None, Computed(_) | Unset) => return None,
        };
        match parse(&label(name), &text) {
            Ok(v) => Some(v),
            Err(e) => {
                self.errors.push(format!("{e:#}"));
                None
            }
        }
    }

    fn secs(&mut self, name: &str) -> Duration {
        self.get(name, parse_secs).unwrap_or_default()
    }

    fn boolean(&mut self, name: &str) -> bool {
        self.get(name, parse_bool).unwrap_or_default()
    }

    fn count(&mut self, name: &str) -> u32 {
        self.get(name, |n, v| {
            parse_count(n, v)?
                .try_into()
                .map_err(|_| anyhow!("{n} is too large"))
        })
        .unwrap_or_default()
    }

    fn positive(&mut self, name: &str) -> usize {
        self.get(name, |n, v| {
            parse_positive(n, v)?
                .try_into()
                .map_err(|_| anyhow!("{n} is too large"))
        })
        .unwrap_or(1)
    }

    fn secret(&mut self, name: &str, check: fn(&str) -> anyhow::Result<()>) -> SecretString {
        self.get(name, |_, v| {
            check(v)?;
            Ok(SecretString::from(v.to_owned()))
        })
        .unwrap_or_default()
    }

    fn throttle(&mut self, free: &str, forget: &str) -> ThrottleLimit {
        ThrottleLimit {
            free_failures: self.count(free),
            forget: self.secs(forget),
        }
    }

    fn retry(&mut self, prefix: &str, template: RetryPolicy) -> RetryPolicy {
        let max_attempts = self
            .get(&format!("{prefix}_MAX_ATTEMPTS"), |n, v| {
                u32::try_from(parse_positive(n, v)?).map_err(|_| anyhow!("{n} is too large"))
            })
            .unwrap_or(template.max_attempts);
        let base = self.get(&format!("{prefix}_RETRY_BASE_SECS"), parse_secs);
        let cap = self.get(&format!("{prefix}_RETRY_CAP_SECS"), parse_secs);
        if let (Some(base), Some(cap)) = (base, cap) {
            if base > cap {
                let option = prefix.to_ascii_lowercase();
                self.errors.push(format!(
                    "{prefix}_RETRY_BASE_SECS ({}) must not exceed {prefix}_RETRY_CAP_SECS ({}) \
                     (or --{option}-retry-base-secs and --{option}-retry-cap-secs)",
                    base.as_secs(),
                    cap.as_secs()
                ));
            }
        }
        RetryPolicy {
            max_attempts,
            base: base.unwrap_or(template.base),
            cap: cap.unwrap_or(template.cap),
            ..template
        }
    }

    fn finish(self) -> anyhow::Result<()> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            bail!("{}", self.errors.join("; "))
        }
    }
}

fn parse_bool(name: &str, v: &str) -> anyhow::Result<bool> {
    bool_word(v)
        .with_context(|| format!("{name} must be true or false (1/0, yes/no, on/off), not {v:?}"))
}

fn parse_secs(name: &str, v: &str) -> anyhow::Result<Duration> {
    v.trim()
        .parse::<u64>()
        .ok()
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .with_context(|| format!("{name} must be a positive number of seconds"))
}

fn parse_count(name: &str, v: &str) -> anyhow::Result<u64> {
    v.trim()
        .parse::<u64>()
        .with_context(|| format!("{name} must be a whole number, not {v:?}"))
}

fn parse_positive(name: &str, v: &str) -> anyhow::Result<u64> {
    let n = parse_count(name, v)?;
    if n == 0 {
        bail!("{name} must be at least 1");
    }
    Ok(n)
}

fn parse_proxies(name: &str, list: &str) -> anyhow::Result<Vec<ipnet::IpNet>> {
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

/// The scheme of `url`, lower case, if it looks like one (never the rest:
/// the URL may carry a password).
fn scheme_of(url: &str) -> Option<String> {
    let (scheme, _) = url.split_once("://")?;
    (scheme.len() <= 20
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)))
    .then(|| scheme.to_ascii_lowercase())
}

/// The parameters of a Postgres URL that name a file sqlx reads at each
/// connection (sqlx-postgres's `PgConnectOptions::parse_from_url`).
const DATABASE_URL_FILES: [&str; 7] = [
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
];

/// `DATABASE_URL` must be a Postgres URL: its scheme is checked here, so
/// that `mysql://…` or `http://…` stops a binary at start naming the
/// setting (sqlx reads the rest: host, port, database, `sslmode`, ...).
/// A certificate or key file it names (`sslrootcert`, `sslcert`, `sslkey`)
/// must be readable: otherwise every connection would fail, and the start
/// would be retried until `STARTUP_TIMEOUT_SECS` instead of stopping at once
/// (docs/operations.md, "TLS to Postgres"). The URL itself is never
/// printed: it may carry a password.
fn check_database_url(url: &str) -> anyhow::Result<()> {
    match scheme_of(url).as_deref() {
        Some("postgres" | "postgresql") => {}
        Some(other) => {
            bail!("DATABASE_URL must be a postgres:// or postgresql:// URL, not {other}://")
        }
        None => bail!(
            "DATABASE_URL must be a postgres:// or postgresql:// URL \
             (postgres://user:password@host:5432/database)"
        ),
    }
    // A URL that does not parse is left to sqlx, which names what is wrong.
    let Ok(parsed) = url::Url::parse(url) else {
        return Ok(());
    };
    for (key, value) in parsed.query_pairs() {
        if !DATABASE_URL_FILES.contains(&&*key) {
            continue;
        }
        // sqlx reads a value that is PEM itself (not a path) as such.
        let text = value.trim();
        if text.starts_with("-----BEGIN") && text.ends_with("-----") {
            continue;
        }
        if let Err(e) = std::fs::read(&*value) {
            bail!(
                "DATABASE_URL: {key}={value} cannot be read ({e}); name a readable PEM file \
                 (docs/operations.md, \"TLS to Postgres\")"
            );
        }
    }
    Ok(())
}

/// `AMQP_URL` must be an AMQP URL (lapin reads the rest); never printed.
fn check_amqp_url(url: &str) -> anyhow::Result<()> {
    match scheme_of(url).as_deref() {
        Some("amqp" | "amqps") => Ok(()),
        Some(other) => bail!("AMQP_URL must be an amqp:// or amqps:// URL, not {other}://"),
        None => bail!(
            "AMQP_URL must be an amqp:// or amqps:// URL (amqp://user:password@host:5672/%2f)"
        ),
    }
}

/// `PUBLIC_BASE_URL`: every link the service hands out is this followed by a
/// path (`common/src/links.rs`), so it must be an absolute `http://` or
/// `https://` URL with a host, and hold nothing a path appended to it would
/// break or hand out: no user name or password, no query, no fragment. A
/// path prefix is kept (`https://example.com/i9`); trailing slashes are
/// dropped, so that no link holds `//` (README, "Configuration").
fn parse_public_base_url(name: &str, v: &str) -> anyhow::Result<String> {
    const FORM: &str = "e.g. https://i9.example.com, or https://example.com/i9 under a path prefix";
    let v = v.trim();
    // The value is shown only when it cannot hold a password.
    let shown = if v.contains('@') {
        String::new()
    } else {
        format!(", not {v:?}")
    };
    let Some(scheme) = scheme_of(v) else {
        bail!("{name} must be an absolute URL starting with https:// (or http://), {FORM}{shown}");
    };
    if scheme != "https" && scheme != "http" {
        bail!("{name} must be an https:// (or http://) URL, not {scheme}://; {FORM}");
    }
    // The WHATWG parser reads `https:///host` as `https://host/`: refused
    // here rather than guessed at.
    let after = &v[scheme.len() + 3..];
    if after.is_empty() || after.starts_with(['/', '\\', '?', '#']) {
        bail!("{name} has no host after {scheme}://; {FORM}");
    }
    let url = url::Url::parse(v).map_err(|e| anyhow!("{name} is not a URL ({e}); {FORM}"))?;
    if !url.username().is_empty() || url.password().is_some() {
        bail!(
            "{name} must not carry a user name or password: every link handed out would \
             hold them"
        );
    }
    if url.query().is_some() || url.fragment().is_some() {
        bail!(
            "{name} must not have a query (?…) or fragment (#…): links are made by appending \
             a path to it{shown}"
        );
    }
    if url.host_str().is_none_or(str::is_empty) {
        bail!("{name} has no host; {FORM}");
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

fn check_amqp_prefix(name: &str, prefix: &str) -> anyhow::Result<String> {
    if prefix.len() > MAX_PREFIX_BYTES {
        bail!(
            "{name} is {} bytes long; at most {MAX_PREFIX_BYTES} fit (an AMQP name is at most \
             255 bytes)",
            prefix.len()
        );
    }
    Ok(prefix.to_owned())
}

/// The kinds named by `WORKER_KINDS` / `--kinds`; a list that names none
/// (`,`) is refused rather than read as every kind.
fn parse_kinds(name: &str, list: &str) -> anyhow::Result<Vec<JobKind>> {
    let all = || JobKind::ALL.map(|k| k.name()).join(", ");
    let names: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        bail!(
            "{name} names no job kind; name some ({}), or leave it unset for every kind",
            all()
        );
    }
    let mut kinds = Vec::new();
    for n in names {
        let kind = JobKind::parse(n)
            .with_context(|| format!("{name}: unknown job kind {n:?}; kinds are: {}", all()))?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds.sort_by_key(|k| k.name());
    Ok(kinds)
}

fn parse_log_format(name: &str, v: &str) -> anyhow::Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "json" => Ok(true),
        "text" => Ok(false),
        _ => bail!("{name} must be text or json, not {v:?}"),
    }
}

/// `RUST_LOG`: what tracing's `EnvFilter` reads, except that a directive
/// that is a bare word other than a level is refused. `EnvFilter` reads
/// `warning` or `inf` as a target name (every level of a module called
/// `warning`, nothing else), which silently turns off every other line; a
/// target is named with its level, `sqlx=warn` (README, "Configuration").
/// `OTEL_EXPORTER_OTLP_ENDPOINT`: an `http` or `https` URL without
/// credentials (a collector that wants them reads them from headers,
/// `OTEL_EXPORTER_OTLP_HEADERS`), kept without a trailing `/`.
fn parse_otlp_endpoint(name: &str, v: &str) -> anyhow::Result<String> {
    let v = v.trim();
    // The value is not quoted back: it might hold a password.
    let url =
        url::Url::parse(v).map_err(|_| anyhow!("{name} must be an http:// or https:// URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        anyhow::bail!("{name} must be an http:// or https:// URL");
    }
    if !url.username().is_empty() || url.password().is_some() {
        anyhow::bail!(
            "{name} must not hold a user name or password (use OTEL_EXPORTER_OTLP_HEADERS)"
        );
    }
    if url.query().is_some() || url.fragment().is_some() {
        anyhow::bail!(
            "{name} must not have a query or fragment: it is a base URL, /v1/traces is added"
        );
    }
    Ok(v.trim_end_matches('/').to_owned())
}

fn parse_log_filter(name: &str, v: &str) -> anyhow::Result<String> {
    for directive in v.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let bare = !directive.contains(['=', '[']);
        if bare
            && directive
                .parse::<tracing::level_filters::LevelFilter>()
                .is_err()
        {
            bail!(
                "{name}: {directive:?} is not a level: a level is off, error, warn, info, debug \
                 or trace (a module's level is module=level), e.g. info,sqlx=warn"
            );
        }
    }
    tracing_subscriber::EnvFilter::try_new(v)
        .map_err(|e| anyhow!("{name} is not a log filter ({e}), e.g. info,sqlx=warn"))?;
    Ok(v.trim().to_owned())
}

/// The cores this process may use (the default hashing concurrency).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Every setting `binary` reads, from `source`; the settings of the other
/// binaries keep their defaults. An error names every invalid variable.
pub fn read(binary: Binary, source: &dyn Source) -> anyhow::Result<Settings> {
    read_with(binary, source, true)
}

/// The key rings from their settings (with their `_FILE` forms); an error
/// is kept in `r`, and the development keys stand in.
fn read_keys(r: &mut Reader<'_>, app_env: Option<&str>) -> Keys {
    let key_names = [
        "DATA_ENCRYPTION_KEYS",
        "DATA_ENCRYPTION_KEY",
        "SSN_HASH_KEYS",
        "SSN_HASH_KEY",
    ];
    let mut key_settings: HashMap<&str, String> = HashMap::new();
    let mut key_sources: HashMap<&str, String> = HashMap::new();
    for n in key_names {
        if let Some((value, from)) = r.set_from(n) {
            key_settings.insert(n, value);
            key_sources.insert(n, from);
        }
    }
    // A ring and its single key: refused here, naming the variables that
    // were set (a `_FILE` form included); the ring alone is read on.
    for (ring, single) in [
        ("DATA_ENCRYPTION_KEYS", "DATA_ENCRYPTION_KEY"),
        ("SSN_HASH_KEYS", "SSN_HASH_KEY"),
    ] {
        if let (Some(a), Some(b)) = (key_sources.get(ring), key_sources.get(single)) {
            r.errors.push(format!("set {a} or {b}, not both"));
            key_settings.remove(single);
        }
    }
    match Keys::from_settings(app_env, |name| Ok(key_settings.get(name).cloned())) {
        Ok(keys) => keys,
        Err(e) => {
            r.errors.push(format!("{e:#}"));
            Keys::development()
        }
    }
}

/// [`read`]; `with_keys` false reads no key setting at all (for
/// [`KeylessConfig`]), the development keys standing in.
fn read_with(binary: Binary, source: &dyn Source, with_keys: bool) -> anyhow::Result<Settings> {
    let mut r = Reader {
        source,
        binary,
        errors: Vec::new(),
    };
    for (old, instead) in RETIRED {
        if source.get(old).is_some_and(|v| !v.trim().is_empty()) {
            r.errors.push(format!("{old} is no longer read: {instead}"));
        }
    }

    let app_env = r.get("APP_ENV", |_, v| Ok(v.to_owned()));
    let production = !keys::is_development(app_env.as_deref());
    let keys = if with_keys {
        read_keys(&mut r, app_env.as_deref())
    } else {
        Keys::development()
    };

    let bind_addr = r
        .get("BIND_ADDR", |n, v| {
            v.trim().parse::<SocketAddr>().map_err(|_| {
                anyhow!(
                    "{n} must be an IP address and port, e.g. 127.0.0.1:8080 or [::]:8080 \
                         (not a host name such as localhost), not {v:?}"
                )
            })
        })
        .unwrap_or_else(|| ([127, 0, 0, 1], 8080).into());
    let public_base_url = r
        .get("PUBLIC_BASE_URL", parse_public_base_url)
        .unwrap_or_else(|| format!("http://{bind_addr}"));

    // An empty value is unset for every other variable; an empty prefix
    // would run this process on the default (shared) `i9` names, so it is
    // refused (README, "Configuration").
    let amqp_prefix = match source.get("AMQP_PREFIX") {
        Some(v) if v.trim().is_empty() => {
            r.errors.push(format!(
                "AMQP_PREFIX is set but empty ({v:?}): it must be non-empty when set; unset, it \
                 is i9, the default names other processes may share"
            ));
            None
        }
        _ => r.get("AMQP_PREFIX", check_amqp_prefix),
    }
    .unwrap_or_default();
    let config = Config {
        production,
        startup_timeout: r.secs("STARTUP_TIMEOUT_SECS"),
        database_url: r.secret("DATABASE_URL", check_database_url),
        database_max_connections: r
            .get("DATABASE_MAX_CONNECTIONS", |n, v| {
                u32::try_from(parse_positive(n, v)?).map_err(|_| anyhow!("{n} is too large"))
            })
            .unwrap_or(1),
        amqp_url: r.secret("AMQP_URL", check_amqp_url),
        amqp_prefix,
        smtp_url: r.get("SMTP_URL", |_, v| Ok(SecretString::from(v.to_owned()))),
        smtp_ca_file: r.get("SMTP_CA_FILE", |_, v| Ok(PathBuf::from(v.trim()))),
        smtp_allow_plaintext_auth: r.boolean("SMTP_ALLOW_PLAINTEXT_AUTH"),
        mail_dir: r
            .get("MAIL_DIR", |_, v| Ok(PathBuf::from(v.trim())))
            .unwrap_or_default(),
        public_base_url,
        bind_addr,
        allow_private_callbacks: r.boolean("ALLOW_PRIVATE_CALLBACKS"),
        data_keys: keys.data,
        ssn_hash_keys: keys.ssn_hash,
        access_token_ttl: r.secs("ACCESS_TOKEN_TTL_SECS"),
        refresh_token_ttl: r.secs("REFRESH_TOKEN_TTL_SECS"),
        sign_in_username: r.throttle("SIGN_IN_USERNAME_FAILURES", "SIGN_IN_USERNAME_FORGET_SECS"),
        sign_in_address: r.throttle("SIGN_IN_ADDRESS_FAILURES", "SIGN_IN_ADDRESS_FORGET_SECS"),
        ssn_writes: r.throttle("SSN_WRITES_FREE", "SSN_WRITES_FORGET_SECS"),
        trusted_proxies: r.get("TRUSTED_PROXIES", parse_proxies).unwrap_or_default(),
        password_hash_concurrency: r
            .get("PASSWORD_HASH_CONCURRENCY", |n, v| {
                usize::try_from(parse_positive(n, v)?).map_err(|_| anyhow!("{n} is too large"))
            })
            .unwrap_or_else(cores),
        password_hash_wait: r.secs("PASSWORD_HASH_WAIT_SECS"),
        http_header_timeout: r.secs("HTTP_HEADER_TIMEOUT_SECS"),
        http_max_connections: r.positive("HTTP_MAX_CONNECTIONS"),
        http_max_connections_per_address: r.positive("HTTP_MAX_CONNECTIONS_PER_ADDRESS"),
        section1_link_ttl: r.secs("SECTION1_LINK_TTL_SECS"),
        password_link_ttl: r.secs("PASSWORD_LINK_TTL_SECS"),
        auth_cache_ttl: r
            .get("AUTH_CACHE_TTL_SECS", |n, v| match v.trim() {
                "0" => Ok(Duration::ZERO),
                _ => parse_secs(n, v),
            })
            .unwrap_or_default(),
        purge_interval: r.secs("PURGE_INTERVAL_SECS"),
        records_purge_interval: r.secs("RECORDS_PURGE_INTERVAL_SECS"),
        clock_offset_days: r
            .get("CLOCK_OFFSET_DAYS", |n, v| {
                let days: i64 = v
                    .trim()
                    .parse()
                    .map_err(|_| anyhow!("{n} must be a whole number of days, not {v:?}"))?;
                if days != 0 && production {
                    anyhow::bail!("{n} is for trials: it is refused unless APP_ENV=development");
                }
                if days.abs() > 36_500 {
                    anyhow::bail!("{n} must be within 100 years (36500 days)");
                }
                Ok(days)
            })
            .unwrap_or_default(),
        reminder_thresholds: r
            .get("REMINDER_THRESHOLDS_DAYS", |n, v| {
                crate::domain::Thresholds::parse(v).map_err(|e| anyhow!("{n}: {e}"))
            })
            .unwrap_or_default(),
        reminder_interval: r.secs("REMINDER_INTERVAL_SECS"),
        everify_adapter: match r.get("EVERIFY_ADAPTER", parse_everify_adapter) {
            Some(a) => a,
            None => {
                // Outside development the program must be chosen: a
                // simulated result must never pass for a real one
                // (docs/everify.md, decision 12).
                if production && binary != Binary::Admin {
                    r.errors.push(
                        "EVERIFY_ADAPTER must be set outside development: simulator (the \
                         built-in simulator, its results marked simulated) or e-verify"
                            .to_owned(),
                    );
                }
                crate::domain::everify::ProgramName::Simulator
            }
        },
        everify_poll: r.secs("EVERIFY_POLL_SECS"),
        everify_sim: crate::everify::SimulatorSettings {
            step: r.secs("EVERIFY_SIM_STEP_SECS"),
            unavailable_retries: r
                .get("EVERIFY_SIM_UNAVAILABLE_RETRIES", |n, v| {
                    v.trim().parse::<u16>().map(i32::from).map_err(|_| {
                        anyhow!("{n} must be a whole number from 0 to 65535, not {v:?}")
                    })
                })
                .unwrap_or_default(),
        },
        everify_revocation_due_business_days: r
            .get("EVERIFY_REVOCATION_DUE_BUSINESS_DAYS", |n, v| {
                v.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|d| (1..=365).contains(d))
                    .ok_or_else(|| {
                        anyhow!(
                            "{n} must be a whole number of business days from 1 to 365, not {v:?}"
                        )
                    })
            })
            .unwrap_or(10),
        retention_idempotency: r.secs("RETENTION_IDEMPOTENCY_SECS"),
        retention_processed_jobs: r.secs("RETENTION_PROCESSED_JOBS_SECS"),
        retention_outbox: r.secs("RETENTION_OUTBOX_SECS"),
        log: LogSettings {
            filter: r.get("RUST_LOG", parse_log_filter),
            json: r.get("LOG_FORMAT", parse_log_format).unwrap_or_default(),
            otlp_endpoint: r.get("OTEL_EXPORTER_OTLP_ENDPOINT", parse_otlp_endpoint),
        },
        host_name: r
            .get("HOSTNAME", |_, v| Ok(v.trim().to_owned()))
            .or_else(|| {
                std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .ok()
                    .map(|h| h.trim().to_owned())
                    .filter(|h| !h.is_empty())
            })
            .unwrap_or_else(|| "unknown".to_owned()),
    };
    let api = ApiSettings {
        no_relay: r.boolean("API_NO_RELAY"),
    };
    // A blank value is unset, but a list of only spaces was written to name
    // kinds and names none: refused as `,` is (empty is unset, as clap read it).
    let set = (binary == Binary::Worker).then(|| source.get("WORKER_KINDS"));
    let kinds = match set.flatten() {
        Some(v) if !v.is_empty() && v.trim().is_empty() => {
            if let Err(e) = parse_kinds(&label("WORKER_KINDS"), &v) {
                r.errors.push(format!("{e:#}"));
            }
            None
        }
        _ => r.get("WORKER_KINDS", parse_kinds),
    };
    let worker = WorkerSettings {
        kinds: kinds.unwrap_or_else(|| JobKind::ALL.to_vec()),
        prefetch: r
            .get("WORKER_PREFETCH", |n, v| {
                u16::try_from(parse_positive(n, v)?)
                    .map_err(|_| anyhow!("{n} must be at most {}", u16::MAX))
            })
            .unwrap_or(1),
        retry: r.retry("JOB", RetryPolicy::JOBS),
        callback_retry: r.retry("CALLBACK", RetryPolicy::CALLBACKS),
        no_relay: r.boolean("WORKER_NO_RELAY"),
        http_addr: r
            .get("WORKER_HTTP_ADDR", |n, v| {
                v.trim().parse::<SocketAddr>().map_err(|_| {
                    anyhow!(
                        "{n} must be an IP address and port, e.g. 0.0.0.0:9090 (not a host name), \
                         not {v:?}"
                    )
                })
            })
            .unwrap_or_else(|| ([127, 0, 0, 1], 9090).into()),
    };
    if binary == Binary::Worker {
        if let Some(url) = &config.smtp_url {
            if let Err(e) = SmtpSecurity::check(
                url,
                config.smtp_allow_plaintext_auth,
                config.smtp_ca_file.is_some(),
            ) {
                r.errors.push(e);
            }
        }
    }
    r.finish()?;
    Ok(Settings {
        config,
        api,
        worker,
    })
}

/// `EVERIFY_ADAPTER`: `simulator`, or `e-verify` (refused: not built yet).
fn parse_everify_adapter(
    name: &str,
    value: &str,
) -> anyhow::Result<crate::domain::everify::ProgramName> {
    match value.trim().to_ascii_lowercase().as_str() {
        "simulator" => Ok(crate::domain::everify::ProgramName::Simulator),
        "e-verify" => anyhow::bail!(
            "{name}=e-verify is not built yet: a real connection needs E-Verify's web-services \
             enrollment (docs/everify.md, \"What a real connection needs\"); use simulator"
        ),
        _ => anyhow::bail!("{name} must be simulator or e-verify, not {value:?}"),
    }
}

impl Config {
    /// Today's date (UTC) for the date-driven jobs: the real one, moved by
    /// `CLOCK_OFFSET_DAYS` in development only.
    pub fn today(&self) -> chrono::NaiveDate {
        self.moved(chrono::Utc::now().date_naive())
    }

    /// E-Verify's today: the U.S. Eastern date (`America/New_York`,
    /// [`crate::domain::everify::eastern_date`]) on which a case's steps are
    /// dated and its windows counted (docs/everify.md, "Which day (7)"),
    /// moved by `CLOCK_OFFSET_DAYS` as [`Config::today`] is. Between 00:00 and
    /// 04:00 or 05:00 UTC it is the day before [`Config::today`].
    pub fn everify_today(&self) -> chrono::NaiveDate {
        self.moved(crate::domain::everify::eastern_date(chrono::Utc::now()))
    }

    /// `day` moved by `CLOCK_OFFSET_DAYS`.
    fn moved(&self, day: chrono::NaiveDate) -> chrono::NaiveDate {
        day.checked_add_signed(chrono::TimeDelta::days(self.clock_offset_days))
            .unwrap_or(day)
    }

    /// The shared settings from the environment (`i9-admin`); the services
    /// read theirs with [`ApiSettings::from_env`] and [`WorkerSettings::from_env`].
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(read(Binary::Admin, &Env)?.config)
    }

    /// A configuration for tests, read as the binaries read theirs, from
    /// `APP_ENV=development` (the development keys), `DATABASE_URL`, and
    /// `AMQP_URL` from the environment if set; every other setting its
    /// default.
    pub fn for_tests(database_url: &str) -> Self {
        let mut vars = HashMap::from([("APP_ENV".to_owned(), "development".to_owned())]);
        if !database_url.is_empty() {
            vars.insert("DATABASE_URL".to_owned(), database_url.to_owned());
        }
        if let Some(url) = Env.get("AMQP_URL").filter(|v| !v.trim().is_empty()) {
            vars.insert("AMQP_URL".to_owned(), url);
        }
        match read(Binary::Worker, &vars) {
            Ok(settings) => settings.config,
            Err(e) => panic!("the test configuration does not read: {e:#}"),
        }
    }
}

/// The settings of an `i9-admin` command that neither encrypts nor
/// decrypts (`jobs`, `callbacks`): read without the keys, which it neither
/// needs nor checks, so an operator can run it where the keys are not given
/// (docs/operations.md, "The commands"). It gives the database and the
/// broker, never a [`Config`]: no cipher can be made from it (the
/// development keys stand in inside, out of reach).
pub struct KeylessConfig {
    config: Config,
}

impl KeylessConfig {
    /// `i9-admin`'s settings from the environment, the keys left out.
    pub fn from_env() -> anyhow::Result<Self> {
        Self::read(&Env)
    }

    pub fn read(source: &dyn Source) -> anyhow::Result<Self> {
        Ok(Self {
            config: read_with(Binary::Admin, source, false)?.config,
        })
    }

    /// [`Config::today`]: the day the retention purge reads (`i9-admin purge`).
    pub fn today(&self) -> chrono::NaiveDate {
        self.config.today()
    }

    pub fn log(&self) -> &LogSettings {
        &self.config.log
    }

    pub fn amqp_url(&self) -> &SecretString {
        &self.config.amqp_url
    }

    /// The exchange and queue names of `AMQP_PREFIX`.
    pub fn topology(&self) -> crate::amqp::Topology {
        crate::amqp::Topology::from_config(&self.config)
    }

    /// A pool that connects on first use ([`crate::db::connect_lazy`]).
    pub fn database_lazy(&self) -> anyhow::Result<sqlx::PgPool> {
        crate::db::connect_lazy(&self.config)
    }

    /// A pool, connected ([`crate::db::connect`]).
    pub async fn database(&self) -> anyhow::Result<sqlx::PgPool> {
        crate::db::connect(&self.config).await
    }
}

impl ApiSettings {
    /// `i9-api`'s configuration: the environment, `args` (the command line,
    /// under the names of the variables they stand for) first.
    pub fn from_env(args: Vec<(&'static str, String)>) -> anyhow::Result<(Config, Self)> {
        let s = read(Binary::Api, &WithArgs { args, rest: &Env })?;
        Ok((s.config, s.api))
    }
}

impl WorkerSettings {
    /// `i9-worker`'s configuration: the environment, `args` first.
    pub fn from_env(args: Vec<(&'static str, String)>) -> anyhow::Result<(Config, Self)> {
        let s = read(Binary::Worker, &WithArgs { args, rest: &Env })?;
        Ok((s.config, s.worker))
    }
}

/// How an `SMTP_URL` protects the connection: lettre's forms
/// (`AsyncSmtpTransport::from_url`, which reads the URL itself), told apart
/// here only to refuse credentials without TLS and to keep the form when
/// `SMTP_CA_FILE` adds roots (docs/operations.md, "Mail").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpSecurity {
    /// `smtp://`: no TLS.
    Plain,
    /// `smtp://…?tls=opportunistic`: STARTTLS when offered, clear otherwise
    /// (an attacker on the path can strip the offer).
    Opportunistic,
    /// `smtp://…?tls=required`: STARTTLS or no mail.
    StartTls,
    /// `smtps://`: TLS from the first byte.
    Implicit,
}

/// The forms of `SMTP_URL`, for its errors.
pub const SMTP_URL_FORMS: &str = "smtps://user:password@host[:465], \
smtp://user:password@host[:587]?tls=required, or smtp://host[:25] for a relay without TLS";

impl SmtpSecurity {
    /// The form of `url`, and its host, checked against the rules of
    /// docs/operations.md ("Mail"). Errors name the settings, never the URL.
    pub fn check(
        url: &SecretString,
        allow_plaintext_auth: bool,
        ca_file: bool,
    ) -> Result<(Self, String), String> {
        let parsed = url::Url::parse(url.expose_secret())
            .map_err(|_| format!("SMTP_URL is not a URL; use {SMTP_URL_FORMS}"))?;
        let tls = parsed
            .query_pairs()
            .find(|(k, _)| k == "tls")
            .map(|(_, v)| v.into_owned());
        let security = match (parsed.scheme(), tls.as_deref()) {
            ("smtps", None | Some("required")) => Self::Implicit,
            ("smtp", Some("required")) => Self::StartTls,
            ("smtp", Some("opportunistic")) => Self::Opportunistic,
            ("smtp", None) => Self::Plain,
            _ => {
                return Err(format!(
                    "SMTP_URL has an unknown scheme or tls= value; use {SMTP_URL_FORMS}"
                ))
            }
        };
        let encrypted = matches!(security, Self::StartTls | Self::Implicit);
        if parsed.password().is_some() && !encrypted && !allow_plaintext_auth {
            return Err(
                "SMTP_URL carries a user name and password but no TLS, so they would cross the \
                 network in clear: use smtps:// (TLS from the start) or smtp://…?tls=required \
                 (STARTTLS), or set SMTP_ALLOW_PLAINTEXT_AUTH=true for a relay on this host"
                    .to_owned(),
            );
        }
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("SMTP_URL needs a host; use {SMTP_URL_FORMS}"))?
            .to_owned();
        if ca_file && security == Self::Plain {
            return Err("SMTP_CA_FILE is set but SMTP_URL uses no TLS".to_owned());
        }
        Ok((security, host))
    }
}

#[cfg(test)]
mod tests;
