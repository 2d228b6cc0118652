//! Start-up of `i9-api` and `i9-worker`: wait for Postgres and RabbitMQ for a
//! bounded time (`STARTUP_TIMEOUT_SECS`), then check the keys against the
//! data (`common/src/key_check.rs`) and register in the process registry
//! (`common/src/processes.rs`). A wrong `DATABASE_URL` or `AMQP_URL`
//! ends the process with one clear line naming host, port and cause, instead
//! of a process that runs on without its dependencies. Once started, outages
//! are tolerated: the pool, the relay and the worker reconnect by themselves.
//!
//! Credentials never reach a log line: a target is described by host, port
//! and database or virtual host, and the password is scrubbed from causes.

use std::{
    future::Future,
    str::FromStr,
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail};
use backon::{BackoffBuilder, ExponentialBuilder};
use lapin::uri::AMQPUri;
use secrecy::{ExposeSecret, SecretString};
use sqlx::{
    postgres::{PgConnectOptions, PgPool},
    Connection,
};

use crate::{
    crypto::DataCipher,
    db, key_check,
    keys::KeyId,
    processes::{self, Registration},
    Config,
};

/// The longest one connection attempt may take.
const ATTEMPT_LIMIT: Duration = Duration::from_secs(10);

/// Wait for Postgres and RabbitMQ, then open the pool, check the keys and
/// register as `binary`. An error is one line, for the operator. The
/// registration ends (its row deleted) with [`Registration::end`], once the
/// process writes nothing more.
pub async fn prepare(
    config: &Config,
    binary: &'static str,
) -> anyhow::Result<(PgPool, Registration)> {
    wait_for_dependencies(config).await?;
    let pool = db::connect_lazy(config)?;
    let registration = check_keys_and_register(
        &pool,
        &DataCipher::from_config(config),
        binary,
        &config.host_name,
        processes::HEARTBEAT,
    )
    .await?;
    Ok((pool, registration))
}

/// Check the keys against the data and the live processes, log the key ids
/// of both rings, and register as `binary` with a heartbeat every `every`.
pub async fn check_keys_and_register(
    pool: &PgPool,
    cipher: &DataCipher,
    binary: &'static str,
    host: &str,
    every: std::time::Duration,
) -> anyhow::Result<Registration> {
    let check = key_check::verify_or_record(pool, cipher).await?;
    tracing::info!(
        ?check,
        data_keys = %ring_ids(&cipher.data_key_ids()),
        ssn_hash_keys = %ring_ids(&cipher.hash_key_ids()),
        "keys match the data"
    );
    Registration::start(pool, binary, host, cipher, every).await
}

/// `2 (current), 1`.
fn ring_ids(ids: &[KeyId]) -> String {
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            if i == 0 {
                format!("{id} (current)")
            } else {
                id.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Wait (both at once) until Postgres and RabbitMQ accept a connection, for at
/// most `config.startup_timeout`.
pub async fn wait_for_dependencies(config: &Config) -> anyhow::Result<()> {
    let deadline = Instant::now() + config.startup_timeout;
    let (pg, mq) = tokio::join!(
        wait_for_postgres(&config.database_url, deadline),
        wait_for_rabbitmq(&config.amqp_url, deadline)
    );
    match (pg, mq) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
        (Err(a), Err(b)) => Err(anyhow!("{a}; and {b}")),
    }
}

pub async fn wait_for_postgres(url: &SecretString, deadline: Instant) -> anyhow::Result<()> {
    let url = url.expose_secret();
    let options = PgConnectOptions::from_str(url)
        .map_err(|e| anyhow!("DATABASE_URL is not a valid Postgres URL: {e}"))?;
    let target = Target {
        what: "Postgres",
        variable: "DATABASE_URL",
        address: format!(
            "{}:{} (database {})",
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or("<default>")
        ),
        password: password_of(url),
        permanent: postgres_refusal,
    };
    target
        .wait(deadline, || async {
            let conn = sqlx::PgConnection::connect_with(&options).await?;
            conn.close().await?;
            Ok(())
        })
        .await
}

pub async fn wait_for_rabbitmq(url: &SecretString, deadline: Instant) -> anyhow::Result<()> {
    let uri = AMQPUri::from_str(url.expose_secret())
        .map_err(|e| anyhow!("AMQP_URL is not a valid AMQP URL: {e}"))?;
    let target = Target {
        what: "RabbitMQ",
        variable: "AMQP_URL",
        address: format!(
            "{}:{} (virtual host {})",
            uri.authority.host, uri.authority.port, uri.vhost
        ),
        password: Some(uri.authority.userinfo.password.clone()).filter(|p| !p.is_empty()),
        permanent: rabbitmq_refusal,
    };
    target
        .wait(deadline, || async {
            let conn = crate::amqp::connect(url).await?;
            let _ = conn.close(200, "start-up check".into()).await;
            Ok(())
        })
        .await
}

/// What is waited for, described without credentials.
struct Target {
    what: &'static str,
    variable: &'static str,
    address: String,
    password: Option<String>,
    /// A refusal that waiting will not change (a wrong password, a database
    /// or virtual host that does not exist, TLS that cannot work), if `e` is one.
    permanent: fn(&anyhow::Error) -> Option<Refusal>,
}

/// An error that ends the wait at once: what happened, and what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Refusal {
    /// Follows "Postgres at host:port (database d)".
    happened: &'static str,
    advice: &'static str,
}

/// Postgres refused the login (SQLSTATE 28000, 28P01) or the database
/// (3D000), or TLS failed: `sslmode=require` against a server without TLS,
/// a certificate that does not verify. Waiting changes none of them.
fn postgres_refusal(e: &anyhow::Error) -> Option<Refusal> {
    e.chain()
        .filter_map(|c| c.downcast_ref::<sqlx::Error>())
        .find_map(|e| match e {
            sqlx::Error::Database(db) => match db.code().as_deref() {
                Some("28000" | "28P01") => Some(Refusal {
                    happened: "refused us",
                    advice: "check DATABASE_URL",
                }),
                Some("3D000") => Some(Refusal {
                    happened: "refused us",
                    advice: "create it with `i9-admin migrate` (which also applies the \
                             migrations), or check DATABASE_URL",
                }),
                _ => None,
            },
            // A TLS set-up error, or the handshake's (inside an I/O error).
            sqlx::Error::Tls(_) => Some(TLS_REFUSAL),
            sqlx::Error::Io(io) if crate::tls::is_tls_failure(io) => Some(TLS_REFUSAL),
            _ => None,
        })
}

const TLS_REFUSAL: Refusal = Refusal {
    happened: "cannot be reached over TLS",
    advice: "check DATABASE_URL (sslmode, sslrootcert) and the server's TLS settings \
             (docs/operations.md, \"TLS to Postgres\")",
};

/// RabbitMQ refused the login or the virtual host.
fn rabbitmq_refusal(e: &anyhow::Error) -> Option<Refusal> {
    use lapin::protocol::{AMQPErrorKind, AMQPHardError, AMQPSoftError};
    e.chain()
        .filter_map(|c| c.downcast_ref::<lapin::Error>())
        .any(|e| match e.kind() {
            lapin::ErrorKind::ProtocolError(amqp) => matches!(
                amqp.kind(),
                AMQPErrorKind::Soft(AMQPSoftError::ACCESSREFUSED)
                    | AMQPErrorKind::Hard(AMQPHardError::NOTALLOWED)
            ),
            _ => false,
        })
        .then_some(Refusal {
            happened: "refused us",
            advice: "check AMQP_URL",
        })
}

impl Target {
    async fn wait<F, Fut>(&self, deadline: Instant, mut attempt: F) -> anyhow::Result<()>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = anyhow::Result<()>>,
    {
        let started = Instant::now();
        let mut delays = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(250))
            .with_max_delay(Duration::from_secs(5))
            .with_jitter()
            .without_max_times()
            .build();
        let mut tries = 0;
        loop {
            tries += 1;
            let limit = deadline
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(100), ATTEMPT_LIMIT);
            let cause = match tokio::time::timeout(limit, attempt()).await {
                Ok(Ok(())) => {
                    if tries > 1 {
                        tracing::info!(target = %self.address, "{} reachable", self.what);
                    }
                    return Ok(());
                }
                Ok(Err(e)) => match (self.permanent)(&e) {
                    Some(refusal) => bail!(
                        "{} at {} {}: {}; {}",
                        self.what,
                        self.address,
                        refusal.happened,
                        self.scrub(&format!("{}", e.root_cause())),
                        refusal.advice,
                    ),
                    None => self.scrub(&format!("{}", e.root_cause())),
                },
                Err(_) => format!("no answer within {} s", limit.as_secs_f32()),
            };
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                bail!(
                    "{} at {} not reachable within {} s ({tries} attempts): {cause}; check {}",
                    self.what,
                    self.address,
                    started.elapsed().as_secs_f32().round(),
                    self.variable,
                );
            }
            // The last wait ends at the deadline, for one last attempt.
            let delay = delays
                .next()
                .unwrap_or(Duration::from_secs(5))
                .min(remaining);
            tracing::warn!(
                target = %self.address,
                attempt = tries,
                retry_in = ?delay,
                %cause,
                "{} not reachable yet ({})",
                self.what,
                self.variable
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// The cause with the password, if it appears, replaced.
    fn scrub(&self, cause: &str) -> String {
        match &self.password {
            Some(p) if !p.is_empty() => cause.replace(p.as_str(), "***"),
            _ => cause.to_owned(),
        }
    }
}

/// The password of a URL, percent-decoded, to keep it out of log lines.
fn password_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let password = percent_encoding::percent_decode_str(parsed.password()?)
        .decode_utf8_lossy()
        .into_owned();
    Some(password).filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_found_decoded_and_scrubbed() {
        assert_eq!(
            password_of("postgres://i9:s%40cret@db:5432/i9").as_deref(),
            Some("s@cret")
        );
        assert_eq!(password_of("postgres://postgres@127.0.0.1/i9"), None);
        let t = Target {
            what: "Postgres",
            variable: "DATABASE_URL",
            address: "db:5432".into(),
            password: password_of("postgres://i9:s%40cret@db:5432/i9"),
            permanent: postgres_refusal,
        };
        assert_eq!(t.scrub("auth failed for s@cret"), "auth failed for ***");
    }

    #[tokio::test]
    async fn a_database_that_does_not_exist_is_refused_at_once() {
        let url = crate::config::DEFAULT_DATABASE_URL.replace("/i9", "/i9_no_such_database");
        let started = Instant::now();
        let e = wait_for_postgres(&url.into(), Instant::now() + Duration::from_secs(30))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("refused us") && e.contains("does not exist"),
            "{e}"
        );
        assert!(
            e.ends_with(
                "create it with `i9-admin migrate` (which also applies the migrations), or \
                 check DATABASE_URL"
            ),
            "{e}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the wait ended before its deadline"
        );
    }

    #[tokio::test]
    async fn a_wrong_rabbitmq_password_is_refused_at_once() {
        let e = wait_for_rabbitmq(
            &"amqp://guest:not-the-password@127.0.0.1:5672/%2f".into(),
            Instant::now() + Duration::from_secs(30),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("refused us") && e.contains("ACCESS_REFUSED"),
            "{e}"
        );
        assert!(!e.contains("not-the-password"), "{e}");
    }

    #[tokio::test]
    async fn an_unreachable_port_fails_within_the_deadline_naming_it() {
        let deadline = Instant::now() + Duration::from_secs(1);
        let e = wait_for_postgres(&"postgres://u:hunter2@127.0.0.1:1/i9".into(), deadline)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("Postgres at 127.0.0.1:1 (database i9)"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let e = wait_for_rabbitmq(&"amqp://u:hunter2@127.0.0.1:1/%2f".into(), deadline)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("RabbitMQ at 127.0.0.1:1"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
    }

    #[tokio::test]
    async fn a_malformed_url_fails_at_once() {
        let deadline = Instant::now() + Duration::from_secs(60);
        let e = wait_for_rabbitmq(&"http://nope".into(), deadline)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("AMQP_URL is not a valid AMQP URL"), "{e}");
        let e = wait_for_postgres(&"not a url".into(), deadline)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("DATABASE_URL is not a valid Postgres URL"),
            "{e}"
        );
    }
}
