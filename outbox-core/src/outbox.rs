//! The outbox: its configuration (this file and `register`, `settings`), handlers
//! registered per message type, and the two ways to run them (`run`, `drain`).

mod breakers;
mod drain;
mod gauges;
mod groups;
mod history;
mod pauses;
mod receipts;
mod register;
mod retention;
mod run;
mod services;
mod settings;
mod stack;
mod summary;

use std::{sync::Arc, time::Duration};

pub use drain::{DrainOptions, DrainReport};
pub use run::{shutdown_signal, START_CHECK_MESSAGES};
pub use settings::QueueOptions;
pub use summary::DEFAULT_SUMMARY_EVERY;

use crate::{
    admin::Admin,
    clock::{Clock, SystemClock},
    counters::DeliveryCounts,
    error::Error,
    layers::orphan::OrphanCheck,
    layers::rate_limit::RateLimit,
    store::{Backend, Retention},
    worker::{Counters, ErasedHandler},
};

/// What the workers are started for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// The daemon.
    Run,
    /// A drain until nothing is due.
    Drain,
    /// A drain while tokens last: a message whose bucket has no token goes back in line at
    /// once instead of waiting for one.
    DrainWhileTokens,
}

/// One registered message type.
struct Registration {
    queue: &'static str,
    options: QueueOptions,
    handler: Arc<dyn ErasedHandler>,
    orphan_check: Option<Arc<dyn OrphanCheck>>,
    /// What this type's attempts ended as in this process (reported to the history).
    counters: Arc<Counters>,
    /// Decodes and validates a payload (run before a rate-limit token).
    precheck: crate::layers::precheck::Precheck,
    /// Reads the recipient of a payload, for types that may name one (checked against the
    /// suppression list after each claim).
    recipient_of: Option<crate::worker::RecipientOf>,
    /// Reads the destination of a payload, for types that name one (traffic shaping).
    destination_of: Option<crate::message::DestinationOf>,
    /// The type's messages may carry ordering keys (`OutboxMessage::ORDERED`): claimed
    /// with the ordered statement.
    ordered: bool,
}

/// Handlers per message type over one backend, run as a daemon ([`Outbox::run`]) or
/// until the queue is empty ([`Outbox::drain`]).
///
/// ```no_run
/// # #[cfg(feature = "sqlite")]
/// # async fn demo(pool: sqlx::SqlitePool) -> Result<(), Box<dyn std::error::Error>> {
/// # use outbox_core::{HandlerError, MessageContext, Outbox, QueueOptions, RateLimit, SqliteBackend};
/// # #[derive(serde::Serialize, serde::Deserialize)] struct WelcomeMail { user_id: i64 }
/// # impl outbox_core::OutboxMessage for WelcomeMail { const TYPE: &'static str = "welcome_mail"; }
/// # #[derive(Clone)] struct App;
/// # impl App { async fn user_exists(&self, _: i64) -> Result<bool, outbox_core::BoxError> { Ok(true) } }
/// # async fn send_welcome(_: WelcomeMail, _: MessageContext<App>) -> Result<(), HandlerError> { Ok(()) }
/// # let app_state = App;
/// let outbox = Outbox::with_state(SqliteBackend::new(pool), app_state)
///     .rate_limit("smtp", RateLimit::per_hour(60.0).burst(5))
///     .register_with::<WelcomeMail, _>(send_welcome, QueueOptions::new().rate_limit("smtp"))
///     .orphan_check(|mail: WelcomeMail, state| async move { state.user_exists(mail.user_id).await });
/// outbox.migrate().await?;
/// outbox.run().await?; // until SIGINT/SIGTERM
/// # Ok(()) }
/// ```
pub struct Outbox<B, S = ()> {
    backend: B,
    state: Arc<S>,
    registrations: Vec<Registration>,
    buckets: Vec<(String, RateLimit)>,
    shaping: Option<crate::shaping::Shaping>,
    problems: Vec<String>,
    defaults: QueueOptions,
    shutdown_timeout: Duration,
    gauge_interval: Option<Duration>,
    summary_every: Option<Duration>,
    fail_unregistered: bool,
    retention: Retention,
    inbox_keep: Duration,
    /// The due probe's pause after work, and its longest pause when idle.
    idle_poll: (Duration, Duration),
    clock: Arc<dyn Clock>,
    counters: Arc<Counters>,
}

impl<B: Backend> Outbox<B, ()> {
    /// An outbox whose handlers need no application state.
    pub fn new(backend: B) -> Self {
        Self::with_state(backend, ())
    }
}

impl<B: Backend, S: Send + Sync + 'static> Outbox<B, S> {
    /// An outbox whose handlers receive `state` through [`MessageContext::state`](crate::MessageContext::state).
    pub fn with_state(backend: B, state: S) -> Self {
        Self {
            backend,
            state: Arc::new(state),
            registrations: Vec::new(),
            buckets: Vec::new(),
            shaping: None,
            problems: Vec::new(),
            defaults: QueueOptions::new(),
            shutdown_timeout: Duration::from_secs(15),
            gauge_interval: Some(Duration::from_secs(10)),
            summary_every: Some(DEFAULT_SUMMARY_EVERY),
            fail_unregistered: false,
            retention: Retention::default(),
            inbox_keep: crate::inbox::DEFAULT_KEEP,
            idle_poll: (Duration::from_millis(50), Duration::from_secs(1)),
            clock: Arc::new(SystemClock),
            counters: Arc::new(Counters::default()),
        }
    }

    /// Options for types registered after this call with [`Outbox::register`].
    pub fn default_options(mut self, options: QueueOptions) -> Self {
        self.defaults = options;
        self
    }

    /// How long [`Outbox::run`] waits for in-flight handlers after a shutdown signal
    /// (default 15 s). Messages still running then are left to the lease: another worker
    /// delivers them once this process's heartbeat is stale. It must be shorter than
    /// `heartbeat_interval × (missed_heartbeats − 1)` of every type (20 s by default):
    /// a stopping worker sends no heartbeats, and others would take its messages over while
    /// they still run.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// How often running workers read the status counts into the queue depth and oldest
    /// due age gauges (`outbox_queue_depth`, `outbox_oldest_due_age_seconds`; default every
    /// 10 s, the first one interval after the start, and once when the workers stop: each
    /// sample counts the whole queue). `None` turns the sampling off; the counters and
    /// histograms are recorded either way.
    pub fn gauge_interval(mut self, every: Option<Duration>) -> Self {
        self.gauge_interval = every;
        self
    }

    /// How often running workers log one INFO line per type that did something since
    /// the last one — delivered, retried, dead and deliveries per second — (default every
    /// 60 s, [`DEFAULT_SUMMARY_EVERY`], and once when the workers stop). Each message's own
    /// lines are DEBUG (a dead letter is also a WARN), so a large campaign's INFO log
    /// stays a few lines a minute. `None` turns the summary off; the counters behind it
    /// are kept either way (one atomic add per outcome).
    pub fn log_summary_every(mut self, every: Option<Duration>) -> Self {
        self.summary_every = every;
        self
    }

    /// Gives up (dead-letters) pending messages whose type no handler here is registered
    /// for (default off: in a deployment where processes handle different types, leave it
    /// off; unregistered types are then only reported).
    pub fn fail_unregistered_types(mut self, yes: bool) -> Self {
        self.fail_unregistered = yes;
        self
    }

    /// Whether delivered messages are deleted (the default) or kept as done rows for a
    /// window and then pruned. An idempotency key stays taken while its message's row
    /// exists: until delivery by default, until the end of the window with
    /// [`Retention::keep_for`].
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// How long consumers' processed ids ([`crate::inbox`]) are kept before this outbox's
    /// pruner deletes them (default 7 days, [`crate::inbox::DEFAULT_KEEP`]). A message a
    /// broker redelivers after its id is gone runs again: keep them longer than the longest
    /// redelivery.
    pub fn inbox_keep_for(mut self, window: Duration) -> Self {
        self.inbox_keep = window;
        self
    }

    /// How often an idle process asks the database whether any of its idle types has due
    /// messages (default: every 50 ms for ten probes after work, then doubling to every
    /// 1 s while nothing is due). It is one small statement for all types, however many are registered; a type
    /// with nothing due costs nothing else.
    ///
    /// This is the pick-up latency wherever no commit signal reaches the workers: messages
    /// enqueued on MariaDB, or by another process on SQLite, and delayed or retried
    /// messages coming due on every database. New messages on PostgreSQL (NOTIFY) and
    /// those committed by this process on SQLite wake their workers at once. `min` must be
    /// above zero and at most `max`.
    pub fn idle_poll(mut self, min: Duration, max: Duration) -> Self {
        self.idle_poll = (min, max);
        self
    }

    /// The clock the outbox reads (tests substitute a [`ManualClock`](crate::clock::ManualClock)).
    /// With the default [`SystemClock`], database work (claims, leases, rescue, due times,
    /// rate buckets, retention) runs on the database's own clock (on SQLite, the process
    /// clock); a clock that pins the time ([`Clock::database_now`]) makes every database use
    /// its time instead, so a test can expire a lease or make a retry due without sleeping.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The backend this outbox runs on.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Dead letters, pause/resume, rate buckets and status counts.
    pub fn admin(&self) -> Admin<B> {
        Admin::with_clock(self.backend.clone(), Arc::clone(&self.clock))
    }

    /// What the handlers of this outbox have done since it was built.
    pub fn delivery_counts(&self) -> DeliveryCounts {
        self.counters.snapshot()
    }

    /// Creates or upgrades the tables; safe at every start.
    pub async fn migrate(&self) -> Result<(), Error> {
        self.backend.migrate().await
    }
}
