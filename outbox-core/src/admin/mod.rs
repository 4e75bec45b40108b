//! Operating the outbox from code: live messages, groups, dead letters, pause/resume, rate
//! buckets, circuit breakers, the suppression list and status counts. Everything here works from any process on the database, with or without
//! workers running, and needs no handler registered.

mod dead_letters;
mod endpoints;
mod groups;
mod inbox;
mod messages;
mod shaping;
mod summary;
mod suppressions;

use std::{
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

pub use crate::store::{
    BreakerState, DeadLetter, DeadLetterFilter, FailedAttempt, GroupProgress, HeldBy, HeldKey,
    LiveFilter, LiveMessage, LiveMessageDetail, LiveState, MinuteOutcomes, NewSuppression,
    PausedType, ReplayFilter, Requeued, SuppressedMessage, Suppression, SuppressionFilter,
    SuppressionReason, SuppressionScope, TokenUse, TypeCounts, TypeOutcomes, WorkersSeen,
    MAX_TOKEN_BATCH,
};
pub use dead_letters::DeadLetters;
pub use endpoints::Endpoints;
pub use groups::Groups;
pub use inbox::ProcessedIds;
pub use messages::{LiveMessages, LivePage, LIVE_BATCH, MAX_HELD_KEYS, MAX_MESSAGE_EVENTS};
pub use shaping::ShapingAdmin;
pub use summary::TypeSummary;
pub use suppressions::{Suppressions, MAX_SUPPRESSION_PAGE};

use crate::{
    clock::{Clock, SystemClock},
    error::Error,
    store::{Backend, BucketState, RateLimit},
};

/// How long messages may have been due, with no worker seen (no heartbeat in the
/// registry) for as long, before [`Admin::unattended`] reports them: two minutes, longer
/// than a minutely cron's gap between two drains.
pub const UNATTENDED_AFTER: Duration = Duration::from_secs(120);

/// Messages that are due while no worker runs: what [`Admin::unattended`] finds when the
/// workers were forgotten (never started, crashed, a cron entry that stopped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unattended {
    /// Messages due now (pending, of every type).
    pub due: u64,
    /// When the longest-waiting due message became due.
    pub oldest_due: SystemTime,
    /// The newest heartbeat of a registered worker; `None` when none is registered
    /// (never started, or stopped cleanly).
    pub last_worker_seen: Option<SystemTime>,
    /// The time of the read, by the database's clock.
    pub now: SystemTime,
}

impl Unattended {
    /// How long the longest-waiting due message has waited.
    pub fn waiting(&self) -> Duration {
        self.now.duration_since(self.oldest_due).unwrap_or_default()
    }

    /// How long ago the last worker was seen, if one is registered.
    pub fn unseen_for(&self) -> Option<Duration> {
        self.last_worker_seen
            .map(|t| self.now.duration_since(t).unwrap_or_default())
    }

    /// What the operator should do, in one sentence.
    pub fn advice(&self) -> &'static str {
        "start the workers: the application's `outbox work` (Outbox::run) as a service, \
         or `outbox drain` from cron"
    }
}

/// The warning the CLI's `status` and the web overview show: how many messages are due,
/// for how long, since when no worker was seen, and [`Unattended::advice`].
impl std::fmt::Display for Unattended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} message(s) due, the oldest for {}, and ",
            self.due,
            short(self.waiting())
        )?;
        match self.unseen_for() {
            Some(d) => write!(
                f,
                "no worker seen for {} (no heartbeat in outbox_workers)",
                short(d)
            )?,
            None => write!(f, "no worker running (none in outbox_workers)")?,
        }
        write!(f, ": {}", self.advice())
    }
}

/// A wait cut to the second ([`crate::units::duration`]): `45s`, `12m 5s`, `2d 4h 10m 3s`.
fn short(d: Duration) -> String {
    crate::units::duration(Duration::from_secs(d.as_secs()))
}

/// The admin surface over one backend.
#[derive(Clone)]
pub struct Admin<B> {
    backend: B,
    clock: Arc<dyn Clock>,
}

impl<B: Backend> Admin<B> {
    /// Admin operations on `backend`.
    pub fn new(backend: B) -> Self {
        Self::with_clock(backend, Arc::new(SystemClock))
    }

    pub(crate) fn with_clock(backend: B, clock: Arc<dyn Clock>) -> Self {
        Self { backend, clock }
    }

    /// The dead letters: list, count, requeue, purge.
    pub fn dead_letters(&self) -> DeadLetters<B> {
        DeadLetters::new(self.backend.clone(), Arc::clone(&self.clock))
    }

    /// The live messages (queued, scheduled, running, retrying): list, count, show,
    /// retry now, cancel.
    pub fn messages(&self) -> LiveMessages<B> {
        LiveMessages::new(self.backend.clone(), Arc::clone(&self.clock))
    }

    /// The groups (campaigns): progress, pause, resume, cancel, completion hook.
    pub fn groups(&self) -> Groups<B> {
        Groups::new(self.backend.clone(), Arc::clone(&self.clock))
    }

    /// Traffic shaping: the sites and the reply rules.
    pub fn shaping(&self) -> ShapingAdmin<B> {
        ShapingAdmin::new(self.backend.clone(), Arc::clone(&self.clock))
    }

    /// The endpoints of message kind `kind` (e.g. `webhook`): store, list, disable,
    /// enable, and their failure clock.
    pub fn endpoints(&self, kind: &str) -> Endpoints<B> {
        Endpoints::new(self.backend.clone(), Arc::clone(&self.clock), kind)
    }

    /// The consumers' inbox ([`crate::inbox`]): what it holds, and pruning it.
    pub fn inbox(&self) -> ProcessedIds<B> {
        ProcessedIds::new(self.backend.clone(), Arc::clone(&self.clock))
    }

    /// The suppression list: list, add, remove, and the messages it stopped.
    pub fn suppressions(&self) -> Suppressions<B> {
        Suppressions::new(self.backend.clone(), Arc::clone(&self.clock))
    }

    /// Stops starting messages of `type_tag` in every process within about 0.2 s;
    /// they stay queued and go out after [`Admin::resume`].
    pub async fn pause(&self, type_tag: &str, reason: &str) -> Result<(), Error> {
        self.backend
            .pause(type_tag, reason, self.clock.database_now())
            .await
    }

    /// Lets messages of `type_tag` start again; false if it was not paused.
    pub async fn resume(&self, type_tag: &str) -> Result<bool, Error> {
        self.backend.resume(type_tag).await
    }

    /// Every paused type.
    pub async fn paused(&self) -> Result<Vec<PausedType>, Error> {
        self.backend.paused().await
    }

    /// Creates the rate bucket `name`, or changes its rate at runtime (workers see the
    /// new rate at their next token; tokens already saved are kept, capped at the burst).
    pub async fn set_rate_limit(&self, name: &str, limit: RateLimit) -> Result<(), Error> {
        limit
            .check()
            .map_err(|e| Error::Config(format!("rate bucket `{name}`: {e}")))?;
        self.backend
            .set_bucket(name, limit, self.clock.database_now())
            .await
    }

    /// A rate bucket's settings and tokens.
    pub async fn rate_limit(&self, name: &str) -> Result<Option<BucketState>, Error> {
        self.backend.bucket(name, self.clock.database_now()).await
    }

    /// Every rate bucket on the database with its settings and tokens, by name.
    pub async fn rate_limits(&self) -> Result<Vec<(String, BucketState)>, Error> {
        self.backend.buckets(self.clock.database_now()).await
    }

    /// What the workers of every process did per minute and type (delivered, failed
    /// attempts, moved to the dead letters) over the last `window`, oldest first. Each
    /// running outbox adds its figures every 10 s and when it stops; two days are kept.
    pub async fn history(&self, window: Duration) -> Result<Vec<MinuteOutcomes>, Error> {
        let since = self.clock.now().checked_sub(window).unwrap_or(UNIX_EPOCH);
        self.backend.history(since).await
    }

    /// Every circuit breaker that ever opened, by name: open or closed, since when, why,
    /// its failed probes and when the next may start.
    pub async fn breakers(&self) -> Result<Vec<BreakerState>, Error> {
        self.backend.breakers(self.clock.database_now()).await
    }

    /// Makes the next probe of open breaker `name` due now (the downstream is known to be
    /// back): a running outbox sends it within 0.2 s. False if it is not open.
    pub async fn probe_breaker_now(&self, name: &str) -> Result<bool, Error> {
        self.backend
            .probe_breaker_now(name, self.clock.database_now())
            .await
    }

    /// Message counts per type and status, in one query; cheap enough to poll every second.
    pub async fn status_counts(&self) -> Result<Vec<TypeCounts>, Error> {
        self.backend.status_counts(self.clock.database_now()).await
    }

    /// The newest worker heartbeat of any process, and the database's time.
    pub async fn workers_seen(&self) -> Result<WorkersSeen, Error> {
        self.backend.workers_seen(self.clock.database_now()).await
    }

    /// Whether messages wait for workers that are not there: `Some` when a message has
    /// been due for at least [`UNATTENDED_AFTER`] and no worker was seen (a heartbeat in
    /// the registry) for as long. `counts` are the status counts just read
    /// ([`Admin::status_counts`]); this adds one read of the worker registry. Messages of
    /// paused types are not due. A worker of any type counts: a process that runs other
    /// types than the waiting ones is not detected.
    pub async fn unattended(&self, counts: &[TypeCounts]) -> Result<Option<Unattended>, Error> {
        let Some(oldest_due) = counts.iter().filter_map(|c| c.oldest_due).min() else {
            return Ok(None);
        };
        let seen = self.workers_seen().await?;
        let found = Unattended {
            due: counts.iter().map(|c| c.pending).sum(),
            oldest_due,
            last_worker_seen: seen.last_seen,
            now: seen.now,
        };
        let quiet = found.unseen_for().is_none_or(|d| d >= UNATTENDED_AFTER);
        Ok((found.waiting() >= UNATTENDED_AFTER && quiet).then_some(found))
    }
}
