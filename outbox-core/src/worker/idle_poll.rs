//! How often an idle process asks the database whether any of its idle types has due
//! messages (where no commit signal reaches it: MariaDB, another process's SQLite commit,
//! delayed and retried messages coming due): a pure policy, pinned by the unit tests below.
//!
//! Right after work the question is asked every `min`, [`LINGER`] times; after that each
//! answer of "nothing due" doubles the pause, up to `max`. Work anywhere in the process (a
//! claim that returned messages, a probe that found some) starts it over. So a process
//! that has just worked picks up new work within `min` (a steady trickle every 50 ms is
//! not missed for 100 ms), and an idle one costs one small statement per `max`.

use std::time::Duration;

/// Probes that find nothing, after work, before the pause starts to grow.
pub(crate) const LINGER: u32 = 10;

/// The pause before the next "anything due?" probe.
#[derive(Debug, Clone)]
pub(crate) struct IdlePoll {
    min: Duration,
    max: Duration,
    wait: Duration,
    /// Probes that found nothing since the last work.
    empty: u32,
}

impl IdlePoll {
    /// Starts at `min` (a process starts busy: its backlog may be waiting); `max` is
    /// raised to `min` if below it.
    pub(crate) fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max: max.max(min),
            wait: min,
            empty: 0,
        }
    }

    /// The pause before the next probe.
    pub(crate) fn wait(&self) -> Duration {
        self.wait
    }

    /// Some worker of the process claimed messages: new work may follow soon.
    pub(crate) fn worked(&mut self) {
        self.wait = self.min;
        self.empty = 0;
    }

    /// A probe answered: `found` whether any type had due messages.
    pub(crate) fn probed(&mut self, found: bool) {
        if found {
            self.worked();
        } else if self.empty < LINGER {
            self.empty += 1;
        } else {
            self.wait = (self.wait * 2).min(self.max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn starts_at_the_minimum() {
        assert_eq!(IdlePoll::new(50 * MS, 1000 * MS).wait(), 50 * MS);
    }

    #[test]
    fn after_work_the_pause_stays_short_for_a_while() {
        let mut p = IdlePoll::new(50 * MS, 1000 * MS);
        for _ in 0..LINGER {
            p.probed(false);
            assert_eq!(p.wait(), 50 * MS);
        }
    }

    #[test]
    fn then_nothing_due_doubles_the_pause_up_to_the_maximum() {
        let mut p = IdlePoll::new(50 * MS, 1000 * MS);
        (0..LINGER).for_each(|_| p.probed(false));
        let mut seen = Vec::new();
        for _ in 0..7 {
            p.probed(false);
            seen.push(p.wait().as_millis());
        }
        assert_eq!(seen, [100, 200, 400, 800, 1000, 1000, 1000]);
    }

    #[test]
    fn a_probe_that_finds_work_starts_over() {
        let mut p = IdlePoll::new(50 * MS, 1000 * MS);
        (0..20).for_each(|_| p.probed(false));
        p.probed(true);
        assert_eq!(p.wait(), 50 * MS);
        (0..LINGER).for_each(|_| p.probed(false));
        assert_eq!(p.wait(), 50 * MS, "and lingers again");
    }

    #[test]
    fn work_in_the_process_starts_over() {
        let mut p = IdlePoll::new(50 * MS, 1000 * MS);
        (0..20).for_each(|_| p.probed(false));
        p.worked();
        assert_eq!(p.wait(), 50 * MS);
    }

    #[test]
    fn a_maximum_below_the_minimum_is_the_minimum() {
        let mut p = IdlePoll::new(200 * MS, 100 * MS);
        (0..=LINGER).for_each(|_| p.probed(false));
        assert_eq!(p.wait(), 200 * MS);
    }
}
