//! Where a message that found no room at its site goes: the process's line per site, a pure
//! policy with time as an argument (pinned by the unit tests below, which run a slowed site
//! for simulated minutes).
//!
//! A site with a rate and burst 1 (every slowed site) only reaches its rate when a message
//! asks for each token as it comes due: a token that comes due while no message asks is not
//! saved beyond the one, so each late ask is time lost for good. Messages that find no
//! token are therefore booked one token apart on the process's line and deferred to their
//! booked times; a message that comes back to its booking, or that is first in an empty
//! line, waits here for the token when it is at most one gap (and at most
//! [`MAX_INLINE_WAIT`]) away, instead of being deferred to the back of the line while the
//! token goes unused. The line keeps to the ideal times (`first + k × gap`), so a steady
//! delay in coming back (the claim loop's poll) is paid once, not at every message.

use std::{
    collections::HashMap,
    time::{Duration, SystemTime},
};

use crate::shaping::MAX_SHAPING_DURATION;

/// Deferred messages of one site are spread at most this far ahead.
pub(super) const MAX_SPREAD: Duration = Duration::from_secs(600);
/// Longest time a message waits here for its site, in all (the rest waits in the queue).
pub(super) const MAX_INLINE_WAIT: Duration = Duration::from_secs(1);
/// Most messages of one site waiting here at once (the others wait in the queue, so the
/// worker's other slots go on with other sites' mail).
pub(super) const MAX_WAITERS: usize = 2;
/// Shortest wait here (a token due in less is waited for this long, not spun on).
const MIN_INLINE_WAIT: Duration = Duration::from_millis(1);
/// Most bookings remembered; past it they start over (a message then only loses its place).
const MAX_BOOKED: usize = 100_000;

/// What a message that found no room does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pace {
    /// Wait here this long, then ask the site again.
    Here(Duration),
    /// Go back to the queue until then.
    Defer(SystemTime),
}

/// The process's lines, one per site.
#[derive(Debug, Default)]
pub(super) struct Pacer {
    /// Per site, when the next booking goes (one gap after the last).
    next_free: HashMap<String, SystemTime>,
    /// Message id → the time it was deferred to.
    booked: HashMap<String, SystemTime>,
    /// Per site, messages waiting here now.
    waiting: HashMap<String, usize>,
}

impl Pacer {
    /// Message `id` of `site` found no room at `now`: the site has room again in `wait`,
    /// and its messages go `gap` apart. `waited` is how long it already waited here for
    /// this attempt. A [`Pace::Here`] counts the message as waiting until [`Pacer::done`].
    pub(super) fn no_room(
        &mut self,
        site: &str,
        id: &str,
        now: SystemTime,
        wait: Duration,
        gap: Duration,
        waited: Duration,
    ) -> Pace {
        let booked = self.booked.remove(id).is_some();
        let inline = gap.min(MAX_INLINE_WAIT);
        let waiters = self.waiting.get(site).copied().unwrap_or(0);
        if wait <= inline && waited + wait <= MAX_INLINE_WAIT && waiters < MAX_WAITERS {
            let next = self.next_free.get(site).copied();
            let token_at = now + wait;
            let line_free = next.is_none_or(|t| t <= token_at);
            if booked || waited > Duration::ZERO || line_free {
                if !booked && waited.is_zero() {
                    // First in line: this token is its; the next booking is a gap later.
                    let from = next.map_or(token_at, |t| t.max(token_at));
                    self.next_free.insert(site.to_owned(), from + gap);
                }
                *self.waiting.entry(site.to_owned()).or_default() += 1;
                return Pace::Here(wait.max(MIN_INLINE_WAIT));
            }
        }
        Pace::Defer(self.defer(site, id, now, wait, gap))
    }

    /// Books message `id` of `site`, deferred at `now` for at least `wait`, on the site's
    /// line: `gap` after the one booked before it (at most [`MAX_SPREAD`] ahead); when it
    /// comes back to its booking, it may wait here for its token ([`Pacer::no_room`]).
    pub(super) fn defer(
        &mut self,
        site: &str,
        id: &str,
        now: SystemTime,
        wait: Duration,
        gap: Duration,
    ) -> SystemTime {
        let (due, capped) = spread_due(self.next_free.get(site).copied(), now, wait);
        self.next_free.insert(site.to_owned(), due + gap);
        if !capped {
            if self.booked.len() >= MAX_BOOKED {
                self.booked.clear();
            }
            self.booked.insert(id.to_owned(), due);
        }
        due
    }

    /// A message that waited here ([`Pace::Here`]) asked again.
    pub(super) fn done(&mut self, site: &str) {
        if let Some(n) = self.waiting.get_mut(site) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.waiting.remove(site);
            }
        }
    }

    /// Message `id` was granted (or left): its booking, if any, is used.
    pub(super) fn forget(&mut self, id: &str) {
        self.booked.remove(id);
    }
}

/// The due time of the next deferred message of a site: `wait` from `now`, or the site's
/// next free time if later, but never more than [`MAX_SPREAD`] ahead; and whether that
/// horizon cut it (many messages then share the time, and none keeps a booking).
fn spread_due(
    next_free: Option<SystemTime>,
    now: SystemTime,
    wait: Duration,
) -> (SystemTime, bool) {
    let horizon = MAX_SPREAD.max(wait).min(MAX_SHAPING_DURATION);
    let earliest = now + wait.min(horizon);
    let due = next_free.filter(|t| *t > earliest).unwrap_or(earliest);
    let latest = now + horizon;
    (due.min(latest), due > latest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shaping::{SiteDecision, SiteLimit, SiteState};

    fn at(secs: f64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs_f64(1_000.0 + secs)
    }

    #[test]
    fn deferred_messages_of_a_site_come_back_one_gap_apart_within_the_horizon() {
        let now = at(0.0);
        let s = Duration::from_secs;
        assert_eq!(spread_due(None, now, s(2)), (at(2.0), false));
        // The next one goes after the last, not at the same time.
        assert_eq!(spread_due(Some(at(3.0)), now, s(2)), (at(3.0), false));
        // A free time already past is not used.
        assert_eq!(spread_due(Some(at(-1.0)), now, s(1)), (at(1.0), false));
        // Never further than the horizon, unless the wait itself is longer (a suspension).
        assert_eq!(
            spread_due(Some(at(9000.0)), now, Duration::ZERO),
            (now + MAX_SPREAD, true)
        );
        let long = s(3600);
        assert_eq!(spread_due(Some(at(9000.0)), now, long), (now + long, true));
        assert_eq!(spread_due(None, now, long), (now + long, false));
    }

    /// One process sending a backlog to a site slowed to `rate` (burst 1), its row decided
    /// by [`SiteState::decide`] as the database does: a message deferred to `t` is claimed
    /// again `poll(k)` later (the claim loop's delay, varying); one sent takes no time.
    /// The times the site granted a token.
    fn simulate(rate: f64, backlog: usize, run: f64, poll: impl Fn(usize) -> f64) -> Vec<f64> {
        let gap = Duration::from_secs_f64(1.0 / rate);
        let mut row = SiteState {
            site: "slowed.example".into(),
            limit: SiteLimit::unlimited(),
            tokens: 0.0,
            updated_at: at(0.0),
            slow_per_second: Some(rate),
            slowed_until: Some(at(run + 3600.0)),
            suspended_until: None,
            reason: None,
            configured: false,
            in_flight: 0,
        };
        let mut pacer = Pacer::default();
        // (when the message asks, its id, how long it waited here this attempt)
        let mut asks: Vec<(f64, usize, Duration)> =
            (0..backlog).map(|i| (0.0, i, Duration::ZERO)).collect();
        let mut granted = Vec::new();
        let mut claims = 0;
        while let Some(pos) = asks
            .iter()
            .enumerate()
            .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0).then(a.1 .1.cmp(&b.1 .1)))
            .map(|(i, _)| i)
        {
            let (t, id, waited) = asks.swap_remove(pos);
            if t > run {
                break;
            }
            let now = at(t);
            let key = id.to_string();
            if waited > Duration::ZERO {
                pacer.done("slowed.example");
            }
            match row.decide(now, 0) {
                SiteDecision::Granted { tokens, .. } => {
                    row.tokens = tokens;
                    row.updated_at = now;
                    pacer.forget(&key);
                    granted.push(t);
                }
                SiteDecision::Wait { wait, .. } => {
                    match pacer.no_room("slowed.example", &key, now, wait, gap, waited) {
                        Pace::Here(d) => asks.push((t + d.as_secs_f64(), id, waited + d)),
                        Pace::Defer(due) => {
                            claims += 1;
                            let due = due.duration_since(at(0.0)).unwrap().as_secs_f64();
                            asks.push((due + poll(claims), id, Duration::ZERO));
                        }
                    }
                }
            }
        }
        granted
    }

    #[test]
    fn a_site_slowed_to_one_a_second_gets_one_a_second_over_a_minute() {
        // The claim loop's delay as an idle process has it: 0 to 400 ms, varying.
        let poll = |k: usize| [0.0, 0.2, 0.05, 0.4, 0.1, 0.3][k % 6];
        let granted = simulate(1.0, 200, 60.0, poll);
        let n = granted.len();
        assert!((57..=61).contains(&n), "{n} grants in a minute at 1/s");
        // Never faster than the rate: burst 1.
        for w in granted.windows(2) {
            assert!(w[1] - w[0] >= 1.0 - 1e-6, "{w:?}");
        }
    }

    #[test]
    fn a_steady_claim_delay_is_paid_once_not_at_every_message() {
        for (rate, delay) in [(1.0_f64, 0.2), (20.0, 0.05), (20.0, 0.3), (1.0 / 60.0, 0.9)] {
            // A minute, or 60 tokens' time if longer.
            let run = (60.0 / rate).max(60.0);
            let expected = rate * run;
            let granted = simulate(rate, 2000, run, |_| delay);
            let n = granted.len() as f64;
            assert!(
                n >= expected * 0.95 && n <= expected + 1.0,
                "{n} grants in {run} s at {rate}/s with a claim delay of {delay} s"
            );
        }
    }

    #[test]
    fn only_the_head_of_a_line_waits_here() {
        let mut p = Pacer::default();
        let gap = Duration::from_millis(500);
        let now = at(0.0);
        let wait = Duration::from_millis(300);
        // The first finds the line empty and waits for the token.
        assert_eq!(
            p.no_room("s", "a", now, wait, gap, Duration::ZERO),
            Pace::Here(wait)
        );
        // The next ones are booked a gap apart, after it.
        assert_eq!(
            p.no_room("s", "b", now, wait, gap, Duration::ZERO),
            Pace::Defer(at(0.8))
        );
        assert_eq!(
            p.no_room("s", "c", now, wait, gap, Duration::ZERO),
            Pace::Defer(at(1.3))
        );
        // Back at its booking, b waits for its token (it does not go to the line's end).
        let back = at(0.85);
        assert_eq!(
            p.no_room(
                "s",
                "b",
                back,
                Duration::from_millis(450),
                gap,
                Duration::ZERO
            ),
            Pace::Here(Duration::from_millis(450))
        );
        // At most MAX_WAITERS wait at once; another message is deferred.
        assert_eq!(
            p.no_room(
                "s",
                "c",
                at(1.3),
                Duration::from_millis(100),
                gap,
                Duration::ZERO
            ),
            Pace::Defer(at(1.8))
        );
        p.done("s");
        // A wait longer than a gap (or than MAX_INLINE_WAIT) is never waited here.
        let mut q = Pacer::default();
        assert!(matches!(
            q.no_room(
                "t",
                "x",
                now,
                Duration::from_secs(2),
                Duration::from_secs(60),
                Duration::ZERO
            ),
            Pace::Defer(_)
        ));
        // Nor a wait for a free slot of a site without a rate (its gap is tiny).
        assert!(matches!(
            q.no_room(
                "u",
                "y",
                now,
                Duration::from_millis(100),
                Duration::from_millis(20),
                Duration::ZERO
            ),
            Pace::Defer(_)
        ));
    }
}
