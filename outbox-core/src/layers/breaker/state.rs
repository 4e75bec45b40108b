//! One breaker as this process sees it, as a pure state machine: what a message may do
//! (pass, probe, wait), what a "down" failure or an answer of the downstream changes, and
//! what a read of the shared row changes. No I/O and no clock of its own: the times come
//! in as arguments, so the unit tests below pin every transition.

use std::time::{Duration, Instant};

use crate::store::ProbeGrant;

/// How long a row of "down" failures (no answer from the downstream between them) must
/// have lasted before it opens the breaker: a flaky but working server drops a few
/// concurrent attempts at once, while a server that is down keeps failing for longer than
/// this. (A threshold of 1 opens at the first failure, as asked.)
pub(crate) const MIN_OUTAGE: Duration = Duration::from_secs(1);

/// A "down" failure this long after the previous one starts a new row: failures far apart
/// are not one outage.
pub(crate) const ROW_GAP: Duration = Duration::from_secs(60);

/// How a message got past the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ticket {
    /// The breaker was closed: an ordinary attempt.
    Pass,
    /// The breaker is open and this message is its probe.
    Probe,
    /// The breaker is open: the message is not started.
    Held,
}

/// What a "the downstream is down" failure leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Fewer than the threshold in a row: an ordinary failed attempt.
    Counted,
    /// The threshold is reached, but the row of failures began less than [`MIN_OUTAGE`]
    /// ago: no evidence of an outage yet (a flaky server drops a few concurrent attempts
    /// at once). The attempt is tried again later, without using an attempt.
    Suspected,
    /// This failure reached the threshold, and the row has lasted at least [`MIN_OUTAGE`]:
    /// the breaker opened here; record it in the database (which says whether another
    /// process had opened it first).
    Opened,
    /// The breaker was open already (another attempt found the outage first).
    AlreadyOpen,
    /// The probe failed: the breaker stays open until the next probe.
    ProbeFailed(ProbeGrant),
}

/// What a read of the shared row changed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Nothing.
    None,
    /// Another process opened the breaker.
    Opened,
    /// Another process's probe closed it.
    Closed,
}

/// The probe this process holds, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// None.
    Idle,
    /// Granted by the database until `until`; the next message to start is the probe.
    Granted { until: Instant, grant: ProbeGrant },
    /// A message is probing now, under the lease granted until `until`.
    Running { until: Instant, grant: ProbeGrant },
}

/// The breaker's state in this process.
#[derive(Debug, Clone)]
pub(crate) struct Local {
    open: bool,
    /// Since when, as this process learned it.
    opened: Option<Instant>,
    /// "Down" failures in a row while closed.
    in_row: u32,
    /// When the first of them came.
    row_since: Option<Instant>,
    /// When the last of them came.
    last_down: Option<Instant>,
    probe: Probe,
    /// Bumped by every transition made here and when its write to the shared row ends,
    /// so a read of the shared row that started before either cannot undo it.
    version: u64,
    /// Transitions made here whose write to the shared row has not ended: reads are not
    /// applied meanwhile.
    writing: u32,
}

impl Local {
    /// A closed breaker.
    pub(crate) fn new() -> Self {
        Self {
            open: false,
            opened: None,
            in_row: 0,
            row_since: None,
            last_down: None,
            probe: Probe::Idle,
            version: 0,
            writing: 0,
        }
    }

    /// Whether it is open.
    pub(crate) fn is_open(&self) -> bool {
        self.open
    }

    /// Since when it is open, as this process learned it.
    pub(crate) fn opened(&self) -> Option<Instant> {
        self.opened.filter(|_| self.open)
    }

    /// The version a read of the shared row must start from to apply ([`Local::observe`]).
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// Whether a message may start now: the breaker is closed, or this process holds a
    /// probe no message has taken yet.
    pub(crate) fn admits(&self, now: Instant) -> bool {
        !self.open || matches!(self.probe, Probe::Granted { until, .. } if until > now)
    }

    /// Whether this process should ask the database for the probe: open, and holding none
    /// (or only one whose lease ran out).
    pub(crate) fn wants_probe(&self, now: Instant) -> bool {
        self.open
            && match self.probe {
                Probe::Idle => true,
                Probe::Granted { until, .. } => until <= now,
                Probe::Running { .. } => false,
            }
    }

    /// A message starts.
    pub(crate) fn enter(&mut self, now: Instant) -> Ticket {
        if !self.open {
            return Ticket::Pass;
        }
        match self.probe {
            Probe::Granted { until, grant } if until > now => {
                self.probe = Probe::Running { until, grant };
                Ticket::Probe
            }
            _ => Ticket::Held,
        }
    }

    /// The message of `ticket` failed with "the downstream is down". The breaker opens
    /// when `threshold` such failures came in a row (no answer from the downstream between
    /// them, none more than [`ROW_GAP`] after the one before) and the row has lasted at
    /// least [`MIN_OUTAGE`]; a threshold of 1 opens it at once.
    pub(crate) fn down(&mut self, ticket: Ticket, threshold: u32, now: Instant) -> Verdict {
        match ticket {
            Ticket::Probe => match self.probe {
                Probe::Running { grant, .. } => {
                    self.probe = Probe::Idle;
                    Verdict::ProbeFailed(grant)
                }
                // Closed meanwhile by another process's probe: it stays closed.
                _ => Verdict::AlreadyOpen,
            },
            Ticket::Pass | Ticket::Held if self.open => Verdict::AlreadyOpen,
            Ticket::Pass | Ticket::Held => {
                let stale = self
                    .last_down
                    .is_some_and(|last| now.saturating_duration_since(last) > ROW_GAP);
                if stale {
                    self.forget_row();
                }
                let since = *self.row_since.get_or_insert(now);
                self.last_down = Some(now);
                self.in_row += 1;
                if self.in_row < threshold.max(1) {
                    return Verdict::Counted;
                }
                if threshold > 1 && now.saturating_duration_since(since) < MIN_OUTAGE {
                    return Verdict::Suspected;
                }
                self.open_here(now);
                Verdict::Opened
            }
        }
    }

    /// The message of `ticket` reached the downstream and got an answer (delivered, or a
    /// failure about the message itself); true when that closes the breaker (it was the
    /// probe). An answer to a message that started before the breaker opened proves
    /// nothing about now, and closes nothing.
    pub(crate) fn answered(&mut self, ticket: Ticket) -> bool {
        self.forget_row();
        let probed = ticket == Ticket::Probe && matches!(self.probe, Probe::Running { .. });
        if probed && self.open {
            self.close_here();
            return true;
        }
        false
    }

    /// The message of `ticket` did not test the downstream (no rate-limit token, or the
    /// worker failed it before or around the handler): a probe stays this process's to
    /// use, under the lease it was granted.
    pub(crate) fn not_attempted(&mut self, ticket: Ticket) {
        if let (Ticket::Probe, Probe::Running { until, grant }) = (ticket, self.probe) {
            self.probe = Probe::Granted { until, grant };
        }
    }

    /// The database gave this process the probe, until `until`.
    pub(crate) fn granted(&mut self, grant: ProbeGrant, until: Instant) {
        if self.open && !matches!(self.probe, Probe::Running { .. }) {
            self.probe = Probe::Granted { until, grant };
        }
    }

    /// A transition made here ([`Verdict::Opened`], or [`Local::answered`] closing it) is
    /// being written to the shared row; [`Local::written`] ends it.
    pub(crate) fn writing(&mut self) {
        self.writing += 1;
    }

    /// The write of a transition made here ended (committed or failed): reads that start
    /// from now on apply again.
    pub(crate) fn written(&mut self) {
        self.writing = self.writing.saturating_sub(1);
        self.version += 1;
    }

    /// The shared row, read from `version` on, says the breaker is `open`. Ignored while a
    /// transition made here is being written, or when one was made or written since the
    /// read started.
    pub(crate) fn observe(&mut self, version: u64, open: bool, now: Instant) -> Change {
        if self.writing > 0 || version != self.version || open == self.open {
            return Change::None;
        }
        if open {
            self.open_here(now);
            Change::Opened
        } else {
            self.close_here();
            Change::Closed
        }
    }

    fn forget_row(&mut self) {
        self.in_row = 0;
        self.row_since = None;
        self.last_down = None;
    }

    fn open_here(&mut self, now: Instant) {
        self.open = true;
        self.opened = Some(now);
        self.forget_row();
        self.probe = Probe::Idle;
        self.version += 1;
    }

    fn close_here(&mut self) {
        self.open = false;
        self.forget_row();
        self.probe = Probe::Idle;
        self.version += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const GRANT: ProbeGrant = ProbeGrant {
        probes_failed: 2,
        since_warned: Duration::from_secs(5),
    };

    /// A breaker opened at `now` by a row of failures that began a second earlier.
    fn open(now: Instant) -> Local {
        let mut b = Local::new();
        let start = now - MIN_OUTAGE;
        for _ in 0..2 {
            assert_eq!(b.down(Ticket::Pass, 3, start), Verdict::Counted);
        }
        assert_eq!(b.down(Ticket::Pass, 3, now), Verdict::Opened);
        b
    }

    #[test]
    fn a_closed_breaker_passes_and_opens_at_the_threshold_in_a_row_that_lasted() {
        let start = Instant::now();
        let now = start + MIN_OUTAGE;
        let mut b = Local::new();
        assert!(b.admits(start) && !b.is_open());
        assert_eq!(b.enter(start), Ticket::Pass);
        assert_eq!(b.down(Ticket::Pass, 3, start), Verdict::Counted);
        assert_eq!(b.down(Ticket::Pass, 3, start), Verdict::Counted);
        // An answer in between breaks the row.
        assert!(!b.answered(Ticket::Pass));
        assert_eq!(b.down(Ticket::Pass, 3, start), Verdict::Counted);
        assert_eq!(b.down(Ticket::Pass, 3, start), Verdict::Counted);
        assert_eq!(b.down(Ticket::Pass, 3, now), Verdict::Opened);
        assert!(b.is_open() && !b.admits(now) && b.wants_probe(now));
        assert_eq!(b.opened(), Some(now));
        // Attempts that were running when it opened find it open.
        assert_eq!(b.down(Ticket::Pass, 3, now), Verdict::AlreadyOpen);
        let mut one = Local::new();
        assert_eq!(one.down(Ticket::Pass, 1, now), Verdict::Opened);
        assert_eq!(Local::new().down(Ticket::Pass, 0, now), Verdict::Opened);
    }

    #[test]
    fn concurrent_failures_of_a_flaky_server_do_not_open_it() {
        // 16 attempts in flight; three of them drop within a few milliseconds, then the
        // others get answers: no outage.
        let t = Instant::now();
        let ms = Duration::from_millis;
        let mut b = Local::new();
        assert_eq!(b.down(Ticket::Pass, 3, t), Verdict::Counted);
        assert_eq!(b.down(Ticket::Pass, 3, t + ms(2)), Verdict::Counted);
        assert_eq!(b.down(Ticket::Pass, 3, t + ms(3)), Verdict::Suspected);
        assert_eq!(b.down(Ticket::Pass, 3, t + ms(999)), Verdict::Suspected);
        assert!(!b.is_open() && b.admits(t + ms(999)));
        assert!(!b.answered(Ticket::Pass));
        // The row starts again after the answer: a second later is not a second of failures.
        assert_eq!(b.down(Ticket::Pass, 3, t + ms(1500)), Verdict::Counted);
        assert_eq!(b.down(Ticket::Pass, 3, t + ms(1501)), Verdict::Counted);
        assert_eq!(b.down(Ticket::Pass, 3, t + ms(1502)), Verdict::Suspected);
        assert!(!b.is_open());
    }

    #[test]
    fn a_row_of_failures_with_no_answer_for_a_second_opens_it() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let mut b = Local::new();
        for at in [0, 1, 2, 400] {
            assert_ne!(b.down(Ticket::Pass, 3, t + ms(at)), Verdict::Opened);
        }
        assert_eq!(b.down(Ticket::Pass, 3, t + ms(1000)), Verdict::Opened);
        assert!(b.is_open());
        assert_eq!(b.opened(), Some(t + ms(1000)));
    }

    #[test]
    fn failures_far_apart_are_not_one_outage() {
        let t = Instant::now();
        let mut b = Local::new();
        assert_eq!(b.down(Ticket::Pass, 3, t), Verdict::Counted);
        assert_eq!(b.down(Ticket::Pass, 3, t + ROW_GAP / 2), Verdict::Counted);
        // More than ROW_GAP after the one before: a new row.
        let later = t + ROW_GAP / 2 + ROW_GAP + Duration::from_secs(1);
        assert_eq!(b.down(Ticket::Pass, 3, later), Verdict::Counted);
        assert_eq!(b.down(Ticket::Pass, 3, later), Verdict::Counted);
        assert_eq!(b.down(Ticket::Pass, 3, later + MIN_OUTAGE), Verdict::Opened);
    }

    #[test]
    fn an_open_breaker_holds_everything_but_one_probe() {
        let now = Instant::now();
        let mut b = open(now);
        assert_eq!(b.enter(now), Ticket::Held);
        let until = now + Duration::from_secs(60);
        b.granted(GRANT, until);
        assert!(b.admits(now) && !b.wants_probe(now));
        assert_eq!(b.enter(now), Ticket::Probe);
        // One probe at a time: the next message waits.
        assert!(!b.admits(now) && !b.wants_probe(now));
        assert_eq!(b.enter(now), Ticket::Held);
        // A grant that arrives while a probe runs changes nothing.
        b.granted(GRANT, until);
        assert_eq!(b.enter(now), Ticket::Held);
    }

    #[test]
    fn a_failed_probe_keeps_it_open_and_a_probe_that_gets_an_answer_closes_it() {
        let now = Instant::now();
        let until = now + Duration::from_secs(60);
        let mut b = open(now);
        b.granted(GRANT, until);
        assert_eq!(b.enter(now), Ticket::Probe);
        assert_eq!(b.down(Ticket::Probe, 3, now), Verdict::ProbeFailed(GRANT));
        assert!(b.is_open() && b.wants_probe(now) && !b.admits(now));
        b.granted(GRANT, until);
        assert_eq!(b.enter(now), Ticket::Probe);
        assert!(b.answered(Ticket::Probe));
        assert!(!b.is_open() && b.admits(now) && !b.wants_probe(now));
        assert_eq!(b.opened(), None);
        // Closed for good: the row of failures starts again from zero.
        assert_eq!(b.down(Ticket::Pass, 3, now), Verdict::Counted);
    }

    #[test]
    fn an_answer_to_a_message_started_before_the_breaker_opened_closes_nothing() {
        let now = Instant::now();
        let mut b = open(now);
        assert!(!b.answered(Ticket::Pass));
        assert!(b.is_open());
    }

    #[test]
    fn a_probe_stopped_before_the_downstream_stays_ours() {
        let now = Instant::now();
        let until = now + Duration::from_secs(60);
        let mut b = open(now);
        b.granted(GRANT, until);
        assert_eq!(b.enter(now), Ticket::Probe);
        b.not_attempted(Ticket::Probe);
        assert!(b.admits(now));
        assert_eq!(b.enter(now), Ticket::Probe);
        // Given back, it keeps the lease it was granted: once that ran out it admits
        // nothing and is asked for again.
        let later = until + Duration::from_millis(1);
        b.not_attempted(Ticket::Probe);
        assert!(!b.admits(later) && b.wants_probe(later));
        assert_eq!(b.enter(later), Ticket::Held);
    }

    #[test]
    fn a_read_is_not_applied_while_a_change_made_here_is_being_written() {
        let now = Instant::now();
        let mut b = Local::new();
        assert_eq!(b.down(Ticket::Pass, 1, now), Verdict::Opened);
        b.writing();
        // A read that started after the change but before its write committed.
        let v = b.version();
        assert_eq!(b.observe(v, false, now), Change::None);
        assert!(b.is_open());
        b.written();
        assert_eq!(
            b.observe(v, false, now),
            Change::None,
            "started before the write ended"
        );
        let v = b.version();
        assert_eq!(b.observe(v, true, now), Change::None);
        // Closing by a probe, the same way.
        b.granted(GRANT, now + Duration::from_secs(60));
        assert_eq!(b.enter(now), Ticket::Probe);
        assert!(b.answered(Ticket::Probe));
        b.writing();
        let v = b.version();
        assert_eq!(b.observe(v, true, now), Change::None);
        assert!(!b.is_open());
        b.written();
        let v = b.version();
        assert_eq!(
            b.observe(v, true, now),
            Change::Opened,
            "a later read applies"
        );
    }

    #[test]
    fn reads_of_the_shared_row_open_and_close_it_unless_a_change_here_came_after() {
        let now = Instant::now();
        let mut b = Local::new();
        let v = b.version();
        assert_eq!(b.observe(v, false, now), Change::None);
        assert_eq!(b.observe(v, true, now), Change::Opened);
        assert!(b.is_open() && b.wants_probe(now));
        let v = b.version();
        assert_eq!(b.observe(v, true, now), Change::None);
        assert_eq!(b.observe(v, false, now), Change::Closed);
        assert!(!b.is_open());
        // A read that started before this process opened it cannot close it again.
        let stale = b.version();
        assert_eq!(b.down(Ticket::Pass, 1, now), Verdict::Opened);
        assert_eq!(b.observe(stale, false, now), Change::None);
        assert!(b.is_open());
        // Another process's probe closed it while ours ran: our probe's failure keeps it
        // closed.
        let until = now + Duration::from_secs(60);
        b.granted(GRANT, until);
        assert_eq!(b.enter(now), Ticket::Probe);
        let v = b.version();
        assert_eq!(b.observe(v, false, now), Change::Closed);
        assert_eq!(b.down(Ticket::Probe, 3, now), Verdict::AlreadyOpen);
        assert!(!b.is_open());
    }
}
