//! Per-type worker options and their defaults.

use std::{sync::Arc, time::Duration};

use crate::{
    counters::{Counters, Tally},
    layers::{breaker::Breaker, retry::RetrySchedule},
    worker::WorkerSettings,
};

/// Messages claimed per statement unless set (see [`QueueOptions::batch_size`]).
const DEFAULT_BATCH: usize = 100;

/// How the worker of one message type runs.
///
/// Defaults: concurrency 10, batch 100 (on PostgreSQL and MariaDB growing to 500 while the
/// handlers outpace the claims), leases
/// extended every 10 s and lost after 3 missed heartbeats (their messages then go to others),
/// retries after 60 s, 5 min, 15 min, then hourly ([`RetrySchedule::default`]), no rate
/// limit, a circuit breaker ([`Breaker::new`]).
#[derive(Debug, Clone)]
pub struct QueueOptions {
    concurrency: usize,
    batch_size: Option<usize>,
    heartbeat_interval: Duration,
    missed_heartbeats: usize,
    schedule: RetrySchedule,
    bucket: Option<String>,
    max_inline_wait: Duration,
    breaker: Breaker,
}

impl Default for QueueOptions {
    fn default() -> Self {
        Self {
            concurrency: 10,
            batch_size: None,
            heartbeat_interval: Duration::from_secs(10),
            missed_heartbeats: 3,
            schedule: RetrySchedule::default(),
            bucket: None,
            max_inline_wait: Duration::from_secs(1),
            breaker: Breaker::default(),
        }
    }
}

impl QueueOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Handler calls in flight at once for this type.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// Messages claimed per statement; the next batch is claimed once half a batch is
    /// left, so at most a batch and a half of claimed messages wait in memory for a free
    /// slot. Larger batches mean fewer, larger transactions; claimed messages that wait
    /// half their lease without starting are given back.
    ///
    /// Unset, the batch is 100. On PostgreSQL and MariaDB it doubles, up to 500, each time
    /// the handlers finish a batch before the next claim returns (a fast backlog), and a
    /// claim that finds fewer messages than it asked for starts it over at 100; slow
    /// handlers never wait for a claim, so they keep batches of 100, and a batch whose
    /// doubling would hold more than 16 MiB of payloads stays as it is. SQLite keeps 100:
    /// there larger batches sped a no-op drain up by about 30 % but raised a worker's
    /// peak memory by about 20 MB. A rate-limited type claims its concurrency, and never
    /// more, since its backlog waits for tokens anyway. Set here, the batch is fixed.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = Some(n);
        self
    }

    /// No longer has an effect: an idle process looks for due messages of all its types
    /// in one query, at the pace of [`Outbox::idle_poll`](crate::Outbox::idle_poll).
    #[deprecated(
        since = "0.1.0",
        note = "idle polling is per process now: set it with Outbox::idle_poll"
    )]
    pub fn poll_interval(self, _period: Duration) -> Self {
        self
    }

    /// How often the worker extends the leases of the messages it holds.
    pub fn heartbeat_interval(mut self, period: Duration) -> Self {
        self.heartbeat_interval = period;
        self
    }

    /// Missed heartbeats after which a worker's leases expire and its claimed messages
    /// are handed to other workers (lease = interval × this).
    pub fn missed_heartbeats(mut self, n: usize) -> Self {
        self.missed_heartbeats = n;
        self
    }

    /// When failed attempts are tried again.
    pub fn retry(mut self, schedule: RetrySchedule) -> Self {
        self.schedule = schedule;
        self
    }

    /// Takes a token from the shared bucket `name` before each message (define the bucket
    /// with [`Outbox::rate_limit`](crate::Outbox::rate_limit)). Several types may share a bucket.
    pub fn rate_limit(mut self, name: &str) -> Self {
        self.bucket = Some(name.to_owned());
        self
    }

    /// The longest wait for a token spent holding a worker slot (default 1 s); a message
    /// that would wait longer is rescheduled for when its token is due.
    pub fn max_inline_wait(mut self, wait: Duration) -> Self {
        self.max_inline_wait = wait;
        self
    }

    /// The type's circuit breaker: which one, how many "down" failures in a row open it,
    /// how it probes, or [`Breaker::off`]. On by default ([`Breaker::new`]).
    pub fn breaker(mut self, breaker: Breaker) -> Self {
        self.breaker = breaker;
        self
    }

    pub(crate) fn breaker_config(&self) -> &Breaker {
        &self.breaker
    }

    pub(crate) fn schedule(&self) -> &RetrySchedule {
        &self.schedule
    }

    pub(crate) fn bucket(&self) -> Option<&str> {
        self.bucket.as_deref()
    }

    pub(crate) fn inline_wait(&self) -> Duration {
        self.max_inline_wait
    }

    /// Explains a setting that cannot work.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.concurrency == 0 {
            return Err("concurrency must be at least 1".into());
        }
        if self.batch_size == Some(0) {
            return Err("batch_size must be at least 1".into());
        }
        if self.heartbeat_interval < Duration::from_millis(100) {
            return Err("heartbeat_interval must be at least 100 ms".into());
        }
        self.schedule.check()?;
        self.breaker.check()?;
        if self.missed_heartbeats < 2 {
            return Err(
                "missed_heartbeats must be at least 2, or live workers lose their messages".into(),
            );
        }
        Ok(())
    }

    /// The longest shutdown timeout under which a stopping worker keeps its messages:
    /// `heartbeat_interval × (missed_heartbeats − 1)` (it sends no heartbeats meanwhile).
    pub(crate) fn safe_shutdown(&self) -> Duration {
        self.heartbeat_interval * (self.missed_heartbeats.saturating_sub(1) as u32)
    }

    pub(crate) fn concurrency_limit(&self) -> usize {
        self.concurrency
    }

    /// The worker settings of `type_tag`, without an owner (its supervisor names each
    /// worker it starts); `max_default` is how far the database lets a default batch grow,
    /// `counters` (every type's) and `own` (this type's) what the outcomes of its attempts
    /// are counted into.
    pub(crate) fn settings_for(
        &self,
        type_tag: &'static str,
        keep_done: bool,
        max_default: usize,
        counters: &Arc<Counters>,
        own: &Arc<Counters>,
    ) -> WorkerSettings {
        let batch_size = self.batch_size.unwrap_or(match self.bucket {
            Some(_) => self.concurrency,
            None => DEFAULT_BATCH,
        });
        WorkerSettings {
            type_tag,
            owner: String::new(),
            keep_done,
            rate_limited: self.bucket.is_some(),
            batch_size,
            max_batch_size: match (self.batch_size, &self.bucket) {
                (None, None) => max_default.max(batch_size),
                _ => batch_size,
            },
            first_claim: self.concurrency.min(batch_size),
            heartbeat_interval: self.heartbeat_interval,
            lease: self.heartbeat_interval * self.missed_heartbeats as u32,
            tally: Tally::new(type_tag, Arc::clone(counters), Arc::clone(own)),
            recipient_of: None,
            ordered: false,
        }
    }
}
