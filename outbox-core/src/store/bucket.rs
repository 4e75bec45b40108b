//! The settings of one token bucket.

use std::time::{Duration, SystemTime};

/// A rate with a burst: `rate` tokens per period, at most `burst` saved up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Most tokens the bucket holds (messages that may start at once after a quiet spell).
    pub burst: f64,
    /// Tokens added per second.
    pub per_second: f64,
}

impl RateLimit {
    /// `n` messages per second, burst 1.
    pub fn per_second(n: f64) -> Self {
        Self {
            burst: 1.0,
            per_second: n,
        }
    }

    /// `n` messages per minute, burst 1.
    pub fn per_minute(n: f64) -> Self {
        Self::per(n, Duration::from_secs(60))
    }

    /// `n` messages per hour, burst 1.
    pub fn per_hour(n: f64) -> Self {
        Self::per(n, Duration::from_secs(3600))
    }

    /// `n` messages per `period`, burst 1.
    pub fn per(n: f64, period: Duration) -> Self {
        Self {
            burst: 1.0,
            per_second: n / period.as_secs_f64(),
        }
    }

    /// Allows up to `burst` messages at once after a quiet spell.
    pub fn burst(mut self, burst: u32) -> Self {
        self.burst = f64::from(burst);
        self
    }

    /// The most messages that may start in any window of length `w`.
    pub fn max_in_window(&self, w: Duration) -> f64 {
        self.burst + self.per_second * w.as_secs_f64()
    }

    /// Explains settings that cannot work.
    pub(crate) fn check(&self) -> Result<(), String> {
        if !(self.per_second.is_finite() && self.per_second > 0.0) {
            return Err(format!(
                "the rate must be positive, not {} per second",
                self.per_second
            ));
        }
        if !(self.burst.is_finite() && self.burst >= 1.0) {
            return Err(format!("the burst must be at least 1, not {}", self.burst));
        }
        Ok(())
    }
}

/// A bucket as stored, and when it was read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketState {
    /// Its settings.
    pub limit: RateLimit,
    /// Tokens as of `updated_at`.
    pub tokens: f64,
    /// When the tokens were last counted (by the clock the bucket runs on).
    pub updated_at: SystemTime,
    /// When this state was read (the same clock).
    pub read_at: SystemTime,
}

impl BucketState {
    /// The tokens the bucket holds at `at`: those saved at `updated_at` plus those earned
    /// since, capped at the burst.
    pub fn tokens_at(&self, at: SystemTime) -> f64 {
        let earned = at
            .duration_since(self.updated_at)
            .unwrap_or_default()
            .as_secs_f64();
        (self.tokens + earned * self.limit.per_second).min(self.limit.burst)
    }

    /// The tokens the bucket held when it was read.
    pub fn tokens_now(&self) -> f64 {
        self.tokens_at(self.read_at)
    }

    /// How long after it was read until the bucket holds one token.
    pub fn wait_for_token(&self) -> Duration {
        let missing = (1.0 - self.tokens_now()).max(0.0);
        Duration::from_secs_f64(missing / self.limit.per_second)
    }
}
