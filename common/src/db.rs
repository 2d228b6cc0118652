//! The Postgres pool and the migrations.

use std::time::Duration;

use anyhow::Context;
use sqlx::{
    migrate::{MigrateDatabase, Migrator},
    postgres::PgPoolOptions,
    PgPool, Postgres,
};

use crate::Config;

/// The migrations of `migrations/`, embedded in every binary.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

pub async fn connect(config: &Config) -> anyhow::Result<PgPool> {
    PgPoolOptions::new()
        .max_connections(config.database_max_connections)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&config.database_url)
        .await
        .context("connecting to Postgres (DATABASE_URL)")
}

/// A pool that connects on first use, so the API starts (and answers 503 on
/// /readyz) while Postgres is still coming up.
pub fn connect_lazy(config: &Config) -> anyhow::Result<PgPool> {
    Ok(PgPoolOptions::new()
        .max_connections(config.database_max_connections)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy(&config.database_url)?)
}

/// Create the database if it does not exist, then apply every migration.
pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    if !Postgres::database_exists(&config.database_url)
        .await
        .context("connecting to Postgres (DATABASE_URL)")?
    {
        Postgres::create_database(&config.database_url)
            .await
            .context("creating the database")?;
    }
    let pool = connect(config).await?;
    MIGRATOR.run(&pool).await.context("applying migrations")?;
    pool.close().await;
    Ok(())
}

/// Whether `e` means "the database is not available right now" (a refused or
/// terminated connection, a pool timeout, a read-only standby after a
/// failover): worth retrying later, and a 503 for an API caller.
pub fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("08")
                || matches!(&*code, "57P01" | "57P02" | "57P03" | "53300" | "25006")
        }),
        _ => false,
    }
}
