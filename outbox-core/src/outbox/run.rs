//! The run lifecycle: validate and prepare, start one supervised worker per registered
//! type (its stack from [`Stacks`]) and the background services (`services.rs`), stop them
//! gracefully; [`Outbox::run`] and [`Outbox::run_until`] as a daemon, and the pieces
//! [`Outbox::drain`] reuses.

use std::{collections::HashMap, future::Future, sync::Arc, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

use super::{
    breakers, gauges, history, pauses, receipts::ReceiptWriter, stack::Stacks, summary::Summary,
    Outbox, Registration, Start,
};
use crate::{
    error::Error,
    layers::breaker::{check_name, BreakerSwitch},
    store::{Backend, Retention, Steering, UnregisteredType},
    worker::{supervise, Hub, Process, Signals, WorkerNames, WorkerSettings},
};

/// How many of the oldest waiting messages of a type the start check reads
/// ([`Handler::refuses`](crate::Handler::refuses)): enough to catch a campaign enqueued
/// for a handler that cannot send it, one page of one indexed read.
pub const START_CHECK_MESSAGES: u32 = 1_000;

/// What [`Outbox::prepare`] found: the registered types, and the steering they start from.
pub(super) struct Prepared {
    pub(super) tags: Vec<&'static str>,
    pub(super) steering: Steering,
}

/// Workers started by [`Outbox::start`], and how to stop them.
pub(super) struct Running<B: Backend> {
    /// Names of this start's workers (fresh for every start, so they never collide).
    pub(super) names: WorkerNames,
    stop: watch::Sender<bool>,
    workers: Vec<JoinHandle<()>>,
    /// The due probe, the heartbeat, the pause watcher, the gauges and, with retention,
    /// the pruner.
    helpers: Vec<JoinHandle<()>>,
    /// Reports the workers' outcomes to the history.
    history: Arc<history::Reporter<B>>,
    /// Logs the workers' outcomes per type at INFO, unless turned off.
    summary: Option<Arc<Summary>>,
    /// Writes the receipts handlers recorded.
    receipts: Arc<ReceiptWriter<B>>,
    /// Each type's circuit breaker (types with the breaker off have none).
    pub(super) breakers: HashMap<&'static str, Arc<BreakerSwitch>>,
    /// The workers' first claim and quiet moments.
    pub(super) signals: Arc<Signals>,
}

impl<B: Backend, S: Send + Sync + 'static> Outbox<B, S> {
    /// Runs the workers until SIGINT or SIGTERM, then shuts down gracefully. Fails as
    /// [`Outbox::run_until`] does.
    pub async fn run(&self) -> Result<(), Error> {
        self.run_until(shutdown_signal()).await
    }

    /// Runs the workers until `signal` completes, then stops fetching, lets in-flight
    /// handlers finish (up to the shutdown timeout) and returns.
    ///
    /// Fails before any worker starts when the configuration cannot work
    /// ([`Error::Config`]: a problem found at registration, no registered type, a shutdown
    /// timeout too long for the leases, an empty retention window, a missing rate bucket,
    /// an [`idle_poll`](Outbox::idle_poll) whose minimum is zero or above its maximum)
    /// or the database cannot be reached while preparing. Once the workers run, database
    /// errors are logged and retried, not returned.
    pub async fn run_until<F: Future<Output = ()>>(&self, signal: F) -> Result<(), Error> {
        let Prepared {
            tags: registered,
            steering,
        } = self.prepare().await?;
        let running = self.start(Start::Run, steering).await;
        // Counting the messages no handler here takes scans the queue: it runs beside the
        // workers, never before the first claim (the workers claim registered types only).
        let signals = Arc::clone(&running.signals);
        let watch_unregistered = async {
            signals.after_first_claim().await;
            loop {
                match self.handle_unregistered(&registered).await {
                    // The process says an unreachable database once (`Reach`).
                    Err(e) if crate::worker::unreachable(&e) => {
                        tracing::debug!(error = %e, "cannot check for unregistered message types");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot check for unregistered message types");
                    }
                    Ok(_) => {}
                }
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
        };
        tokio::select! {
            _ = signal => {}
            _ = watch_unregistered => {}
        }
        tracing::info!("shutdown requested: finishing in-flight messages");
        self.stop(running).await;
        Ok(())
    }

    /// Validates the registrations, reads the steering, writes the rate buckets, and says
    /// what the workers start from.
    pub(super) async fn prepare(&self) -> Result<Prepared, Error> {
        if !self.problems.is_empty() {
            return Err(Error::Config(self.problems.join("; ")));
        }
        if self.registrations.is_empty() {
            return Err(Error::Config(
                "no message type is registered; call Outbox::register for each type".into(),
            ));
        }
        for r in &self.registrations {
            let safe = r.options.safe_shutdown();
            if self.shutdown_timeout >= safe {
                return Err(Error::Config(format!(
                    "shutdown_timeout ({:?}) must be shorter than heartbeat_interval × (missed_heartbeats − 1) \
                     = {safe:?} for `{}`: a stopping worker sends no heartbeats, and other workers would \
                     take over messages it is still running",
                    self.shutdown_timeout, r.queue
                )));
            }
        }
        if let Retention::KeepFor(window) = self.retention {
            if window.is_zero() {
                return Err(Error::Config(
                    "Retention::keep_for needs a window longer than zero; use \
                     Retention::delete_on_success to keep nothing"
                        .into(),
                ));
            }
        }
        for r in &self.registrations {
            if let Some(name) = self.breaker_of(r) {
                check_name(&name).map_err(|reason| {
                    Error::Config(format!("circuit breaker of `{}`: {reason}", r.queue))
                })?;
            }
        }
        // One cheap read (no scan of the queue) that also finds out whether the database
        // answers and holds the outbox's tables; the workers start from what it says.
        // Expired leases are rescued by the first heartbeat, beside the first claims.
        let steering = self.backend.steering(self.clock.database_now()).await?;
        if self.idle_poll.0.is_zero() || self.idle_poll.0 > self.idle_poll.1 {
            return Err(Error::Config(format!(
                "idle_poll needs 0 < min ≤ max (got min {:?}, max {:?})",
                self.idle_poll.0, self.idle_poll.1
            )));
        }
        if let Some(shaping) = &self.shaping {
            // A type that names a recipient but no destination is not shaped: say so once.
            for r in &self.registrations {
                if r.recipient_of.is_some() && r.destination_of.is_none() {
                    tracing::warn!(
                        message.type = r.queue,
                        "traffic shaping is configured, but this type names no destination \
                         (OutboxMessage::destination, derive `destination = \"fn\"`): its \
                         messages are not shaped"
                    );
                }
            }
            let now = self.clock.database_now();
            self.backend.configure_sites(shaping.sites(), now).await?;
            self.backend.put_rules(shaping.rules()).await?;
        }
        let now = self.clock.database_now();
        for (name, limit) in &self.buckets {
            self.backend.set_bucket(name, *limit, now).await?;
        }
        for r in &self.registrations {
            if let Some(bucket) = r.options.bucket() {
                if self.backend.bucket(bucket, now).await?.is_none() {
                    return Err(Error::Config(format!(
                        "`{}` uses rate bucket `{bucket}`, which does not exist; define it with \
                         Outbox::rate_limit or Admin::set_rate_limit",
                        r.queue
                    )));
                }
            }
        }
        self.check_waiting(now).await?;
        let tags = self.registrations.iter().map(|r| r.queue).collect();
        Ok(Prepared { tags, steering })
    }

    /// Refuses to start when a handler says it can never deliver one of the oldest
    /// waiting messages of its type ([`Handler::refuses`](crate::Handler::refuses)):
    /// a configuration mistake shows now, with its reason, not as a campaign of failures.
    async fn check_waiting(&self, now: crate::clock::Now) -> Result<(), Error> {
        for r in self
            .registrations
            .iter()
            .filter(|r| r.handler.refuses_some())
        {
            let waiting = self
                .backend
                .oldest_queued_payloads(r.queue, START_CHECK_MESSAGES, now)
                .await?;
            let mut refused = waiting
                .iter()
                .filter_map(|(id, payload)| Some((id, r.handler.refuses(payload)?)));
            if let Some((id, reason)) = refused.next() {
                let more = refused.count();
                let others = match more {
                    0 => String::new(),
                    n => format!(" (and {n} more of the oldest {} waiting)", waiting.len()),
                };
                return Err(Error::Config(format!(
                    "not starting: the `{}` handler can never deliver waiting message {id}{others}: \
                     {reason}",
                    r.queue
                )));
            }
        }
        Ok(())
    }

    /// Starts one supervised worker per registered type, the process's due probe and
    /// heartbeat, and the pause watcher.
    pub(super) async fn start(&self, how: Start, steering: Steering) -> Running<B> {
        let names = WorkerNames::new();
        let hub = Hub::new();
        let signals = Arc::clone(&hub.signals);
        let (stop, stopped) = watch::channel(false);
        let receipts = ReceiptWriter::new(self.backend.clone(), Arc::clone(&self.clock));
        let stacks = Stacks::new(self, how, &hub, Arc::from(names.prefix()), receipts.log());
        let steer = pauses::Steer::new(&stacks.pauses, &stacks.breakers, &hub, &names);
        // Start paused types and groups paused, and behind the open breakers, as read
        // before any worker runs (no breaker moved since the read: no worker ran).
        let versions = breakers::versions(&steer.breakers);
        steer
            .apply(steering, versions, &self.backend, self.clock.as_ref())
            .await;
        let workers = self
            .registrations
            .iter()
            .map(|r| {
                let process = Process {
                    store: self.backend.clone(),
                    clock: Arc::clone(&self.clock),
                    hub: Arc::clone(&hub),
                };
                let (layers, dispatch) = (stacks.layers(self, r), stacks.dispatch(r));
                let settings = self.settings_of(r);
                let worker = supervise(
                    process,
                    settings,
                    layers,
                    dispatch,
                    names.clone(),
                    stopped.clone(),
                );
                tokio::spawn(worker)
            })
            .collect();
        let mut services = self.services(how, steer, hub, &signals, stopped.clone());
        services.tasks.push(receipts.start(stopped));
        Running {
            names,
            stop,
            workers,
            helpers: services.tasks,
            history: services.history,
            summary: services.summary,
            receipts,
            breakers: stacks.breakers,
            signals,
        }
    }

    /// Signals every worker to stop and waits up to the shutdown timeout.
    pub(super) async fn stop(&self, running: Running<B>) {
        let _ = running.stop.send(true);
        let aborts: Vec<_> = running.workers.iter().map(|w| w.abort_handle()).collect();
        let all = futures::future::join_all(running.workers);
        if tokio::time::timeout(self.shutdown_timeout, all)
            .await
            .is_err()
        {
            tracing::warn!(
                timeout = ?self.shutdown_timeout,
                "handlers still running at the shutdown timeout were abandoned; \
                 their messages are delivered again after the lease expires"
            );
            aborts.iter().for_each(|a| a.abort());
        }
        running.helpers.iter().for_each(|h| h.abort());
        // What the workers did since the last report, now that they stopped.
        running.history.report().await;
        running.receipts.flush().await;
        if let Some(summary) = &running.summary {
            summary.log();
        }
        if self.gauge_interval.is_some() {
            gauges::sample_once(&self.backend, self.clock.as_ref()).await;
        }
    }

    /// The name of the circuit breaker of a registration: the one its options name, else
    /// the handler's downstream, else its type; `None` when its breaker is off.
    pub(super) fn breaker_of(&self, r: &Registration) -> Option<String> {
        let config = r.options.breaker_config();
        if !config.is_on() {
            return None;
        }
        Some(match config.name() {
            Some(name) => name.to_owned(),
            None => r.handler.downstream().unwrap_or_else(|| r.queue.to_owned()),
        })
    }

    /// The worker settings of one registration.
    pub(super) fn settings_of(&self, r: &Registration) -> WorkerSettings {
        let mut settings = r.options.settings_for(
            r.queue,
            matches!(self.retention, Retention::KeepFor(_)),
            self.backend.max_default_batch(),
            &self.counters,
            &r.counters,
        );
        settings.recipient_of = r.recipient_of;
        settings.ordered = r.ordered;
        settings
    }

    /// Reports (or, if configured, gives up) pending messages of unregistered types.
    pub(super) async fn handle_unregistered(
        &self,
        registered: &[&'static str],
    ) -> Result<Vec<UnregisteredType>, Error> {
        let found = self.backend.unregistered_pending(registered).await?;
        if found.is_empty() {
            return Ok(found);
        }
        if self.fail_unregistered {
            let reason = format!(
                "no handler is registered for this message type (registered: {})",
                registered.join(", ")
            );
            let n = self
                .backend
                .bury_unregistered(registered, &reason, self.clock.database_now())
                .await?;
            tracing::warn!(
                count = n,
                "moved messages of unregistered types to the dead letters"
            );
        } else {
            for t in &found {
                tracing::warn!(
                    message.type = %t.type_tag, pending = t.pending,
                    "messages of a type no handler here is registered for are waiting"
                );
            }
        }
        Ok(found)
    }
}

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM: the signals [`Outbox::run`] stops
/// on. Give it to the rest of the application's graceful shutdown (an axum server's
/// `with_graceful_shutdown`, say) so that a service manager's SIGTERM stops the workers and
/// everything else together.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
