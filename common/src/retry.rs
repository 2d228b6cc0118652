//! Retry policy as data: how many attempts a job gets and how long it waits
//! between them (exponential, capped, with jitter). `docs/operations.md`
//! ("Retries") gives the schedules in full.
//!
//! A wait has two parts: its *nominal* length (base × 2ⁿ⁻¹, capped), which
//! names the delay queue the job waits in, and the jittered length actually
//! waited (nominal ± jitter), which the job carries as its own expiry. Every
//! job in one delay queue then expires within the same band, so none waits
//! noticeably behind another (see [`crate::amqp`]).

use std::time::Duration;

use rand::Rng;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included. After the last, the job is dead-lettered.
    pub max_attempts: u32,
    /// Nominal wait after the first failed attempt.
    pub base: Duration,
    /// Longest nominal wait.
    pub cap: Duration,
    /// Fraction (0 to 0.5) of the nominal wait added or removed at random.
    pub jitter: f64,
}

impl RetryPolicy {
    /// Jobs of this service (I-9 creation, emails): 12 attempts over about an
    /// hour (5 s, 10 s, 20 s, … capped at 15 min; 66 min in all).
    pub const JOBS: RetryPolicy = RetryPolicy {
        max_attempts: 12,
        base: Duration::from_secs(5),
        cap: Duration::from_secs(900),
        jitter: 0.2,
    };

    /// Partner status callbacks: first retry after about 5 s, doubling to
    /// hourly, 30 attempts over about a day (20.4 h).
    pub const CALLBACKS: RetryPolicy = RetryPolicy {
        max_attempts: 30,
        base: Duration::from_secs(5),
        cap: Duration::from_secs(3600),
        jitter: 0.2,
    };

    /// The nominal wait after failed attempt number `attempt` (1-based), in
    /// whole milliseconds: base × 2^(attempt−1), capped.
    pub fn nominal(&self, attempt: u32) -> Duration {
        let base = self.base.as_millis().max(1);
        let cap = self.cap.as_millis().max(base);
        let doublings = attempt.saturating_sub(1).min(40);
        let ms = base.saturating_mul(1u128 << doublings).min(cap);
        Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
    }

    /// The wait actually used after failed attempt `attempt`: its nominal
    /// length, plus or minus the jitter, in whole milliseconds.
    pub fn delay(&self, attempt: u32) -> Duration {
        let nominal = self.nominal(attempt).as_millis() as f64;
        let spread = nominal * self.jitter_fraction();
        let ms = if spread >= 1.0 {
            nominal + rand::thread_rng().gen_range(-spread..=spread)
        } else {
            nominal
        };
        Duration::from_millis(ms.round().max(1.0) as u64)
    }

    /// The jitter as used: clamped to 0..=0.5, so that one delay queue's
    /// band never reaches the next one's.
    pub fn jitter_fraction(&self) -> f64 {
        if self.jitter.is_finite() {
            self.jitter.clamp(0.0, 0.5)
        } else {
            0.0
        }
    }

    pub fn exhausted(&self, attempt: u32) -> bool {
        attempt >= self.max_attempts
    }

    /// Every nominal wait this policy uses, shortest first: the delay queues
    /// a worker following it needs.
    pub fn waits(&self) -> Vec<Duration> {
        let mut waits = Vec::new();
        for attempt in 1..self.max_attempts {
            let wait = self.nominal(attempt);
            waits.push(wait);
            if wait >= self.cap {
                break; // every later wait is the cap
            }
        }
        waits
    }

    /// The whole schedule: the sum of the nominal waits between the attempts.
    pub fn total_wait(&self) -> Duration {
        let waits = self.waits();
        let capped = u32::try_from(waits.len())
            .map(|n| self.max_attempts.saturating_sub(1).saturating_sub(n))
            .unwrap_or(0);
        let last = waits.last().copied().unwrap_or_default();
        waits.iter().sum::<Duration>() + last.saturating_mul(capped)
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
        assert_eq!(
            p.waits(),
            [1, 2, 4, 8].map(Duration::from_secs),
            "four waits between five attempts"
        );
    }

    #[test]
    fn jitter_stays_in_its_band_around_the_nominal_wait() {
        let p = RetryPolicy::JOBS;
        for _ in 0..200 {
            let d = p.delay(3).as_secs_f64();
            assert!((16.0..=24.0).contains(&d), "{d}");
        }
        assert_eq!(p.nominal(3), Duration::from_secs(20));
    }

    #[test]
    fn the_schedules_match_their_documentation() {
        let jobs = RetryPolicy::JOBS;
        assert_eq!(
            jobs.waits(),
            [5, 10, 20, 40, 80, 160, 320, 640, 900].map(Duration::from_secs)
        );
        assert_eq!(jobs.total_wait().as_secs() / 60, 66, "about an hour");
        let callbacks = RetryPolicy::CALLBACKS;
        assert_eq!(callbacks.nominal(1), Duration::from_secs(5));
        assert_eq!(
            callbacks.waits().len(),
            11,
            "5 s doubling to 2560 s, then 1 h"
        );
        let hours = callbacks.total_wait().as_secs_f64() / 3600.0;
        assert!((20.0..21.0).contains(&hours), "about a day: {hours}");
    }

    #[test]
    fn extreme_settings_do_not_overflow() {
        let p = RetryPolicy {
            max_attempts: u32::MAX,
            base: Duration::from_secs(u64::MAX / 2),
            cap: Duration::from_secs(u64::MAX / 2),
            jitter: f64::NAN,
        };
        assert!(p.delay(u32::MAX) >= Duration::from_secs(1));
    }
}
