//! The program's own updates of E-Verify cases (docs/everify.md, "The
//! adapter"): every worker process runs [`run`], which every
//! `EVERIFY_POLL_SECS` asks the program, per legal entity with open cases,
//! for the decisions it took on its own (DHS, SSA), applies each with the
//! case row locked, and confirms them.
//!
//! Several workers may poll at once: an update applies only while its case
//! is still in the status the update found it in
//! (`models::everify_case::apply_update`), so the second worker to apply it
//! changes nothing.

use std::time::Duration;

use chrono::NaiveDate;
use i9_common::{everify::Account, models::everify_case};
use tokio::sync::watch;

use crate::Context;

/// What one round did (logged, without personal data).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    pub accounts: usize,
    pub updates: usize,
    pub applied: usize,
}

/// A round every `EVERIFY_POLL_SECS` until `shutdown`, the first soon after start.
pub async fn run(ctx: Context, mut shutdown: watch::Receiver<bool>) {
    let interval = ctx.config.everify_poll.max(Duration::from_millis(100));
    let mut wait = Duration::from_secs(1).min(interval);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => return,
        }
        wait = interval;
        if let Err(e) = round(&ctx, ctx.config.everify_today()).await {
            tracing::warn!(error = %e, "everify: the round failed; trying again next round");
        }
    }
}

/// One round on `today`, E-Verify's day (`Config::everify_today`,
/// docs/everify.md "Which day (7)"): the simulator counts the employee's
/// days to contact SSA or DHS on it, and the answers are dated on it.
pub async fn round(ctx: &Context, today: NaiveDate) -> anyhow::Result<Round> {
    let mut done = Round::default();
    let accounts = {
        let mut conn = ctx.pool.acquire().await?;
        everify_case::accounts_to_poll(&mut conn, ctx.program.name()).await?
    };
    done.accounts = accounts.len();
    for (legal_entity_id, everify_id) in accounts {
        let acct = Account {
            legal_entity_id,
            everify_id,
        };
        let updates = ctx.program.updates(&acct, today).await?;
        done.updates += updates.len();
        let mut numbers = Vec::with_capacity(updates.len());
        for u in &updates {
            let mut tx = ctx.pool.begin().await?;
            if everify_case::apply_update(&mut tx, u, today, &ctx.config.public_base_url).await? {
                done.applied += 1;
            }
            tx.commit().await?;
            numbers.push(u.case_number.clone());
        }
        ctx.program.confirm_updates(&acct, &numbers).await?;
    }
    if done.updates > 0 {
        tracing::info!(
            accounts = done.accounts,
            updates = done.updates,
            applied = done.applied,
            "everify: round done"
        );
    }
    Ok(done)
}
