//! Throttling with growing delays rather than a lock-out: sign-ins per
//! username and per client address (docs/api.md, "Throttling"), and writes
//! of SSNs by callers who may not see them whole, per user and last four
//! digits (docs/api.md, "Social security numbers"; `api/src/ssn_writes.rs`).
//!
//! Each key (a username, lower-cased; a client address, an IPv6 one by its
//! /64; a user and four digits) has a *level*: its events (failed sign-ins,
//! SSN writes) not yet forgotten. An event adds one to it in a single upsert,
//! so concurrent events are all counted; one is forgotten every `forget` of
//! its [`ThrottleLimit`]. Once the level passes the free ones, each event
//! delays the key: about 1 s after the first one beyond them, doubling with
//! each further one, never more than twice `forget`. While a key is delayed
//! its requests answer 429 with `Retry-After` before doing anything (for a
//! sign-in, before any password hashing, whatever the password). Requests
//! refused so are not counted, so the level grows by at most one per delay:
//! over time a key gets about one try per `forget`, and nobody is held out
//! for more than twice `forget` after the last event.
//!
//! Keys are stored as HMAC-SHA256 of kind and value under a key derived
//! from the data key: no username (a user may type a password into it), no
//! address and no digits of an SSN are kept in clear. Delays this process
//! has seen are remembered in memory too, so a flood from a delayed address
//! costs no database query.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use hmac::{Hmac, Mac};
use i9_common::{config::ThrottleLimit, Config};
use secrecy::ExposeSecret;
use sha2::Sha256;
use sqlx::PgPool;

/// What a throttle key counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Username,
    Address,
    /// Writes of an SSN by a caller who may not see SSNs whole, per user and
    /// last four digits (api/src/ssn_writes.rs).
    SsnWrite,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Username => "username",
            Kind::Address => "address",
            Kind::SsnWrite => "ssn_write",
        }
    }
}

/// A throttle key (a username, an address, a user's SSN writes) in `throttle`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    kind: Kind,
    hash: [u8; 32],
}

impl Key {
    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn hash(&self) -> &[u8; 32] {
        &self.hash
    }
}

/// What a failure did to its key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Failure {
    /// Failures counted since the key's row was made.
    pub failures: i64,
    /// Failures not yet forgotten.
    pub level: f64,
    /// How long the key is delayed now (zero: not delayed).
    pub delay: Duration,
}

/// A key that is delayed: its kind, and how long it still waits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delay {
    pub kind: Kind,
    pub wait: Duration,
}

/// Remembered delays above this many are dropped (the database still has them).
const MAX_REMEMBERED: usize = 100_000;

#[derive(Clone)]
pub struct Throttle {
    inner: Arc<Inner>,
}

struct Inner {
    mac_key: [u8; 32],
    username: ThrottleLimit,
    address: ThrottleLimit,
    ssn_write: ThrottleLimit,
    pool: PgPool,
    /// Keys delayed until, as this process last saw them.
    delayed: Mutex<HashMap<[u8; 32], Instant>>,
}

/// A delayed key, and for how much longer (seconds).
struct Blocked {
    key: Vec<u8>,
    secs: f64,
}

/// A key's row after one more failure.
struct Failures {
    failures: i64,
    level: f64,
    delay_secs: f64,
}

impl Throttle {
    pub fn new(config: &Config, pool: PgPool) -> Self {
        // A key of its own, so the stored hashes mean nothing without the data key.
        let mac_key = hmac_sha256(
            &config.data_keys.current().1.expose_secret().0,
            &[b"i9 sign-in throttle key v1"],
        );
        Self {
            inner: Arc::new(Inner {
                mac_key,
                username: config.sign_in_username,
                address: config.sign_in_address,
                ssn_write: config.ssn_writes,
                pool,
                delayed: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn username_key(&self, username: &str) -> Key {
        self.key(Kind::Username, username.to_lowercase().as_bytes())
    }

    /// IPv4 addresses count one by one; IPv6 ones by their /64, the block a
    /// single subscriber is usually given.
    pub fn address_key(&self, address: IpAddr) -> Key {
        let canonical = match address.to_canonical() {
            IpAddr::V4(v4) => v4.octets().to_vec(),
            IpAddr::V6(v6) => v6.octets()[..8].to_vec(),
        };
        self.key(Kind::Address, &canonical)
    }

    /// A user's writes of SSNs ending in `last4`.
    pub fn ssn_write_key(&self, user_id: i64, last4: &str) -> Key {
        let value = [&user_id.to_be_bytes()[..], last4.as_bytes()].concat();
        self.key(Kind::SsnWrite, &value)
    }

    fn key(&self, kind: Kind, value: &[u8]) -> Key {
        Key {
            kind,
            hash: hmac_sha256(
                &self.inner.mac_key,
                &[kind.as_str().as_bytes(), b"\0", value],
            ),
        }
    }

    fn limit(&self, kind: Kind) -> ThrottleLimit {
        match kind {
            Kind::Username => self.inner.username,
            Kind::Address => self.inner.address,
            Kind::SsnWrite => self.inner.ssn_write,
        }
    }

    /// The longest-delayed of `keys`, if any is delayed.
    pub async fn delayed(&self, keys: &[&Key]) -> Result<Option<Delay>, sqlx::Error> {
        if let Some(delay) = self.remembered(keys) {
            return Ok(Some(delay));
        }
        let hashes: Vec<&[u8]> = keys.iter().map(|k| k.hash.as_slice()).collect();
        let rows = sqlx::query_as!(
            Blocked,
            r#"SELECT key, extract(epoch FROM blocked_until - now())::float8 AS "secs!" FROM throttle
             WHERE key = ANY($1) AND blocked_until > now()"#,
            &hashes as &[&[u8]],
        )
        .fetch_all(&self.inner.pool)
        .await?;
        let mut longest: Option<Delay> = None;
        for Blocked { key: hash, secs } in rows {
            let wait = Duration::from_secs_f64(secs.max(0.0));
            let Some(key) = keys.iter().find(|k| k.hash.as_slice() == hash.as_slice()) else {
                continue;
            };
            self.remember(key.hash, wait);
            if !wait.is_zero() && longest.is_none_or(|l| wait > l.wait) {
                longest = Some(Delay {
                    kind: key.kind,
                    wait,
                });
            }
        }
        Ok(longest)
    }

    /// Count an event of `key` (a failed sign-in, a write of an SSN).
    pub async fn count(&self, key: &Key) -> Result<Failure, sqlx::Error> {
        let limit = self.limit(key.kind);
        // Count one failure of `$1` (kind `$2`), atomically; `$3` is `forget` in
        // seconds, `$4` the free failures.
        //
        // The level after one more failure is the old level, less what was forgotten
        // since it was last updated, plus one:
        // `greatest(t.level - extract(epoch FROM now() - t.updated_at)::float8 / $3, 0) + 1`.
        // Once the level L passes the free failures the key is delayed by
        // 2^(L - free - 1) s, at most 2 * forget; `blocked_until` stays NULL until
        // a first delay (a "delay" of zero would race with concurrent readers).
        // Written out (the level four times) so that it is checked at compile time.
        let Failures {
            failures,
            level,
            delay_secs,
        } = sqlx::query_as!(
            Failures,
            r#"INSERT INTO throttle AS t
                 (key, kind, failures, level, updated_at, blocked_until, forgotten_at)
               VALUES ($1, $2, 1, 1, now(),
                 CASE WHEN 1::float8 > $4
                   THEN now() + make_interval(secs => least(power(2, 1::float8 - $4 - 1), 2 * $3::float8)) END,
                 now() + make_interval(secs => $3))
               ON CONFLICT (key) DO UPDATE SET
                 failures = t.failures + 1,
                 level = (greatest(t.level - extract(epoch FROM now() - t.updated_at)::float8 / $3, 0) + 1),
                 updated_at = now(),
                 blocked_until = greatest(t.blocked_until,
                   CASE WHEN (greatest(t.level - extract(epoch FROM now() - t.updated_at)::float8 / $3, 0) + 1) > $4
                     THEN now() + make_interval(secs => least(power(2,
                       (greatest(t.level - extract(epoch FROM now() - t.updated_at)::float8 / $3, 0) + 1) - $4 - 1),
                       2 * $3::float8)) END),
                 forgotten_at = now() + make_interval(secs =>
                   (greatest(t.level - extract(epoch FROM now() - t.updated_at)::float8 / $3, 0) + 1) * $3)
               RETURNING failures, level,
                 coalesce(greatest(extract(epoch FROM blocked_until - now())::float8, 0), 0) AS "delay_secs!""#,
            key.hash.as_slice(),
            key.kind.as_str(),
            limit.forget.as_secs_f64(),
            f64::from(limit.free_failures),
        )
        .fetch_one(&self.inner.pool)
        .await?;
        let delay = Duration::from_secs_f64(delay_secs.max(0.0));
        if !delay.is_zero() {
            self.remember(key.hash, delay);
        }
        Ok(Failure {
            failures,
            level,
            delay,
        })
    }

    /// Forget every failure of `key` (a username that signed in).
    pub async fn clear(&self, key: &Key) -> Result<(), sqlx::Error> {
        if let Ok(mut delayed) = self.inner.delayed.lock() {
            delayed.remove(&key.hash);
        }
        sqlx::query!("DELETE FROM throttle WHERE key = $1", key.hash.as_slice())
            .execute(&self.inner.pool)
            .await?;
        Ok(())
    }

    /// The longest-delayed of `keys`, as far as this process has seen (no
    /// database query).
    pub fn remembered(&self, keys: &[&Key]) -> Option<Delay> {
        let delayed = self.inner.delayed.lock().ok()?;
        let now = Instant::now();
        keys.iter()
            .filter_map(|k| {
                let wait = delayed.get(&k.hash)?.saturating_duration_since(now);
                Some(Delay { kind: k.kind, wait })
            })
            .filter(|d| !d.wait.is_zero())
            .max_by_key(|d| d.wait)
    }

    fn remember(&self, key: [u8; 32], wait: Duration) {
        if let Ok(mut delayed) = self.inner.delayed.lock() {
            if delayed.len() >= MAX_REMEMBERED {
                let now = Instant::now();
                delayed.retain(|_, until| *until > now);
                if delayed.len() >= MAX_REMEMBERED {
                    delayed.clear();
                }
            }
            delayed.insert(key, Instant::now() + wait);
        }
    }
}

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    #[allow(clippy::unwrap_used)] // HMAC accepts keys of any length
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap();
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle() -> Throttle {
        let config = Config::for_tests("postgres://postgres@127.0.0.1:1/none");
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy(config.database_url.expose_secret())
            .unwrap();
        Throttle::new(&config, pool)
    }

    #[tokio::test]
    async fn usernames_are_keyed_case_insensitively_and_apart_from_addresses() {
        let t = throttle();
        assert_eq!(t.username_key("Admin"), t.username_key("admin"));
        assert_ne!(t.username_key("admin"), t.username_key("admin2"));
        let a = t.address_key("10.0.0.1".parse().unwrap());
        assert_eq!(a.kind(), Kind::Address);
        assert_ne!(a.hash(), t.address_key("10.0.0.2".parse().unwrap()).hash());
        // The clear text appears nowhere in a key.
        assert!(!t
            .username_key("admin")
            .hash()
            .windows(5)
            .any(|w| w == b"admin"));
    }

    #[tokio::test]
    async fn ipv6_addresses_count_by_their_64_and_mapped_ipv4_as_ipv4() {
        let t = throttle();
        let key = |s: &str| t.address_key(s.parse().unwrap());
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
    }

    #[tokio::test]
    async fn remembered_delays_expire() {
        let t = throttle();
        let k = t.username_key("someone");
        assert_eq!(t.remembered(&[&k]), None);
        t.remember(k.hash, Duration::from_secs(60));
        let Delay { kind, wait } = t.remembered(&[&k]).unwrap();
        assert_eq!(kind, Kind::Username);
        assert!(wait > Duration::from_secs(50) && wait <= Duration::from_secs(60));
        // The longest delay of several keys names its kind.
        let a = t.address_key("192.0.2.1".parse().unwrap());
        t.remember(a.hash, Duration::from_secs(120));
        assert_eq!(t.remembered(&[&k, &a]).unwrap().kind, Kind::Address);
        t.remember(k.hash, Duration::ZERO);
        assert_eq!(t.remembered(&[&k]), None);
    }
}
