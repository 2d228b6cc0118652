//! The Postgres pool and the migrations.

use std::time::Duration;

use anyhow::Context;
use sqlx::{
    migrate::{MigrateDatabase, Migrator},
    postgres::PgPoolOptions,
    PgPool, Postgres,
};

use secrecy::ExposeSecret;

use crate::Config;

/// `DATABASE_URL`, read here only: sqlx takes it as text.
fn url(config: &Config) -> &str {
    config.database_url.expose_secret()
}

/// The migrations of `migrations/`, embedded in every binary.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

pub async fn connect(config: &Config) -> anyhow::Result<PgPool> {
    PgPoolOptions::new()
        .max_connections(config.database_max_connections)
        .acquire_timeout(Duration::from_secs(5))
        .connect(url(config))
        .await
        .context("connecting to Postgres (DATABASE_URL)")
}

/// A pool that connects on first use, so the API starts (and answers 503 on
/// /readyz) while Postgres is still coming up.
pub fn connect_lazy(config: &Config) -> anyhow::Result<PgPool> {
    Ok(PgPoolOptions::new()
        .max_connections(config.database_max_connections)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy(url(config))?)
}

/// Create the database if it does not exist, then apply every migration.
pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    if !Postgres::database_exists(url(config))
        .await
        .context("connecting to Postgres (DATABASE_URL)")?
    {
        Postgres::create_database(url(config))
            .await
            .context("creating the database")?;
    }
    let pool = connect(config).await?;
    MIGRATOR.run(&pool).await.context("applying migrations")?;
    pool.close().await;
    Ok(())
}

/// True when `e` means "the database is not available right now" rather than
/// a fault of the request or of our code: the connection was refused, broken
/// or terminated, the server is shutting down, starting up or full, it is a
/// read-only standby (after a failover), or the pool gave up waiting. Such a
/// request may succeed if retried later (the API answers 503 with
/// `Retry-After`; see docs/operations.md, "Start-up, outages and readiness").
pub fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed
        // The stream of a connection that died mid-message.
        | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|c| sqlstate_is_unavailable(&c)),
        _ => false,
    }
}

/// The SQLSTATEs of [`is_unavailable`].
pub fn sqlstate_is_unavailable(code: &str) -> bool {
    // Class 08: connection exceptions.
    code.starts_with("08")
        || matches!(
            code,
            "57P01" // admin_shutdown: terminated by an administrator or a restart
                | "57P02" // crash_shutdown
                | "57P03" // cannot_connect_now: starting up or shutting down
                | "53300" // too_many_connections
                | "25006" // read_only_sql_transaction: a standby after a failover
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_sqlstates() {
        for code in [
            "57P01", "57P02", "57P03", "08000", "08006", "08001", "53300", "25006",
        ] {
            assert!(sqlstate_is_unavailable(code), "{code}");
        }
        for code in [
            "23505", "40001", "40P01", "22001", "42P01", "57014", "53200",
        ] {
            assert!(!sqlstate_is_unavailable(code), "{code}");
        }
    }

    #[test]
    fn unavailable_errors() {
        assert!(is_unavailable(&sqlx::Error::PoolTimedOut));
        assert!(is_unavailable(&sqlx::Error::PoolClosed));
        assert!(is_unavailable(&sqlx::Error::WorkerCrashed));
        assert!(is_unavailable(&sqlx::Error::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused
        ))));
        assert!(!is_unavailable(&sqlx::Error::RowNotFound));
        assert!(!is_unavailable(&sqlx::Error::ColumnNotFound("x".into())));
    }
}
