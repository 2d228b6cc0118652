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
        let today = config.today();
        match retention::purge_round_if_first(&pool, today, PurgedBy::Worker).await {
            // One line every round, counts only (ids stay in the database):
            // e.g. "purge round of 2029-10-05: purged 3 I-9s and 1 employee;
            // kept by legal hold: 2" (docs/retention.md, "The daily purge").
            Ok(Some(r)) => tracing::info!(
                day = %today,
                i9s = r.i9s.len(),
                employees = r.employees.len(),
                kept_by_legal_hold = retention::count_i9s(&r.kept),
                "purge round of {today}: {}",
                r.summary()
            ),
            Ok(None) => tracing::info!(
                day = %today,
                "purge round of {today} skipped: another round (a worker or i9-admin purge) \
                 is running"
            ),
            Err(e) => tracing::warn!(
                error = %e,
                "purging records past their retention date failed; trying again next round"
            ),
        }
    }
}
