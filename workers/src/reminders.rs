//! Expiring-document reminders (docs/reminders.md). Every worker process
//! runs [`run`]: every `REMINDER_INTERVAL_SECS` it looks for I-9s whose
//! reverification date (`i9_expiration`) or receipt due date
//! (`receipt_due_date`) has reached a threshold (`REMINDER_THRESHOLDS_DAYS`,
//! default 90, 30 and 7 days before, and overdue), and sends each reminder
//! once: emails to the employee record's `notificationEmail1`/`2`
//! (`send_reminder_email` jobs) and, for a partner's employee, the partner
//! event `i9.document_due`.
//!
//! Several workers may run a round at once: each reminder is a row of
//! `reminders`, unique per I-9, kind, due date and threshold, inserted in
//! the transaction that queues its jobs (`models::reminder::send`), so the
//! second worker to try finds it there and queues nothing.
//!
//! "Today" is `Config::today` (the real UTC date, moved by
//! `CLOCK_OFFSET_DAYS` in development only).

use std::time::Duration;

use chrono::NaiveDate;
use i9_common::{domain::Thresholds, models::reminder, Config};
use sqlx::PgPool;
use tokio::sync::watch;

/// What a round reads from the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    pub interval: Duration,
    pub thresholds: Thresholds,
    pub public_base_url: String,
}

impl Settings {
    pub fn from_config(config: &Config) -> Self {
        Self {
            interval: config.reminder_interval,
            thresholds: config.reminder_thresholds.clone(),
            public_base_url: config.public_base_url.clone(),
        }
    }
}

/// What one round did (logged, without personal data).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    /// Dates within the widest threshold looked at.
    pub looked_at: usize,
    /// Reminders sent (one per I-9, kind, due date and threshold).
    pub sent: usize,
    /// Email jobs queued.
    pub emails: usize,
    /// Partner events recorded.
    pub events: usize,
    /// Reminders another worker sent first, or whose I-9 changed meanwhile.
    pub skipped: usize,
}

/// A round every `settings.interval` until `shutdown`, the first soon after
/// start; each on [`Config::today`] at its start.
pub async fn run(pool: PgPool, config: Config, mut shutdown: watch::Receiver<bool>) {
    let settings = Settings::from_config(&config);
    let mut wait = Duration::from_secs(15).min(settings.interval);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => return,
        }
        wait = settings.interval;
        if let Err(e) = round(&pool, &settings, config.today()).await {
            tracing::warn!(error = %e, "reminders: the round failed; trying again next round");
        }
    }
}

/// One round on `today`: every reminder due and not yet sent, each in its
/// own transaction.
pub async fn round(
    pool: &PgPool,
    settings: &Settings,
    today: NaiveDate,
) -> Result<Round, sqlx::Error> {
    let mut done = Round::default();
    let dates = reminder::due(pool, today, settings.thresholds.widest()).await?;
    done.looked_at = dates.len();
    for due in &dates {
        let stages = settings.thresholds.stages(due.due_date, today);
        let Some(tightest) = stages.first() else {
            continue;
        };
        if due.recorded.contains(&tightest.as_text()) {
            continue;
        }
        let mut tx = pool.begin().await?;
        match reminder::send(&mut tx, due, &stages, today, &settings.public_base_url).await? {
            Some(sent) => {
                tx.commit().await?;
                done.sent += 1;
                done.emails += sent.emails;
                done.events += usize::from(sent.event);
            }
            None => {
                tx.rollback().await?;
                done.skipped += 1;
            }
        }
    }
    tracing::info!(
        %today,
        looked_at = done.looked_at,
        sent = done.sent,
        emails = done.emails,
        events = done.events,
        skipped = done.skipped,
        "reminders: round done"
    );
    Ok(done)
}
