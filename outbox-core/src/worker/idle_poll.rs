//! How often an idle process asks the database whether any of its idle types has due
//! messages (where no commit signal reaches it: MariaDB, another process's SQLite commit,
//! delayed and retried messages coming due): a pure policy, pinned by the unit tests below.
//!
//! Right after work the question is asked every `min`; each answer of "nothing due"
//! doubles the pause, up to `max`. Work anywhere in the process (a claim that returned
//! messages, a probe that found some) starts it over at `min`. So a busy process picks up
//! new work within `min`, and an idle one costs one small statement per `max`.

use std::time::Duration;

/// The pause before the next "anything due?" probe.
#[derive(Debug, Clone)]
pub(crate) struct IdlePoll {
    min: Duration,
    max: Duration,
    wait: Duration,
}

impl IdlePoll {
    /// Starts at `min` (a process starts busy: its backlog may be waiting); `max` is
    /// raised to `min` if below it.
    pub(crate) fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max: max.max(min),
            wait: min,
        }
    }

    /// The pause before the next probe.
    pub(crate) fn wait(&self) -> Duration {
        self.wait
    }

    /// Some worker of the process claimed messages: new work may follow soon.
    pub(crate) fn worked(&mut self) {
        self.wait = self.min;
    }

    /// A probe answered: `found` whether any type had due messages.
    pub(crate) fn probed(&mut self, found: bool) {
        self.wait = if found {
            self.min
        } else {
            (self.wait * 2).min(self.max)
        };
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
    fn nothing_due_doubles_the_pause_up_to_the_maximum() {
        let mut p = IdlePoll::new(50 * MS, 1000 * MS);
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
        (0..10).for_each(|_| p.probed(false));
        p.probed(true);
        assert_eq!(p.wait(), 50 * MS);
    }

    #[test]
    fn work_in_the_process_starts_over() {
        let mut p = IdlePoll::new(50 * MS, 1000 * MS);
        (0..10).for_each(|_| p.probed(false));
        p.worked();
        assert_eq!(p.wait(), 50 * MS);
    }

    #[test]
    fn a_maximum_below_the_minimum_is_the_minimum() {
        let mut p = IdlePoll::new(200 * MS, 100 * MS);
        p.probed(false);
        assert_eq!(p.wait(), 200 * MS);
    }
}
