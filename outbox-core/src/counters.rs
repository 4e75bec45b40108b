//! In-process tallies of what the workers did, for drain reports and logs, and the same
//! events as `metrics` counters per type: bumped once per attempt by the worker's flusher
//! once the attempt's settlement is written (a settlement the database refused because the
//! message's lease had been taken over counts nothing), read by the outbox (and by
//! whatever recorder the application installed).

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

/// The names of the metrics the outbox records through the `metrics` facade.
pub mod names {
    /// Counter: messages written by an enqueue (duplicates not counted); label `type`.
    pub const ENQUEUED: &str = "outbox_enqueued_total";
    /// Counter: messages whose handler returned `Ok`; label `type`.
    pub const DELIVERED: &str = "outbox_delivered_total";
    /// Counter: failed attempts that will be tried again (and a last attempt whose worker
    /// stopped without reporting); label `type`.
    pub const RETRIED: &str = "outbox_retried_total";
    /// Counter: messages moved to the dead letters; label `type`.
    pub const DEAD_LETTERED: &str = "outbox_dead_lettered_total";
    /// Counter: messages completed without their handler by the orphan check; label `type`.
    pub const ORPHANED: &str = "outbox_orphaned_total";
    /// Counter: messages put back without an attempt (snooze, deferral, no token);
    /// label `type`.
    pub const DEFERRED: &str = "outbox_deferred_total";
    /// Counter: times a message found its rate bucket empty and waited (in the worker or
    /// back in the queue); labels `type`, `bucket`.
    pub const RATE_LIMIT_WAITS: &str = "outbox_rate_limit_waits_total";
    /// Histogram: handler run time in seconds; labels `type`, `outcome` (`ok`, `error`).
    pub const HANDLER_DURATION: &str = "outbox_handler_duration_seconds";
    /// Histogram: seconds from a message's due time to its handler's start; label `type`.
    pub const PICKUP_LATENCY: &str = "outbox_pickup_latency_seconds";
    /// Gauge: messages per state; labels `type`, `state` (`pending`, `scheduled`,
    /// `running`, `retrying`, `paused`, `done`, `suppressed`, `dead`).
    pub const QUEUE_DEPTH: &str = "outbox_queue_depth";
    /// Gauge: age in seconds of the longest-waiting due message (0 when none is due);
    /// label `type`.
    pub const OLDEST_DUE_AGE: &str = "outbox_oldest_due_age_seconds";
    /// Gauge per circuit breaker (label `breaker`): 1 while open, 0 while closed, as this
    /// process last read it.
    pub const BREAKER_OPEN: &str = "outbox_breaker_open";
    /// Counter: messages a worker found suppressed before sending (kept as suppressed, not
    /// sent); labelled `type`. Those found at enqueue show in the `suppressed` queue depth.
    pub const SUPPRESSED: &str = "outbox_suppressed_total";
    /// Counter: messages traffic shaping deferred (labels `site`, `why`: `limit` when the
    /// site had no room, `reply` when a rule matched the server's reply); not attempts.
    pub const SHAPING_DEFERRED: &str = "outbox_shaping_deferred_total";
    /// Counter: a rule slowed or suspended a site (labels `site`, `rule`).
    pub const SHAPING_ACTIONS: &str = "outbox_shaping_actions_total";
}

/// Shared counters, bumped by every worker's flusher for the settlements it wrote.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    delivered: AtomicU64,
    failed_attempts: AtomicU64,
    given_up: AtomicU64,
    orphaned: AtomicU64,
    deferred: AtomicU64,
}

/// How many handler calls ended which way, since a point in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryCounts {
    /// Messages whose handler returned `Ok`.
    pub delivered: u64,
    /// Attempts that failed and will be tried again.
    pub failed_attempts: u64,
    /// Messages given up (moved to the dead letters): permanent errors, undecodable
    /// payloads, attempts exhausted.
    pub given_up: u64,
    /// Messages completed without the handler because their orphan check said so.
    pub orphaned: u64,
    /// Times a message was put back without an attempt (rate limit, snooze).
    pub deferred: u64,
}

impl Counters {
    pub(crate) fn delivered(&self) {
        self.delivered.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn failed_attempt(&self) {
        self.failed_attempts.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn given_up(&self) {
        self.given_up.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn orphaned(&self) {
        self.orphaned.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn deferred(&self) {
        self.deferred.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> DeliveryCounts {
        DeliveryCounts {
            delivered: self.delivered.load(Ordering::Relaxed),
            failed_attempts: self.failed_attempts.load(Ordering::Relaxed),
            given_up: self.given_up.load(Ordering::Relaxed),
            orphaned: self.orphaned.load(Ordering::Relaxed),
            deferred: self.deferred.load(Ordering::Relaxed),
        }
    }
}

impl DeliveryCounts {
    /// What happened between `earlier` and `self`.
    pub(crate) fn since(self, earlier: DeliveryCounts) -> DeliveryCounts {
        DeliveryCounts {
            delivered: self.delivered - earlier.delivered,
            failed_attempts: self.failed_attempts - earlier.failed_attempts,
            given_up: self.given_up - earlier.given_up,
            orphaned: self.orphaned - earlier.orphaned,
            deferred: self.deferred - earlier.deferred,
        }
    }
}

/// What one attempt's end counts as, decided with its settlement and counted once that
/// settlement is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The handler returned `Ok`.
    Delivered,
    /// The orphan check completed it without the handler.
    Orphaned,
    /// The attempt failed and the message will be tried again.
    FailedAttempt,
    /// Put back without an attempt (snooze, deferral, no rate token).
    Deferred,
    /// Given up: moved to the dead letters.
    GivenUp {
        /// The last attempt's worker stopped without reporting; that attempt counts as a
        /// failed attempt too.
        lost_attempt: bool,
        /// Attempts made, including the last (for the log line of the move).
        attempts: u32,
    },
    /// Not started: a suppression stops its recipient.
    Suppressed,
}

/// One queue's view of the shared [`Counters`]: every outcome also goes to the `metrics`
/// counter of that event, labelled with the type.
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    queue: &'static str,
    totals: Arc<Counters>,
    own: Arc<Counters>,
}

impl Tally {
    /// Counts the outcomes of `queue` into `totals` (every type's), `own` (this type's)
    /// and the `metrics` counters.
    pub(crate) fn new(queue: &'static str, totals: Arc<Counters>, own: Arc<Counters>) -> Self {
        Self { queue, totals, own }
    }

    /// Bumps one counter in both the totals and the type's own counters.
    fn both(&self, bump: impl Fn(&Counters)) {
        bump(&self.totals);
        bump(&self.own);
    }

    fn count(&self, name: &'static str) {
        metrics::counter!(name, "type" => self.queue).increment(1);
    }

    /// Counts one attempt's end (its settlement was written).
    pub(crate) fn record(&self, outcome: Outcome) {
        match outcome {
            Outcome::Delivered => {
                self.both(Counters::delivered);
                self.count(names::DELIVERED);
            }
            Outcome::Orphaned => {
                self.both(Counters::orphaned);
                self.count(names::ORPHANED);
            }
            Outcome::FailedAttempt => self.failed_attempt(),
            Outcome::Deferred => {
                self.both(Counters::deferred);
                self.count(names::DEFERRED);
            }
            Outcome::Suppressed => self.count(names::SUPPRESSED),
            Outcome::GivenUp { lost_attempt, .. } => {
                if lost_attempt {
                    self.failed_attempt();
                }
                self.both(Counters::given_up);
                self.count(names::DEAD_LETTERED);
            }
        }
    }

    fn failed_attempt(&self) {
        self.both(Counters::failed_attempt);
        self.count(names::RETRIED);
    }
}
