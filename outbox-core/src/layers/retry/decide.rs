//! What a failed attempt leads to, as a pure function: the one decision the retry layer
//! acts on and the test helpers (`testing::Performed::gives_up`) report. No I/O and no clock: a due time is a delay ([`Due::After`], counted from the
//! time the settlement is written, by the one time authority of [`clock`](crate::clock))
//! or the handler's own time ([`Due::At`]), so the decision does not depend on when it is
//! made and the unit tests below pin every case.

use std::time::Duration;

use super::RetrySchedule;
use crate::{clock::Due, handler::HandlerErrorKind};

/// What happens to a message after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Tried again at `due`; the failed attempt counts.
    Retry(Due),
    /// Back at `due`, and the attempt is given back: a snooze is not a failure.
    Snooze(Due),
    /// Not tried again: the message goes to the dead letters.
    GiveUp {
        /// True when it failed on its last attempt (a failure that would otherwise be
        /// tried again); false for a permanent failure.
        exhausted: bool,
    },
}

/// The decision after attempt `attempt` (1 for the first) of at most `max_attempts` of
/// message `id` failed with `kind`:
///
/// * `Snooze` comes back after its delay with the attempt given back, whatever the count,
///   and so does a `SlowDown` that traffic shaping did not take (after `one_per`);
/// * `Permanent` and `Suppress` (its suppression written by the dispatch) give up at once;
/// * any other failure gives up once `attempt` reached `max_attempts`; else `RetryAt` and
///   `RetryAfter` come back at the handler's time, and `Retry` and `Down` (with the circuit
///   breaker off, or below its threshold: an ordinary failure) after `schedule`'s delay for
///   this attempt (its jitter keyed by `id`).
///
/// Cannot fail. A new [`HandlerErrorKind`] must be decided in the match below (it is
/// exhaustive on purpose).
pub(crate) fn decide(
    kind: HandlerErrorKind,
    attempt: u32,
    max_attempts: u32,
    schedule: &RetrySchedule,
    id: &str,
) -> Decision {
    let due = match kind {
        HandlerErrorKind::Snooze(delay) => return Decision::Snooze(Due::After(delay)),
        HandlerErrorKind::Permanent | HandlerErrorKind::Suppress(_) => {
            return Decision::GiveUp { exhausted: false }
        }
        // Shaping acts on a slowdown before this layer; unshaped, it waits like a snooze.
        HandlerErrorKind::SlowDown { one_per, .. } => {
            let wait = one_per.clamp(Duration::from_millis(1), Duration::from_secs(86_400));
            return Decision::Snooze(Due::After(wait));
        }
        HandlerErrorKind::RetryAt(at) => Due::At(at),
        HandlerErrorKind::RetryAfter(delay) => Due::After(delay),
        HandlerErrorKind::Retry | HandlerErrorKind::Down | HandlerErrorKind::DestinationDown => {
            Due::After(schedule.delay(attempt, id))
        }
    };
    if attempt >= max_attempts {
        Decision::GiveUp { exhausted: true }
    } else {
        Decision::Retry(due)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    fn schedule() -> RetrySchedule {
        RetrySchedule::fixed([Duration::from_secs(10), Duration::from_secs(60)])
    }

    fn after(secs: u64) -> Due {
        Due::After(Duration::from_secs(secs))
    }

    #[test]
    fn a_retry_follows_the_schedule_until_the_last_attempt() {
        let s = schedule();
        for kind in [
            HandlerErrorKind::Retry,
            HandlerErrorKind::Down,
            HandlerErrorKind::DestinationDown,
        ] {
            assert_eq!(decide(kind, 1, 3, &s, "m"), Decision::Retry(after(10)));
            assert_eq!(decide(kind, 2, 3, &s, "m"), Decision::Retry(after(60)));
            assert_eq!(
                decide(kind, 3, 3, &s, "m"),
                Decision::GiveUp { exhausted: true }
            );
        }
    }

    #[test]
    fn the_handlers_own_time_replaces_the_schedule_but_counts() {
        let s = schedule();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let kind = HandlerErrorKind::RetryAt(at);
        assert_eq!(decide(kind, 1, 2, &s, "m"), Decision::Retry(Due::At(at)));
        assert_eq!(
            decide(kind, 2, 2, &s, "m"),
            Decision::GiveUp { exhausted: true }
        );
        let kind = HandlerErrorKind::RetryAfter(Duration::from_secs(5));
        assert_eq!(decide(kind, 1, 2, &s, "m"), Decision::Retry(after(5)));
        assert_eq!(
            decide(kind, 2, 2, &s, "m"),
            Decision::GiveUp { exhausted: true }
        );
    }

    #[test]
    fn a_snooze_never_exhausts_and_a_permanent_failure_gives_up_at_once() {
        let s = schedule();
        let snooze = HandlerErrorKind::Snooze(Duration::from_secs(30));
        for attempt in [1, 3, 4] {
            assert_eq!(
                decide(snooze, attempt, 3, &s, "m"),
                Decision::Snooze(after(30))
            );
            assert_eq!(
                decide(HandlerErrorKind::Permanent, attempt, 3, &s, "m"),
                Decision::GiveUp { exhausted: false }
            );
        }
    }

    #[test]
    fn an_attempt_past_the_last_one_gives_up() {
        let kind = HandlerErrorKind::Retry;
        assert_eq!(
            decide(kind, 4, 3, &schedule(), "m"),
            Decision::GiveUp { exhausted: true }
        );
    }

    #[test]
    fn the_jitter_is_keyed_by_the_message() {
        let s = RetrySchedule::exponential(Duration::from_secs(10), 2.0, Duration::from_secs(100));
        let kind = HandlerErrorKind::Retry;
        assert_eq!(
            decide(kind, 2, 5, &s, "a"),
            Decision::Retry(Due::After(s.delay(2, "a")))
        );
    }

    #[test]
    fn a_slowdown_waits_like_a_snooze_and_a_suppression_gives_up_at_once() {
        let s = schedule();
        let slow = HandlerErrorKind::SlowDown {
            one_per: Duration::from_secs(2),
            during: Duration::from_secs(600),
        };
        assert_eq!(decide(slow, 3, 3, &s, "m"), Decision::Snooze(after(2)));
        let gone = HandlerErrorKind::Suppress(crate::SuppressionReason::HardBounce);
        assert_eq!(
            decide(gone, 1, 3, &s, "m"),
            Decision::GiveUp { exhausted: false }
        );
    }
}
