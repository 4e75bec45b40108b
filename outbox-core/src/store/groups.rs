//! The records of groups (campaigns): a group's progress as one read returns it, its
//! delivery rate, and the completion hook a group can carry.

use std::time::{Duration, SystemTime};

/// Length of the window the delivery rate is measured over (each group's row keeps the
/// current window and the rate of the one before; the settlement statements move them).
pub const RATE_WINDOW: Duration = Duration::from_secs(10);

/// The longest a group that delivers slowly (one message every few minutes) keeps
/// showing a rate after its last delivery; see [`RateWindow::per_second`].
pub const MAX_IDLE_AFTER: Duration = Duration::from_secs(3600);

/// Where one group stands: its messages per state, read at one time across every
/// process, and what outlives the rows (delivered and cancelled counts).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupProgress {
    /// The group's name.
    pub name: String,
    /// Due now, waiting for a worker.
    pub pending: u64,
    /// Due later, without a failure.
    pub scheduled: u64,
    /// Claimed by a worker.
    pub running: u64,
    /// Failed at least once, waiting for their next attempt.
    pub retrying: u64,
    /// Queued but held: the group or their type is paused.
    pub paused: u64,
    /// Delivered (or dropped as orphans), counted when their settlement was written, so
    /// the count outlives the rows.
    pub delivered: u64,
    /// Given up: in the dead letters now (a requeue takes them out again).
    pub dead: u64,
    /// Removed by a cancel before they started.
    pub cancelled: u64,
    /// Not sent because a suppression stops their recipient (found at enqueue or before
    /// sending).
    pub suppressed: u64,
    /// When the group was paused, while it is.
    pub paused_at: Option<SystemTime>,
    /// Why, as given when pausing, while it is paused.
    pub pause_reason: Option<String>,
    /// When its first delivery was recorded.
    pub first_delivered_at: Option<SystemTime>,
    /// When its last delivery was recorded.
    pub last_delivered_at: Option<SystemTime>,
    /// Deliveries per second over about the last [`RATE_WINDOW`]; 0 when the group is
    /// finished (nothing remains) or idle (nothing was delivered for longer than its pace
    /// explains, see [`RateWindow::per_second`]), so a stopped campaign shows no rate and
    /// no ETA rather than the last one it had.
    pub rate: f64,
    /// The type of the completion hook's message, if the group has one.
    pub hook: Option<String>,
    /// When the completion hook's message was enqueued, once it was.
    pub completed_at: Option<SystemTime>,
}

impl GroupProgress {
    /// Messages not finished yet: pending, scheduled, running, retrying and paused.
    pub fn remaining(&self) -> u64 {
        self.pending + self.scheduled + self.running + self.retrying + self.paused
    }

    /// Every message the group holds or held: remaining, delivered, dead, cancelled and
    /// suppressed (the number enqueued into it, unless dead letters were purged).
    pub fn total(&self) -> u64 {
        self.remaining() + self.delivered + self.dead + self.cancelled + self.suppressed
    }

    /// Whether the group is paused.
    pub fn is_paused(&self) -> bool {
        self.paused_at.is_some()
    }

    /// How long the remaining messages take at the current rate; `None` while paused,
    /// when nothing was delivered lately, or when nothing remains.
    pub fn eta(&self) -> Option<Duration> {
        let remaining = self.remaining();
        if remaining == 0 || self.is_paused() || self.rate <= 0.0 {
            return None;
        }
        Duration::try_from_secs_f64(remaining as f64 / self.rate).ok()
    }
}

/// The rate window a group's row records: when the current window opened, how many were
/// delivered in it, the rate of the window before, and the last delivery.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateWindow {
    /// When the current window opened (its first delivery).
    pub opened_at: SystemTime,
    /// Deliveries recorded in it.
    pub delivered: u64,
    /// Deliveries per second in the window before, if there was one.
    pub previous: Option<f64>,
    /// When the last delivery was recorded.
    pub last_delivered_at: SystemTime,
}

impl RateWindow {
    /// The delivery rate at `now`: while the current window is younger than
    /// [`RATE_WINDOW`], its deliveries plus the previous window's rate for the rest of
    /// the window's length (a sliding window); after that (nothing was delivered since it
    /// closed), its deliveries over the time since it opened, falling towards 0.
    ///
    /// 0 once the group is idle: nothing was delivered for two windows, or for three
    /// gaps between deliveries at the previous window's rate if that is longer (a group
    /// sending one message a minute is not idle between two of them), at most
    /// [`MAX_IDLE_AFTER`].
    pub fn per_second(&self, now: SystemTime) -> f64 {
        if now
            .duration_since(self.last_delivered_at)
            .unwrap_or_default()
            >= self.idle_after()
        {
            return 0.0;
        }
        let window = RATE_WINDOW.as_secs_f64();
        let elapsed = now
            .duration_since(self.opened_at)
            .unwrap_or_default()
            .as_secs_f64();
        let delivered = self.delivered as f64;
        match self.previous {
            _ if elapsed >= window => delivered / elapsed,
            Some(previous) => (delivered + previous * (window - elapsed)) / window,
            // The first window: its own rate, over at least a second.
            None => delivered / elapsed.max(1.0),
        }
    }

    /// How long after its last delivery the group counts as idle.
    fn idle_after(&self) -> Duration {
        let gaps = match self.previous {
            Some(rate) if rate > 0.0 => {
                Duration::try_from_secs_f64(3.0 / rate).unwrap_or(MAX_IDLE_AFTER)
            }
            _ => Duration::ZERO,
        };
        gaps.max(2 * RATE_WINDOW).min(MAX_IDLE_AFTER)
    }
}

/// The message a group's completion hook enqueues: a type tag and its stored payload,
/// with the type's attempts and priority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupHook {
    /// The message's type tag.
    pub type_tag: String,
    /// Its payload (JSON bytes).
    pub payload: Vec<u8>,
    /// Attempts it gets.
    pub max_attempts: u32,
    /// Its priority.
    pub priority: u16,
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    fn at(secs: f64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs_f64(1_000.0 + secs)
    }

    fn window(delivered: u64, previous: Option<f64>) -> RateWindow {
        RateWindow {
            opened_at: at(0.0),
            delivered,
            previous,
            last_delivered_at: at(0.0),
        }
    }

    #[test]
    fn a_young_window_blends_in_the_previous_rate() {
        let w = window(50, Some(100.0));
        assert_eq!(w.per_second(at(0.0)), 100.0 + 5.0);
        assert_eq!(w.per_second(at(5.0)), (50.0 + 500.0) / 10.0);
    }

    #[test]
    fn the_first_window_counts_over_at_least_a_second() {
        assert_eq!(window(30, None).per_second(at(0.1)), 30.0);
        assert_eq!(window(30, None).per_second(at(3.0)), 10.0);
    }

    #[test]
    fn a_closed_window_falls_towards_zero() {
        let w = window(1_000, Some(100.0));
        assert_eq!(w.per_second(at(10.0)), 100.0);
        assert_eq!(w.per_second(at(19.0)), 1_000.0 / 19.0);
    }

    #[test]
    fn an_idle_group_has_no_rate() {
        // A fast group that stopped: idle two windows after its last delivery.
        let fast = window(1_000, Some(100.0));
        assert_eq!(fast.per_second(at(20.0)), 0.0);
        assert_eq!(fast.per_second(at(13.0 * 60.0)), 0.0);
        assert_eq!(window(3, None).per_second(at(20.0)), 0.0);
        // One message a minute: still sending 2 minutes after the last one, idle after 3.
        let slow = window(1, Some(1.0 / 60.0));
        assert_eq!(slow.per_second(at(120.0)), 1.0 / 120.0);
        assert_eq!(slow.per_second(at(180.0)), 0.0);
        // However slow, idle after an hour.
        assert_eq!(window(1, Some(1e-9)).per_second(at(3600.0)), 0.0);
    }

    #[test]
    fn a_clock_behind_the_window_reads_as_its_start() {
        assert_eq!(window(5, Some(1.0)).per_second(at(-3.0)), 1.5);
    }

    fn progress() -> GroupProgress {
        GroupProgress {
            name: "g".into(),
            pending: 10,
            scheduled: 1,
            running: 2,
            retrying: 3,
            paused: 4,
            delivered: 100,
            dead: 5,
            cancelled: 6,
            suppressed: 0,
            paused_at: None,
            pause_reason: None,
            first_delivered_at: None,
            last_delivered_at: None,
            rate: 2.0,
            hook: None,
            completed_at: None,
        }
    }

    #[test]
    fn totals_and_eta() {
        let p = progress();
        assert_eq!(p.remaining(), 20);
        assert_eq!(p.total(), 131);
        assert_eq!(p.eta(), Some(Duration::from_secs(10)));
        let paused = GroupProgress {
            paused_at: Some(UNIX_EPOCH),
            ..progress()
        };
        assert_eq!(paused.eta(), None);
        let idle = GroupProgress {
            rate: 0.0,
            ..progress()
        };
        assert_eq!(idle.eta(), None);
    }
}
