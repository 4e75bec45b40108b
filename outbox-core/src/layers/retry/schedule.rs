//! When the next attempt of a failed message is due.

use std::{
    hash::{Hash, Hasher},
    time::Duration,
};

/// The delays between attempts.
#[derive(Debug, Clone, PartialEq)]
pub enum RetrySchedule {
    /// After the n-th failed attempt wait the n-th delay; the last one repeats.
    Fixed(Vec<Duration>),
    /// `first × factor^(n-1)`, capped at `max`, each delay shortened by up to `jitter`
    /// (a fraction in 0..=1) so a burst of failures does not come back all at once.
    Exponential {
        /// Delay after the first failed attempt.
        first: Duration,
        /// Growth per attempt (at least 1).
        factor: f64,
        /// Longest delay.
        max: Duration,
        /// Fraction of each delay drawn at random (stable per message and attempt).
        jitter: f64,
    },
}

impl Default for RetrySchedule {
    /// 60 s, 5 min, 15 min, 1 h, then 1 h until the attempts are used up.
    fn default() -> Self {
        RetrySchedule::Fixed(vec![
            Duration::from_secs(60),
            Duration::from_secs(300),
            Duration::from_secs(900),
            Duration::from_secs(3600),
        ])
    }
}

impl RetrySchedule {
    /// A fixed list of delays (the last repeats).
    pub fn fixed(delays: impl IntoIterator<Item = Duration>) -> Self {
        RetrySchedule::Fixed(delays.into_iter().collect())
    }

    /// Exponential backoff with 20 % jitter.
    pub fn exponential(first: Duration, factor: f64, max: Duration) -> Self {
        RetrySchedule::Exponential {
            first,
            factor,
            max,
            jitter: 0.2,
        }
    }

    /// The wait after `failed_attempt` (1 for the first attempt) of message `id`.
    pub fn delay(&self, failed_attempt: u32, id: &str) -> Duration {
        let n = failed_attempt.max(1);
        match self {
            RetrySchedule::Fixed(delays) => delays
                .get(n as usize - 1)
                .or(delays.last())
                .copied()
                .unwrap_or_default(),
            RetrySchedule::Exponential {
                first,
                factor,
                max,
                jitter,
            } => {
                let grown = first.as_secs_f64() * factor.max(1.0).powi(n as i32 - 1);
                let capped = grown.min(max.as_secs_f64());
                let cut = capped * jitter.clamp(0.0, 1.0) * unit_fraction(id, n);
                Duration::from_secs_f64((capped - cut).max(0.0))
            }
        }
    }

    /// Explains a schedule that cannot work.
    pub(crate) fn check(&self) -> Result<(), String> {
        match self {
            RetrySchedule::Fixed(d) if d.is_empty() => {
                Err("a fixed retry schedule needs at least one delay".into())
            }
            RetrySchedule::Exponential { factor, .. }
                if !(factor.is_finite() && *factor >= 1.0) =>
            {
                Err(format!(
                    "exponential factor {factor} must be a finite number ≥ 1"
                ))
            }
            RetrySchedule::Exponential { jitter, .. } if !(0.0..=1.0).contains(jitter) => {
                Err(format!("jitter {jitter} must be within 0..=1"))
            }
            _ => Ok(()),
        }
    }
}

/// A number in 0..1 that depends only on the message and the attempt.
fn unit_fraction(id: &str, attempt: u32) -> f64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (id, attempt).hash(&mut h);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_schedule_is_one_minute_five_fifteen_then_hourly() {
        let s = RetrySchedule::default();
        let mins: Vec<u64> = (1..=6).map(|n| s.delay(n, "x").as_secs() / 60).collect();
        assert_eq!(mins, vec![1, 5, 15, 60, 60, 60]);
    }

    #[test]
    fn exponential_grows_caps_and_jitters_within_bounds() {
        let s = RetrySchedule::exponential(Duration::from_secs(10), 2.0, Duration::from_secs(100));
        for n in 1..10 {
            let full = (10.0 * 2f64.powi(n as i32 - 1)).min(100.0);
            let d = s.delay(n, "msg").as_secs_f64();
            assert!(d <= full && d >= full * 0.8, "attempt {n}: {d} vs {full}");
        }
        assert_eq!(
            s.delay(3, "a"),
            s.delay(3, "a"),
            "stable per message and attempt"
        );
    }

    #[test]
    fn bad_schedules_are_explained() {
        assert!(RetrySchedule::fixed([]).check().is_err());
        let s = RetrySchedule::Exponential {
            first: Duration::ZERO,
            factor: 0.5,
            max: Duration::ZERO,
            jitter: 0.0,
        };
        assert!(s.check().unwrap_err().contains("factor"));
    }
}
