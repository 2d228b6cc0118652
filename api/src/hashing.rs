//! Password and client-secret verification under a bound (docs/api.md,
//! "Throttling"). An argon2id verification takes 19 MiB and tens of
//! milliseconds of a core, so at most `PASSWORD_HASH_CONCURRENCY` run at
//! once (by default one per core), on the blocking pool; a request waits at
//! most `PASSWORD_HASH_WAIT_SECS` for its turn and is then answered 503 with
//! `Retry-After`, rather than queueing work and memory without limit.

use std::{sync::Arc, time::Duration};

use i9_common::crypto::{verify_password, verify_password_dummy};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Clone)]
pub struct Hashing {
    turns: Arc<Semaphore>,
    wait: Duration,
}

/// Every turn stayed taken for the whole wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Saturated {
    /// What to tell the client in `Retry-After`.
    pub retry_after: Duration,
}

/// The right to run one verification.
pub struct Turn {
    _permit: OwnedSemaphorePermit,
}

impl Hashing {
    pub fn new(concurrency: usize, wait: Duration) -> Self {
        Self {
            turns: Arc::new(Semaphore::new(concurrency.max(1))),
            wait,
        }
    }

    /// Wait (first come, first served) for a turn, at most the configured time.
    pub async fn turn(&self) -> Result<Turn, Saturated> {
        match tokio::time::timeout(self.wait, self.turns.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Turn { _permit: permit }),
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
            let _turn = self;
            match phc {
                Some(phc) => verify_password(&secret, &phc),
                None => {
                    verify_password_dummy(&secret);
                    false
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let phc = i9_common::crypto::hash_password("right");
        assert!(turn.verify("right".into(), Some(phc.clone())).await.unwrap());
        // The turn came back when the verification ended.
        let turn = hashing.turn().await.unwrap();
        assert!(!turn.verify("wrong".into(), Some(phc)).await.unwrap());
        let turn = hashing.turn().await.unwrap();
        assert!(!turn.verify("anything".into(), None).await.unwrap());
    }
}
