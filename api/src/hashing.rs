//! The token endpoint's bounds (docs/api.md, "Throttling"). An argon2id
//! verification takes 19 MiB and tens of milliseconds of a core, so:
//! - at most `PASSWORD_HASH_CONCURRENCY` verifications run at once (by
//!   default one per core), on the blocking pool;
//! - a request waits at most `PASSWORD_HASH_WAIT_SECS` for its turn;
//! - at most [`ADMITTED_PER_TURN`] token requests per turn are in progress
//!   at once (the rest of the API shares the database pool with them);
//!
//! beyond either bound the answer is 503 with `Retry-After`, rather than
//! queueing work and memory without limit.
//!
//! Each turn hashes in a memory block of its own that is reused while other
//! checks run or wait, and freed when the last one ends (so the API does not
//! hold 19 MiB per turn at rest: i9-bench memory). A block is reserved as
//! [`BLOCK_RESERVE_BYTES`], above glibc's largest mmap threshold, so glibc
//! always maps it apart and unmaps it when freed: a block of exactly 19 MiB
//! freed would raise glibc's (dynamic) mmap threshold past it, later blocks
//! would then come from its arenas and stay there, which grew the process
//! by hundreds of MiB under a flood even with the bound. Only the pages the
//! hash touches (19 MiB) become resident.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex, OnceLock,
    },
    time::Duration,
};

use argon2::{
    password_hash::{Output, PasswordHash},
    Algorithm, Argon2, Block, Params, Version,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Token requests in progress at once, per verification turn: more than can
/// be verified within the wait would only be refused later, holding memory
/// and database connections meanwhile.
pub const ADMITTED_PER_TURN: usize = 32;

/// The reservation of a turn's memory block: over glibc's largest dynamic
/// mmap threshold (32 MiB on 64-bit), so the block is always its own
/// mapping, returned to the system when freed (see the module's notes).
pub const BLOCK_RESERVE_BYTES: usize = 33 << 20;

#[derive(Clone)]
pub struct Hashing {
    admitted: Arc<Semaphore>,
    turns: Arc<Semaphore>,
    /// The memory of turns not running now (at most one per turn), kept
    /// only while other checks run or wait.
    memory: Arc<Mutex<Vec<Vec<Block>>>>,
    /// Checks running or waiting for a turn.
    busy: Arc<AtomicUsize>,
    wait: Duration,
}

/// Every turn stayed taken for the whole wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Saturated {
    /// What to tell the client in `Retry-After`.
    pub retry_after: Duration,
}

/// A token request in progress (see [`Hashing::admit`]).
pub struct Admission {
    _permit: OwnedSemaphorePermit,
}

/// The right to run one verification.
pub struct Turn {
    _permit: OwnedSemaphorePermit,
    memory: Arc<Mutex<Vec<Vec<Block>>>>,
    busy: Busy,
}

/// One check counted in [`Hashing::busy`] until dropped.
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }

    /// Whether checks other than this one run or wait.
    fn others(&self) -> bool {
        self.0.load(Ordering::SeqCst) > 1
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Hashing {
    pub fn new(concurrency: usize, wait: Duration) -> Self {
        let concurrency = concurrency.max(1);
        Self {
            admitted: Arc::new(Semaphore::new(concurrency * ADMITTED_PER_TURN)),
            turns: Arc::new(Semaphore::new(concurrency)),
            memory: Arc::new(Mutex::new(Vec::new())),
            busy: Arc::new(AtomicUsize::new(0)),
            wait,
        }
    }

    /// Admit a token request, unless as many as allowed are in progress:
    /// then it is refused at once.
    pub fn admit(&self) -> Result<Admission, Saturated> {
        self.admitted
            .clone()
            .try_acquire_owned()
            .map(|permit| Admission { _permit: permit })
            .map_err(|_| Saturated {
                retry_after: self.wait.max(Duration::from_secs(1)),
            })
    }

    /// Wait (first come, first served) for a turn, at most the configured time.
    pub async fn turn(&self) -> Result<Turn, Saturated> {
        let busy = Busy::new(&self.busy);
        match tokio::time::timeout(self.wait, self.turns.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Turn {
                _permit: permit,
                memory: self.memory.clone(),
                busy,
            }),
            // The semaphore is never closed; a timeout is saturation.
            _ => Err(Saturated {
                retry_after: self.wait.max(Duration::from_secs(1)),
            }),
        }
    }
}

impl Turn {
    /// Whether `secret` matches the argon2id hash `phc`. Without a hash (an
    /// unknown user or client) the same work is spent on a dummy, so the
    /// answer's timing does not tell that the name is unknown. The turn is
    /// held until the work ends, even if the request is abandoned meanwhile.
    pub async fn verify(
        self,
        secret: String,
        phc: Option<String>,
    ) -> Result<bool, tokio::task::JoinError> {
        tokio::task::spawn_blocking(move || {
            let mut memory = self
                .memory
                .lock()
                .ok()
                .and_then(|mut m| m.pop())
                .unwrap_or_default();
            let matches = match &phc {
                Some(phc) => verify(secret.as_bytes(), phc, &mut memory),
                None => {
                    verify(secret.as_bytes(), dummy(), &mut memory);
                    false
                }
            };
            // Kept for the next check while others run or wait; else freed
            // (and the blocks kept, since no check will take them soon).
            if let Ok(mut m) = self.memory.lock() {
                if self.busy.others() {
                    m.push(memory);
                } else {
                    m.clear();
                }
            }
            matches
        })
        .await
    }
}

impl Turn {
    /// Hash a new password (the set-password page) under the same bound as
    /// verifications, so that pages cannot be used to run argon2 without limit.
    pub async fn hash(self, password: String) -> Result<String, tokio::task::JoinError> {
        tokio::task::spawn_blocking(move || {
            let _turn = self;
            i9_common::crypto::hash_password(&password)
        })
        .await
    }
}

/// A hash of the default cost that no secret is checked against for real.
fn dummy() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| i9_common::crypto::hash_password("dummy password for timing"))
}

/// What `PasswordVerifier::verify_password` does, in `memory` (grown to the
/// hash's cost when smaller) instead of a fresh allocation.
fn verify(secret: &[u8], phc: &str, memory: &mut Vec<Block>) -> bool {
    let Ok(hash) = PasswordHash::new(phc) else {
        return false;
    };
    let (Some(salt), Some(expected)) = (hash.salt, hash.hash) else {
        return false;
    };
    let (Ok(algorithm), Ok(params)) =
        (Algorithm::try_from(hash.algorithm), Params::try_from(&hash))
    else {
        return false;
    };
    let version = match hash.version.map(Version::try_from).transpose() {
        Ok(v) => v.unwrap_or_default(),
        Err(_) => return false,
    };
    let mut salt_buf = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_buf) else {
        return false;
    };
    if memory.len() < params.block_count() {
        let reserve =
            (BLOCK_RESERVE_BYTES / std::mem::size_of::<Block>()).max(params.block_count());
        if memory.capacity() < reserve {
            memory.reserve_exact(reserve - memory.len());
        }
        memory.resize(params.block_count(), Block::default());
    }
    let argon2 = Argon2::new(algorithm, version, params);
    // `Output` compares in constant time.
    Output::init_with(expected.len(), |out| {
        argon2
            .hash_password_into_with_memory(secret, salt, out, &mut memory[..])
            .map_err(Into::into)
    })
    .is_ok_and(|computed| computed == expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use i9_common::crypto::{hash_password, verify_password};

    #[test]
    fn admissions_are_bounded_per_turn() {
        let hashing = Hashing::new(2, Duration::from_secs(2));
        let admitted: Vec<_> = (0..2 * ADMITTED_PER_TURN)
            .map(|_| hashing.admit().unwrap())
            .collect();
        assert!(hashing.admit().is_err());
        drop(admitted);
        assert!(hashing.admit().is_ok());
    }

    #[tokio::test]
    async fn turns_are_bounded_and_a_wait_past_the_limit_is_refused() {
        let hashing = Hashing::new(1, Duration::from_millis(50));
        let held = hashing.turn().await.unwrap();
        assert_eq!(
            hashing.turn().await.err(),
            Some(Saturated {
                retry_after: Duration::from_secs(1)
            })
        );
        drop(held);
        let turn = hashing.turn().await.unwrap();
        let phc = hash_password("right");
        assert!(turn
            .verify("right".into(), Some(phc.clone()))
            .await
            .unwrap());
        // The turn came back when the verification ended; with no other
        // check running or waiting, its memory was freed.
        assert_eq!(hashing.memory.lock().unwrap().len(), 0);
        let turn = hashing.turn().await.unwrap();
        assert!(!turn
            .verify("wrong".into(), Some(phc.clone()))
            .await
            .unwrap());
        let turn = hashing.turn().await.unwrap();
        assert!(!turn.verify("anything".into(), None).await.unwrap());
        assert_eq!(hashing.memory.lock().unwrap().len(), 0);
        // While another check waits, the memory is kept for it.
        let turn = hashing.turn().await.unwrap();
        let waiting = Busy::new(&hashing.busy);
        assert!(!turn.verify("wrong".into(), Some(phc)).await.unwrap());
        assert_eq!(hashing.memory.lock().unwrap().len(), 1);
        drop(waiting);
    }

    #[test]
    fn verification_in_reused_memory_agrees_with_the_crate() {
        let mut memory = Vec::new();
        let phc = hash_password("correct horse");
        for (secret, phc) in [
            ("correct horse", phc.as_str()),
            ("wrong horse", phc.as_str()),
            ("correct horse", "not a hash"),
            (
                "correct horse",
                "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ",
            ),
        ] {
            assert_eq!(
                verify(secret.as_bytes(), phc, &mut memory),
                verify_password(secret, phc),
                "{secret} {phc}"
            );
        }
        assert!(verify(b"correct horse", &phc, &mut memory));
        // Cheaper parameters work in the same (larger) memory.
        let small = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(1024, 1, 1, None).unwrap(),
        );
        use argon2::password_hash::{PasswordHasher, SaltString};
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        let cheap = small.hash_password(b"pw", &salt).unwrap().to_string();
        assert!(verify(b"pw", &cheap, &mut memory));
        assert!(!verify(b"px", &cheap, &mut memory));
    }
}
