//! The daily purge of I-9s past their retention date (docs/retention.md,
//! "The daily purge"). Every worker process runs [`run`]; a Postgres
//! advisory lock lets one round run at a time, and each batch claims its
//! rows besides ([`retention::purge_round`]), so two rounds never purge an
//! I-9 twice. "Today" is [`Config::today`] (moved by `CLOCK_OFFSET_DAYS` in
//! development only, for trials).

use std::{sync::Arc, time::Duration};

use i9_common::{
    models::retention::{self, PurgedBy},
    Config,
};
use sqlx::PgPool;
use tokio::sync::watch;

/// A round every `config.records_purge_interval` until `shutdown`, the first
/// soon after start (a worker restarted daily still purges).
pub async fn run(pool: PgPool, config: Arc<Config>, mut shutdown: watch::Receiver<bool>) {
    let mut wait = Duration::from_secs(30).min(config.records_purge_interval);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => return,
        }
        wait = config.records_purge_interval;
        match retention::purge_round_if_first(&pool, config.today(), PurgedBy::Worker).await {
            // Counts only (ids stay in the database): e.g. "purged 3 I-9s
            // and 1 employees; kept by legal hold: 2".
            Ok(Some(r)) if !r.i9s.is_empty() || !r.employees.is_empty() || !r.kept.is_empty() => {
                tracing::info!(
                    i9s = r.i9s.len(),
                    employees = r.employees.len(),
                    kept_by_legal_hold = retention::count_i9s(&r.kept),
                    "records past their retention date: {}",
                    r.summary()
                )
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(
                error = %e,
                "purging records past their retention date failed; trying again next round"
            ),
        }
    }
}
