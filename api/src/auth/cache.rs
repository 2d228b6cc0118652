//! A short-lived cache of validated access tokens, so a request does not pay
//! a database round trip to authenticate (token introspection caching, as
//! RFC 7662 section 4 discusses), and of verified client secrets, so a valid
//! client does not pay an argon2id verification at every token request
//! (keyed by a SHA-256 of client id and secret; never the secret itself).
//!
//! Revocation stays prompt: a trigger (`notify_auth_change`) sends
//! `NOTIFY i9_auth` whenever a sign-in is revoked, a user retired or changed,
//! a client deactivated, a role's permissions or a token's expiry changed,
//! a user's groups or the group tree changed, and every API process drops its whole cache on it. Revocations made by
//! this process clear its cache synchronously too. The time-to-live bounds
//! staleness should a notification be lost (the listener also clears the
//! cache whenever it reconnects). Entries never outlive their token.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use chrono::{DateTime, Utc};
use sqlx::{postgres::PgListener, PgPool};

pub const CHANNEL: &str = "i9_auth";
const MAX_ENTRIES: usize = 50_000;

#[derive(Debug, Clone, Copy)]
pub struct Cached {
    pub user_id: i64,
    pub client_id: i64,
    pub scopes: i9_common::domain::Scopes,
    pub permissions: u32,
    /// The client is a partner (docs/api.md, "Permissions and visibility").
    pub partner: bool,
    pub token_expires: DateTime<Utc>,
}

struct Entry {
    value: Cached,
    stored: Instant,
}

/// A client whose secret was verified at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VerifiedClient {
    pub id: i64,
    pub scopes: i9_common::domain::Scopes,
}

/// A user's visible groups: its own and every group below them.
pub type VisibleGroups = Arc<[i64]>;

#[derive(Clone)]
pub struct AuthCache {
    inner: Arc<Inner>,
}

struct Inner {
    entries: Mutex<HashMap<Vec<u8>, Entry>>,
    clients: Mutex<HashMap<[u8; 32], (VerifiedClient, Instant)>>,
    /// A user's visible groups, by user id.
    groups: Mutex<HashMap<i64, (VisibleGroups, Instant)>>,
    /// Bumped by every clear, so a lookup that raced a revocation is not stored.
    generation: AtomicU64,
    ttl: Duration,
}

impl AuthCache {
    /// A `ttl` of zero disables the cache.
    pub fn new(ttl: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                entries: Mutex::new(HashMap::new()),
                clients: Mutex::new(HashMap::new()),
                groups: Mutex::new(HashMap::new()),
                generation: AtomicU64::new(0),
                ttl,
            }),
        }
    }

    pub fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::SeqCst)
    }

    pub fn get(&self, token_hash: &[u8]) -> Option<Cached> {
        if self.inner.ttl.is_zero() {
            return None;
        }
        let entries = self.inner.entries.lock().ok()?;
        let e = entries.get(token_hash)?;
        (e.stored.elapsed() < self.inner.ttl && Utc::now() < e.value.token_expires)
            .then_some(e.value)
    }

    /// Store a lookup made when the cache was at `generation`, unless it has
    /// been cleared since.
    pub fn put(&self, token_hash: Vec<u8>, value: Cached, generation: u64) {
        if self.inner.ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.inner.entries.lock() {
            if self.generation() != generation {
                return;
            }
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(
                token_hash,
                Entry {
                    value,
                    stored: Instant::now(),
                },
            );
        }
    }

    /// A client verified with this `key` (SHA-256 of client id and secret)
    /// within the time-to-live.
    pub fn client(&self, key: &[u8; 32]) -> Option<VerifiedClient> {
        if self.inner.ttl.is_zero() {
            return None;
        }
        let clients = self.inner.clients.lock().ok()?;
        let (client, stored) = clients.get(key)?;
        (stored.elapsed() < self.inner.ttl).then_some(*client)
    }

    /// Store a verification made when the cache was at `generation`, unless
    /// it has been cleared since (a client changed meanwhile).
    pub fn put_client(&self, key: [u8; 32], client: VerifiedClient, generation: u64) {
        if self.inner.ttl.is_zero() {
            return;
        }
        if let (Ok(_entries), Ok(mut clients)) =
            (self.inner.entries.lock(), self.inner.clients.lock())
        {
            if self.generation() != generation {
                return;
            }
            if clients.len() >= MAX_ENTRIES {
                clients.clear();
            }
            clients.insert(key, (client, Instant::now()));
        }
    }

    /// The visible groups of user `user_id`, looked up within the time-to-live.
    pub fn groups(&self, user_id: i64) -> Option<Arc<[i64]>> {
        if self.inner.ttl.is_zero() {
            return None;
        }
        let groups = self.inner.groups.lock().ok()?;
        let (ids, stored) = groups.get(&user_id)?;
        (stored.elapsed() < self.inner.ttl).then(|| ids.clone())
    }

    /// Store a user's visible groups looked up when the cache was at
    /// `generation`, unless it has been cleared since (groups changed meanwhile).
    pub fn put_groups(&self, user_id: i64, ids: Arc<[i64]>, generation: u64) {
        if self.inner.ttl.is_zero() {
            return;
        }
        if let (Ok(_entries), Ok(mut groups)) =
            (self.inner.entries.lock(), self.inner.groups.lock())
        {
            if self.generation() != generation {
                return;
            }
            if groups.len() >= MAX_ENTRIES {
                groups.clear();
            }
            groups.insert(user_id, (ids, Instant::now()));
        }
    }

    pub fn clear(&self) {
        if let Ok(mut entries) = self.inner.entries.lock() {
            self.inner.generation.fetch_add(1, Ordering::SeqCst);
            entries.clear();
            if let Ok(mut clients) = self.inner.clients.lock() {
                clients.clear();
            }
            if let Ok(mut groups) = self.inner.groups.lock() {
                groups.clear();
            }
        }
    }

    /// Drop the cache on every `NOTIFY i9_auth`, for as long as the process runs.
    pub fn spawn_invalidation(&self, pool: PgPool) {
        if self.inner.ttl.is_zero() {
            return;
        }
        let cache = self.clone();
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(200);
            loop {
                let listener = async {
                    let mut l = PgListener::connect_with(&pool).await?;
                    l.listen(CHANNEL).await?;
                    Ok::<_, sqlx::Error>(l)
                };
                match listener.await {
                    Ok(mut l) => {
                        backoff = Duration::from_millis(200);
                        // Anything may have changed while we were not listening.
                        cache.clear();
                        while l.recv().await.is_ok() {
                            cache.clear();
                        }
                        cache.clear();
                    }
                    Err(e) => {
                        cache.clear();
                        tracing::debug!(error = %e, "auth cache listener cannot connect; retrying");
                    }
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(expires_in: chrono::Duration) -> Cached {
        Cached {
            user_id: 1,
            client_id: 2,
            scopes: i9_common::domain::Scopes {
                read: true,
                write: false,
            },
            permissions: 0b10,
            partner: false,
            token_expires: Utc::now() + expires_in,
        }
    }

    #[test]
    fn entries_are_served_until_cleared() {
        let c = AuthCache::new(Duration::from_secs(60));
        let g = c.generation();
        c.put(vec![1], cached(chrono::Duration::hours(1)), g);
        assert_eq!(c.get(&[1]).map(|v| v.user_id), Some(1));
        c.clear();
        assert!(c.get(&[1]).is_none());
    }

    #[test]
    fn a_lookup_that_raced_a_clear_is_not_stored() {
        let c = AuthCache::new(Duration::from_secs(60));
        let g = c.generation();
        c.clear(); // a revocation while the lookup was in flight
        c.put(vec![1], cached(chrono::Duration::hours(1)), g);
        assert!(c.get(&[1]).is_none());
    }

    #[test]
    fn verified_clients_are_served_until_cleared_and_not_after_a_raced_clear() {
        let c = AuthCache::new(Duration::from_secs(60));
        let client = VerifiedClient {
            id: 7,
            scopes: i9_common::domain::Scopes {
                read: true,
                write: true,
            },
        };
        c.put_client([1; 32], client, c.generation());
        assert_eq!(c.client(&[1; 32]), Some(client));
        assert_eq!(c.client(&[2; 32]), None);
        c.clear();
        assert_eq!(c.client(&[1; 32]), None);
        let g = c.generation();
        c.clear();
        c.put_client([1; 32], client, g);
        assert_eq!(c.client(&[1; 32]), None);
        let off = AuthCache::new(Duration::ZERO);
        off.put_client([1; 32], client, off.generation());
        assert_eq!(off.client(&[1; 32]), None);
    }

    #[test]
    fn visible_groups_are_served_until_cleared_and_not_after_a_raced_clear() {
        let c = AuthCache::new(Duration::from_secs(60));
        let ids: Arc<[i64]> = Arc::from(vec![3, 4]);
        c.put_groups(1, ids.clone(), c.generation());
        assert_eq!(c.groups(1).as_deref(), Some(&[3, 4][..]));
        assert_eq!(c.groups(2), None);
        c.clear(); // a user's groups or the group tree changed
        assert_eq!(c.groups(1), None);
        let g = c.generation();
        c.clear();
        c.put_groups(1, ids.clone(), g);
        assert_eq!(c.groups(1), None);
        let off = AuthCache::new(Duration::ZERO);
        off.put_groups(1, ids, off.generation());
        assert_eq!(off.groups(1), None);
    }

    #[test]
    fn expired_tokens_are_not_served_and_a_zero_ttl_disables() {
        let c = AuthCache::new(Duration::from_secs(60));
        c.put(
            vec![1],
            cached(chrono::Duration::seconds(-1)),
            c.generation(),
        );
        assert!(c.get(&[1]).is_none());
        let off = AuthCache::new(Duration::ZERO);
        off.put(
            vec![3],
            cached(chrono::Duration::hours(1)),
            off.generation(),
        );
        assert!(off.get(&[3]).is_none());
    }
}
