//! Retry policy as data: how many attempts a job gets and how long it waits
//! between them (exponential, capped, with jitter).

use std::time::Duration;

use rand::Rng;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included. After the last, the job is dead-lettered.
    pub max_attempts: u32,
    /// Delay after the first failed attempt.
    pub base: Duration,
    /// Longest delay.
    pub cap: Duration,
    /// Fraction (0 to 1) of the delay added or removed at random.
    pub jitter: f64,
}

impl RetryPolicy {
    /// Jobs of this service (I-9 creation, emails): about an hour in all.
    pub const JOBS: RetryPolicy = RetryPolicy {
        max_attempts: 8,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(900),
        jitter: 0.2,
    };

    /// Partner status callbacks: first retry after about 5 s, growing to
    /// hourly, for about a day (5 s × 2ⁿ capped at 1 h, 30 attempts ≈ 21 h).
    pub const CALLBACKS: RetryPolicy = RetryPolicy {
        max_attempts: 30,
        base: Duration::from_secs(5),
        cap: Duration::from_secs(3600),
        jitter: 0.2,
    };

    /// The wait after failed attempt number `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let exp = self.base.as_secs_f64() * 2f64.powi(attempt.saturating_sub(1).min(30) as i32);
        let capped = exp.min(self.cap.as_secs_f64());
        let spread = capped * self.jitter.clamp(0.0, 1.0);
        let jittered = if spread > 0.0 {
            capped + rand::thread_rng().gen_range(-spread..=spread)
        } else {
            capped
        };
        Duration::from_secs_f64(jittered.max(0.0))
    }

    pub fn exhausted(&self, attempt: u32) -> bool {
        attempt >= self.max_attempts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_are_capped() {
        let p = RetryPolicy {
            max_attempts: 5,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(10),
            jitter: 0.0,
        };
        let d: Vec<u64> = (1..=6).map(|a| p.delay(a).as_secs()).collect();
        assert_eq!(d, [1, 2, 4, 8, 10, 10]);
        assert!(!p.exhausted(4) && p.exhausted(5));
    }

    #[test]
    fn jitter_stays_in_its_band() {
        let p = RetryPolicy {
            jitter: 0.2,
            ..RetryPolicy::JOBS
        };
        for _ in 0..100 {
            let d = p.delay(3).as_secs_f64();
            assert!((3.2..=4.8).contains(&d), "{d}");
        }
    }

    #[test]
    fn delays_map_to_buckets() {
        use crate::amqp::retry_bucket;
        assert_eq!(retry_bucket(Duration::from_millis(300)), 1);
        assert_eq!(retry_bucket(Duration::from_secs(4)), 5);
        assert_eq!(retry_bucket(Duration::from_secs(100)), 300);
        assert_eq!(retry_bucket(Duration::from_secs(99_999)), 3600);
    }
}
