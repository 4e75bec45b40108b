//! A type's circuit breaker settings, and the probe backoff as a pure function.

use std::time::Duration;

/// Longest breaker name accepted, in bytes (the key of its row on every database).
pub(crate) const MAX_BREAKER_NAME_LEN: usize = 255;

/// Which breaker a type's workers use, and how it probes.
///
/// On by default for every type: a handler that returns
/// [`HandlerError::down`](crate::HandlerError::down) (the SMTP mailer does for refused
/// connections, TLS, EHLO and AUTH failures, dropped connections and `421` replies)
/// three times in a row, over at least a second with no answer from the downstream
/// between them, opens the breaker named by the handler's
/// [`downstream`](crate::Handler::downstream) (the mailer names its relay), or by the
/// message type when the handler names none. While it is open, no process starts the
/// types it guards; one probe message at a time tests the downstream, 1 s after it opened
/// and then at doubling intervals up to 1 min.
///
/// ```
/// use std::time::Duration;
/// use outbox_core::{Breaker, QueueOptions};
///
/// // Two types that call the same API share one breaker.
/// let options = QueueOptions::new().breaker(
///     Breaker::named("billing-api").probe_backoff(Duration::from_secs(2), Duration::from_secs(30)),
/// );
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breaker {
    on: bool,
    name: Option<String>,
    threshold: u32,
    first_probe: Duration,
    max_probe_interval: Duration,
}

impl Default for Breaker {
    fn default() -> Self {
        Self {
            on: true,
            name: None,
            threshold: 3,
            first_probe: Duration::from_secs(1),
            max_probe_interval: Duration::from_secs(60),
        }
    }
}

impl Breaker {
    /// The default: on, named by the handler's downstream or else by the message type;
    /// opens after 3 "down" failures in a row that lasted at least 1 s; probes 1 s after
    /// opening, then at doubling intervals up to 1 min.
    pub fn new() -> Self {
        Self::default()
    }

    /// A breaker named `name` (1 to 255 bytes), shared by every type that names it.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            ..Self::default()
        }
    }

    /// No breaker: a "down" failure is an ordinary failed attempt on the retry schedule.
    pub fn off() -> Self {
        Self {
            on: false,
            ..Self::default()
        }
    }

    /// "Down" failures in a row (without an answer from the downstream in between, none
    /// more than a minute after the one before) that open the breaker once the row has
    /// lasted at least a second; at least 1 (1 opens it at the first failure). The ones
    /// before the threshold are ordinary failed attempts, tried again after the first
    /// probe delay; one that reaches it sooner than a second after the row began is tried
    /// again then without using an attempt. A flaky server drops a few concurrent attempts
    /// at once and answers the next; a server that is down keeps failing.
    pub fn threshold(mut self, failures: u32) -> Self {
        self.threshold = failures;
        self
    }

    /// The first probe `first` after the breaker opened, then at doubling intervals up
    /// to `max` (each failed probe doubles the wait).
    pub fn probe_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.first_probe = first;
        self.max_probe_interval = max;
        self
    }

    /// Whether the breaker is on.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// The name given with [`Breaker::named`].
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// "Down" failures in a row that open it.
    pub fn failure_threshold(&self) -> u32 {
        self.threshold
    }

    /// How long after it opened the first probe starts.
    pub fn first_probe(&self) -> Duration {
        self.first_probe
    }

    /// The wait before the next probe once `failed` probes failed: the first probe delay,
    /// doubled per failed probe, at most the maximum interval.
    pub fn probe_delay(&self, failed: u32) -> Duration {
        let doubled = self
            .first_probe
            .checked_mul(1u32.checked_shl(failed.min(31)).unwrap_or(u32::MAX))
            .unwrap_or(Duration::MAX);
        doubled.min(self.max_probe_interval)
    }

    /// Why these settings cannot work, if they cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        if let Some(name) = &self.name {
            check_name(name)?;
        }
        if self.threshold == 0 {
            return Err("Breaker::threshold must be at least 1".into());
        }
        if self.first_probe.is_zero() || self.first_probe > self.max_probe_interval {
            return Err(format!(
                "Breaker::probe_backoff needs 0 < first ≤ max (got first {:?}, max {:?})",
                self.first_probe, self.max_probe_interval
            ));
        }
        Ok(())
    }
}

/// Checks that `name` can key a breaker's row.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_BREAKER_NAME_LEN {
        return Err(format!(
            "the breaker name {name:?} is {} bytes long; use 1 to {MAX_BREAKER_NAME_LEN}",
            name.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_wait_one_second_doubling_to_a_minute() {
        let b = Breaker::new();
        let secs: Vec<u64> = (0..9).map(|n| b.probe_delay(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(b.probe_delay(u32::MAX), Duration::from_secs(60));
        let fast = Breaker::new().probe_backoff(Duration::from_millis(100), Duration::from_secs(1));
        assert_eq!(fast.probe_delay(3), Duration::from_millis(800));
        assert_eq!(fast.probe_delay(4), Duration::from_secs(1));
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        assert!(Breaker::new().check().is_ok());
        assert!(Breaker::named("").check().unwrap_err().contains("1 to 255"));
        assert!(Breaker::named("x".repeat(256)).check().is_err());
        assert!(Breaker::new().threshold(0).check().is_err());
        let backwards =
            Breaker::new().probe_backoff(Duration::from_secs(5), Duration::from_secs(1));
        assert!(backwards.check().unwrap_err().contains("0 < first ≤ max"));
        assert!(Breaker::new()
            .probe_backoff(Duration::ZERO, Duration::from_secs(1))
            .check()
            .is_err());
    }
}
