//! The outages of destinations as one process sees them: a pure state machine (time is an
//! argument) behind [`HandlerErrorKind::DestinationDown`](crate::HandlerErrorKind::DestinationDown).
//!
//! A site's first "destination down" begins an outage: the site is suspended for the first
//! probe interval. A "down" while that suspension lasts (messages that were running when
//! the site went down) changes nothing. A "down" after it ended is a failed probe: the
//! interval doubles, up to [`DESTINATION_PROBE_MAX`]. Any answer from the site (delivered,
//! or a failure that is not "down") ends the outage. An outage with no failure for
//! [`FORGET_AFTER`] is forgotten (the site had no traffic since), so the next one starts
//! over at the first interval.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use crate::handler::DESTINATION_PROBE_MAX;

/// The first probe interval of an outage.
pub(crate) const FIRST_PROBE: Duration = Duration::from_secs(1);

/// An outage without a failure for this long is forgotten.
pub(crate) const FORGET_AFTER: Duration = Duration::from_secs(300);

/// Most sites in an outage remembered; past it the forgotten ones go first, then all.
const MAX_SITES: usize = 10_000;

/// One site's outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Outage {
    since: Instant,
    probe: Duration,
    until: Instant,
    last_failure: Instant,
}

/// What a "destination down" means for its site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Down {
    /// An outage begins: suspend the site for `probe`.
    Began {
        /// The suspension.
        probe: Duration,
    },
    /// The probe failed: suspend the site for `probe` (doubled).
    ProbeFailed {
        /// The suspension.
        probe: Duration,
        /// How long the outage has lasted.
        lasted: Duration,
    },
    /// The site is suspended already, for `left` more.
    During {
        /// What is left of the suspension.
        left: Duration,
    },
}

/// The outages this process knows of, by site.
#[derive(Debug, Default)]
pub(crate) struct Outages {
    sites: HashMap<String, Outage>,
}

impl Outages {
    /// `site` did not answer at `now`.
    pub(crate) fn down(&mut self, site: &str, now: Instant) -> Down {
        let known = self
            .sites
            .get(site)
            .filter(|o| now.saturating_duration_since(o.last_failure) < FORGET_AFTER)
            .copied();
        let (down, outage) = match known {
            Some(o) if now < o.until => (
                Down::During {
                    left: o.until - now,
                },
                Outage {
                    last_failure: now,
                    ..o
                },
            ),
            Some(o) => {
                let probe = (o.probe * 2).min(DESTINATION_PROBE_MAX);
                let lasted = now.saturating_duration_since(o.since);
                let outage = Outage {
                    probe,
                    until: now + probe,
                    last_failure: now,
                    ..o
                };
                (Down::ProbeFailed { probe, lasted }, outage)
            }
            None => {
                let probe = FIRST_PROBE;
                let outage = Outage {
                    since: now,
                    probe,
                    until: now + probe,
                    last_failure: now,
                };
                (Down::Began { probe }, outage)
            }
        };
        if self.sites.len() >= MAX_SITES && !self.sites.contains_key(site) {
            self.sites
                .retain(|_, o| now.saturating_duration_since(o.last_failure) < FORGET_AFTER);
            if self.sites.len() >= MAX_SITES {
                self.sites.clear();
            }
        }
        self.sites.insert(site.to_owned(), outage);
        down
    }

    /// `site` answered at `now`: its outage (if any) ends; how long it lasted.
    pub(crate) fn answered(&mut self, site: &str, now: Instant) -> Option<Duration> {
        if self.sites.is_empty() {
            return None;
        }
        let o = self.sites.remove(site)?;
        Some(now.saturating_duration_since(o.since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_millis((s * 1000.0).round() as u64)
    }

    #[test]
    fn an_outage_begins_holds_during_its_suspension_and_doubles_at_each_failed_probe() {
        let t0 = Instant::now();
        let mut o = Outages::default();
        assert_eq!(o.down("a", t0), Down::Began { probe: secs(1.0) });
        // Messages that were running when it went down.
        assert_eq!(
            o.down("a", t0 + secs(0.2)),
            Down::During { left: secs(0.8) }
        );
        // Another site is not affected.
        assert_eq!(
            o.down("b", t0 + secs(0.3)),
            Down::Began { probe: secs(1.0) }
        );
        assert_eq!(
            o.down("a", t0 + secs(1.1)),
            Down::ProbeFailed {
                probe: secs(2.0),
                lasted: secs(1.1)
            }
        );
        let mut at = t0 + secs(1.1);
        let mut probe = secs(2.0);
        for _ in 0..10 {
            at += probe;
            let Down::ProbeFailed { probe: next, .. } = o.down("a", at) else {
                panic!("a failed probe");
            };
            assert!(next <= DESTINATION_PROBE_MAX);
            probe = next;
        }
        assert_eq!(probe, DESTINATION_PROBE_MAX);
    }

    #[test]
    fn an_answer_ends_the_outage_and_the_next_starts_over() {
        let t0 = Instant::now();
        let mut o = Outages::default();
        o.down("a", t0);
        o.down("a", t0 + secs(1.5));
        assert_eq!(o.answered("a", t0 + secs(4.0)), Some(secs(4.0)));
        assert_eq!(o.answered("a", t0 + secs(4.1)), None, "once");
        assert_eq!(
            o.down("a", t0 + secs(5.0)),
            Down::Began { probe: secs(1.0) }
        );
    }

    #[test]
    fn an_outage_without_failures_for_long_is_forgotten() {
        let t0 = Instant::now();
        let mut o = Outages::default();
        o.down("a", t0);
        o.down("a", t0 + secs(2.0));
        let later = t0 + secs(2.0) + FORGET_AFTER;
        assert_eq!(o.down("a", later), Down::Began { probe: secs(1.0) });
    }
}
