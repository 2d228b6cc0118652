//! The organization's closed days (`closed_days`, docs/calendar.md) and the
//! [`Calendar`] read from them. One deployment serves one organization: the
//! table is its calendar. Each write is audited (`calendar.closed_day_set`,
//! `calendar.closed_day_removed`, resource `closed_day`, the day as its id).
//!
//! A closed day added or removed moves no deadline already computed: an
//! I-9's `dateDue` is counted when the I-9 is created or its start date
//! changes, on the calendar of that moment.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::json;
use sqlx::{PgConnection, PgExecutor};

use super::audit::{self, Actor, Entry};
use crate::domain::calendar::Calendar;

/// One closed day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedDay {
    pub day: NaiveDate,
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What [`set`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    Created,
    Renamed,
    Unchanged,
}

impl Calendar {
    /// The organization's calendar with the closed days from `from` on: all
    /// a count forward from `from` can meet.
    pub async fn load<'e>(db: impl PgExecutor<'e>, from: NaiveDate) -> Result<Self, sqlx::Error> {
        let days = sqlx::query_scalar!(
            "SELECT day FROM closed_days WHERE day >= $1 ORDER BY day",
            from
        )
        .fetch_all(db)
        .await?;
        Ok(Calendar::with_closed_days(days))
    }
}

/// The closed days from `from` to `to` (both included), in order.
pub async fn list<'e>(
    db: impl PgExecutor<'e>,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Vec<ClosedDay>, sqlx::Error> {
    sqlx::query_as!(
        ClosedDay,
        "SELECT day, name, created_at, updated_at FROM closed_days
         WHERE day BETWEEN $1 AND $2 ORDER BY day",
        from,
        to
    )
    .fetch_all(db)
    .await
}

/// Close `day` under `name` (or rename it), audited when anything changed.
pub async fn set(
    conn: &mut PgConnection,
    actor: &Actor,
    day: NaiveDate,
    name: &str,
) -> Result<(ClosedDay, Set), sqlx::Error> {
    let (row, what) = upsert(conn, actor.user_id, day, name).await?;
    if what != Set::Unchanged {
        audit::record(
            &mut *conn,
            actor,
            Entry::new("calendar.closed_day_set", "closed_day", day)
                .detail(json!({ "fields": ["name"], "created": what == Set::Created })),
        )
        .await?;
    }
    Ok((row, what))
}

/// [`set`] without its audit entry, for `i9-admin seed`, whose run is
/// audited as a whole (`crate::seed`).
pub(crate) async fn upsert(
    conn: &mut PgConnection,
    created_by: Option<i64>,
    day: NaiveDate,
    name: &str,
) -> Result<(ClosedDay, Set), sqlx::Error> {
    let before = sqlx::query_scalar!(
        "SELECT name FROM closed_days WHERE day = $1 FOR UPDATE",
        day
    )
    .fetch_optional(&mut *conn)
    .await?;
    let what = match before.as_deref() {
        None => Set::Created,
        Some(n) if n == name => Set::Unchanged,
        Some(_) => Set::Renamed,
    };
    let row = sqlx::query_as!(
        ClosedDay,
        "INSERT INTO closed_days (day, name, created_by) VALUES ($1, $2, $3)
         ON CONFLICT (day) DO UPDATE SET name = EXCLUDED.name,
             updated_at = CASE WHEN closed_days.name = EXCLUDED.name THEN closed_days.updated_at ELSE now() END
         RETURNING day, name, created_at, updated_at",
        day,
        name,
        created_by,
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok((row, what))
}

/// Open `day` again; `false` when it was not closed (nothing written).
pub async fn remove(
    conn: &mut PgConnection,
    actor: &Actor,
    day: NaiveDate,
) -> Result<bool, sqlx::Error> {
    let removed = sqlx::query!("DELETE FROM closed_days WHERE day = $1", day)
        .execute(&mut *conn)
        .await?
        .rows_affected()
        > 0;
    if removed {
        audit::record(
            &mut *conn,
            actor,
            Entry::new("calendar.closed_day_removed", "closed_day", day),
        )
        .await?;
    }
    Ok(removed)
}
