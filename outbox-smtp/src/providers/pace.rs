//! How fast this process has been sending through a provider, and what a "too many
//! requests" answer makes of it: a pure calculation with time as an argument.
//!
//! A provider that names a wait (`Retry-After: 3600`, a daily quota's reset) is taken at
//! its word: one email per that wait, for [`HINTED_FOR`]. A throttle without a hint, or
//! with a short one (AWS SES never sends one; others say `Retry-After: 1`), halves the rate
//! this process was getting through (at least one a second) for [`HALVED_FOR`]: a sender
//! at 100/s slowed by one throttle goes on at 50/s for a minute, not at 1/s for ten.

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

/// A named wait longer than this is a quota or a window to honour as given.
pub(crate) const SHORT_HINT: Duration = Duration::from_secs(2);
/// How long a named wait's slowdown holds.
pub(crate) const HINTED_FOR: Duration = Duration::from_secs(10 * 60);
/// How long a halved rate holds (another throttle halves it again).
pub(crate) const HALVED_FOR: Duration = Duration::from_secs(60);

/// Successful sends counted in whole seconds since `origin`: this second's and the last.
#[derive(Debug)]
pub(crate) struct Pace {
    origin: Instant,
    /// (the second, sends in it, sends in the second before)
    counts: Mutex<(u64, u64, u64)>,
}

impl Pace {
    /// A meter starting at `origin`.
    pub(crate) fn new(origin: Instant) -> Self {
        Self {
            origin,
            counts: Mutex::new((0, 0, 0)),
        }
    }

    fn roll(&self, now: Instant) -> std::sync::MutexGuard<'_, (u64, u64, u64)> {
        let second = now.saturating_duration_since(self.origin).as_secs();
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if second == c.0 + 1 {
            *c = (second, 0, c.1);
        } else if second > c.0 {
            *c = (second, 0, 0);
        }
        c
    }

    /// One email went through at `now`.
    pub(crate) fn note(&self, now: Instant) {
        self.roll(now).1 += 1;
    }

    /// Emails per second at `now`: the last whole second's count, or this second's so far
    /// when that is more.
    pub(crate) fn rate(&self, now: Instant) -> f64 {
        let c = self.roll(now);
        c.1.max(c.2) as f64
    }
}

/// The slowdown (one email per `.0`, for `.1`) a throttle with the provider's wait `hint`
/// calls for, when this process was sending `observed` emails a second.
pub(crate) fn throttled(hint: Duration, observed: f64) -> (Duration, Duration) {
    if hint > SHORT_HINT {
        return (hint, HINTED_FOR);
    }
    let per_second = (observed / 2.0).max(1.0 / hint.as_secs_f64().max(1.0));
    (Duration::from_secs_f64(1.0 / per_second), HALVED_FOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_the_last_whole_second_or_this_one() {
        let t0 = Instant::now();
        let pace = Pace::new(t0);
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        for i in 0..100 {
            pace.note(at(10 * i));
        }
        assert_eq!(pace.rate(at(999)), 100.0);
        for i in 0..30 {
            pace.note(at(1_000 + 10 * i));
        }
        assert_eq!(pace.rate(at(1_500)), 100.0, "the last whole second");
        assert_eq!(pace.rate(at(2_100)), 30.0);
        assert_eq!(pace.rate(at(5_000)), 0.0, "nothing lately");
    }

    #[test]
    fn a_short_or_missing_hint_halves_the_rate_a_long_one_is_honoured() {
        let ms = |d: Duration| d.as_millis();
        // 100/s and a throttle without a hint (1 s): 50/s for a minute.
        let (one_per, during) = throttled(Duration::from_secs(1), 100.0);
        assert_eq!((ms(one_per), during), (20, HALVED_FOR));
        // Hardly sending: at least one a second.
        assert_eq!(
            throttled(Duration::from_secs(1), 0.5).0,
            Duration::from_secs(1)
        );
        // A daily quota's reset an hour away: one per hour, as asked.
        let hour = Duration::from_secs(3600);
        assert_eq!(throttled(hour, 100.0), (hour, HINTED_FOR));
    }
}
