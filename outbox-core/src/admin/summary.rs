//! One type at a glance: what waits, how fast it goes out, what fails, its breaker and its
//! held order keys ([`Admin::type_summary`]); what the CLI's `relays` and the web admin's
//! relays page show for the publish kind.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Admin;
use crate::{
    error::Error,
    store::{Backend, BreakerState, HeldKey, TypeCounts},
};

/// One type's state and recent throughput, read from any process on the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeSummary {
    /// Its messages per state (all zero when it has none).
    pub counts: TypeCounts,
    /// The window the figures below cover (whole minutes, the current one included).
    pub window: Duration,
    /// Delivered in the window, by the workers of every process.
    pub delivered: u64,
    /// Failed attempts in the window that will be tried again.
    pub failed: u64,
    /// Moved to the dead letters in the window.
    pub dead: u64,
    /// Delivered in the newest minute that has ended.
    pub delivered_last_minute: u64,
    /// Its circuit breaker (named by the type tag), if it ever opened.
    pub breaker: Option<BreakerState>,
    /// Its order keys held by a dead or failing message (at most
    /// [`MAX_HELD_KEYS`](super::MAX_HELD_KEYS)).
    pub held: Vec<HeldKey>,
    /// The time of the read.
    pub now: SystemTime,
}

impl TypeSummary {
    /// Messages waiting to go out: pending, scheduled, running, retrying and paused.
    pub fn waiting(&self) -> u64 {
        let c = &self.counts;
        c.pending + c.scheduled + c.running + c.retrying + c.paused
    }

    /// Delivered per minute over the window.
    pub fn per_minute(&self) -> f64 {
        let minutes = (self.window.as_secs_f64() / 60.0).max(1.0);
        self.delivered as f64 / minutes
    }

    /// How long the longest-waiting due message has waited.
    pub fn oldest_due_for(&self) -> Option<Duration> {
        self.counts
            .oldest_due
            .map(|t| self.now.duration_since(t).unwrap_or_default())
    }
}

/// The start of the minute `at` falls in.
fn minute_of(at: SystemTime) -> SystemTime {
    let secs = at.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    UNIX_EPOCH + Duration::from_secs(secs - secs % 60)
}

impl<B: Backend> Admin<B> {
    /// `type_tag` at a glance: its counts, what its workers did in the last `window`
    /// (rounded up to whole minutes, at least one), its breaker and its held order keys.
    /// Four reads; cheap enough for a page that refreshes every few seconds.
    pub async fn type_summary(
        &self,
        type_tag: &str,
        window: Duration,
    ) -> Result<TypeSummary, Error> {
        let window = Duration::from_secs(window.as_secs().div_ceil(60).max(1) * 60);
        let now = self.clock.now();
        let counts = self
            .status_counts()
            .await?
            .into_iter()
            .find(|c| c.type_tag == type_tag)
            .unwrap_or_else(|| TypeCounts {
                type_tag: type_tag.to_owned(),
                ..TypeCounts::default()
            });
        // The current minute, and the whole minutes before it that the window covers.
        let current = minute_of(now);
        let since = current
            .checked_sub(window - Duration::from_secs(60))
            .unwrap_or(UNIX_EPOCH);
        let last_ended = current
            .checked_sub(Duration::from_secs(60))
            .unwrap_or(UNIX_EPOCH);
        let mut summary = TypeSummary {
            counts,
            window,
            delivered: 0,
            failed: 0,
            dead: 0,
            delivered_last_minute: 0,
            breaker: None,
            held: Vec::new(),
            now,
        };
        for minute in self.backend.history(since).await? {
            let o = &minute.outcomes;
            if o.type_tag != type_tag || minute.minute < since {
                continue;
            }
            summary.delivered += o.delivered;
            summary.failed += o.failed;
            summary.dead += o.dead;
            if minute.minute == last_ended {
                summary.delivered_last_minute += o.delivered;
            }
        }
        summary.breaker = self
            .breakers()
            .await?
            .into_iter()
            .find(|b| b.name == type_tag);
        summary.held = self.messages().held_keys(type_tag).await?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_start_on_the_minute() {
        let at = UNIX_EPOCH + Duration::from_secs(3_600 + 59);
        assert_eq!(minute_of(at), UNIX_EPOCH + Duration::from_secs(3_600));
        assert_eq!(minute_of(UNIX_EPOCH), UNIX_EPOCH);
    }

    #[test]
    fn the_rate_is_per_minute_of_the_window() {
        let s = TypeSummary {
            counts: TypeCounts::default(),
            window: Duration::from_secs(600),
            delivered: 1_200,
            failed: 0,
            dead: 0,
            delivered_last_minute: 0,
            breaker: None,
            held: Vec::new(),
            now: UNIX_EPOCH,
        };
        assert_eq!(s.per_minute(), 120.0);
    }
}
