//! The outbox: handlers registered per message type, and the two ways to run them.

mod drain;
mod settings;

use std::{collections::HashSet, future::Future, sync::Arc, time::Duration};

use tokio::sync::watch;

pub use drain::DrainReport;
pub use settings::QueueOptions;

use crate::{
    backend::{Backend, QueueSettings, UnregisteredType},
    handler::Handler,
    worker::{supervise, Counters, DeliveryCounts, Dispatch, TypedHandler, WorkerNames},
    Error, OutboxMessage,
};

/// One registered message type.
struct Registration {
    settings: QueueSettings,
    dispatch: Dispatch,
}

/// Handlers per message type over one backend, run as a daemon ([`Outbox::run`]) or
/// until the queue is empty ([`Outbox::drain`]).
///
/// ```ignore
/// let outbox = Outbox::with_state(SqliteBackend::new(pool), app_state)
///     .register::<WelcomeMail, _>(send_welcome)
///     .register_with::<Invoice, _>(send_invoice, QueueOptions::new().concurrency(2));
/// outbox.migrate().await?;
/// outbox.run().await?; // until SIGINT/SIGTERM
/// ```
pub struct Outbox<B, S = ()> {
    backend: B,
    state: Arc<S>,
    registrations: Vec<Registration>,
    problems: Vec<String>,
    defaults: QueueOptions,
    shutdown_timeout: Duration,
    fail_unregistered: bool,
    names: WorkerNames,
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
            problems: Vec::new(),
            defaults: QueueOptions::new(),
            shutdown_timeout: Duration::from_secs(30),
            fail_unregistered: false,
            names: WorkerNames::new(),
            counters: Arc::new(Counters::default()),
        }
    }

    /// Delivers messages of type `M` with `handler`, with the outbox's default options.
    pub fn register<M, H>(self, handler: H) -> Self
    where
        M: OutboxMessage,
        H: Handler<M, S>,
    {
        let options = self.defaults.clone();
        self.register_with::<M, H>(handler, options)
    }

    /// Delivers messages of type `M` with `handler` and per-type options.
    pub fn register_with<M, H>(mut self, handler: H, options: QueueOptions) -> Self
    where
        M: OutboxMessage,
        H: Handler<M, S>,
    {
        if let Err(reason) = crate::message::validate_type_tag(M::TYPE) {
            self.problems
                .push(format!("`{}`: {reason}", std::any::type_name::<M>()));
        }
        if self
            .registrations
            .iter()
            .any(|r| r.settings.queue == M::TYPE)
        {
            self.problems.push(format!(
                "type tag `{}` is registered twice (last by `{}`); each type gets one handler",
                M::TYPE,
                std::any::type_name::<M>()
            ));
        }
        if let Err(reason) = options.check() {
            self.problems
                .push(format!("options of `{}`: {reason}", M::TYPE));
        }
        let typed =
            TypedHandler::<M, S, H>::new(handler, Arc::clone(&self.state), M::DEFAULTS.timeout);
        self.registrations.push(Registration {
            settings: options.settings_for(M::TYPE),
            dispatch: Dispatch::new(M::TYPE, Arc::new(typed), Arc::clone(&self.counters)),
        });
        self
    }

    /// Options for types registered after this call with [`Outbox::register`].
    pub fn default_options(mut self, options: QueueOptions) -> Self {
        self.defaults = options;
        self
    }

    /// How long [`Outbox::run`] waits for in-flight handlers after a shutdown signal
    /// (default 30 s). Messages still running then are left to the lease: another worker
    /// delivers them once this process's heartbeat is stale.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Gives up pending messages whose type no handler here is registered for, recording
    /// why (default off: in a deployment where processes handle different types, leave
    /// it off; unregistered types are then only reported).
    pub fn fail_unregistered_types(mut self, yes: bool) -> Self {
        self.fail_unregistered = yes;
        self
    }

    /// The backend this outbox runs on.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// What the handlers of this outbox have done since it was built.
    pub fn delivery_counts(&self) -> DeliveryCounts {
        self.counters.snapshot()
    }

    /// Creates or upgrades the tables; safe at every start.
    pub async fn migrate(&self) -> Result<(), Error> {
        self.backend.migrate().await
    }

    /// Runs the workers until SIGINT or SIGTERM, then shuts down gracefully.
    pub async fn run(&self) -> Result<(), Error> {
        self.run_until(shutdown_signal()).await
    }

    /// Runs the workers until `signal` completes, then stops fetching, lets in-flight
    /// handlers finish (up to the shutdown timeout) and returns.
    pub async fn run_until<F: Future<Output = ()>>(&self, signal: F) -> Result<(), Error> {
        let registered = self.check()?;
        self.handle_unregistered(&registered).await?;
        let (stop, workers) = self.start();
        let watch_unregistered = async {
            loop {
                tokio::time::sleep(Duration::from_secs(60)).await;
                if let Err(e) = self.handle_unregistered(&registered).await {
                    tracing::warn!(error = %e, "cannot check for unregistered message types");
                }
            }
        };
        tokio::select! {
            _ = signal => {}
            _ = watch_unregistered => {}
        }
        tracing::info!("shutdown requested: finishing in-flight messages");
        self.stop(stop, workers).await;
        Ok(())
    }

    /// Validates the registrations and returns the registered type tags.
    fn check(&self) -> Result<Vec<&'static str>, Error> {
        if !self.problems.is_empty() {
            return Err(Error::Config(self.problems.join("; ")));
        }
        if self.registrations.is_empty() {
            return Err(Error::Config(
                "no message type is registered; call Outbox::register for each type".into(),
            ));
        }
        let mut seen = HashSet::new();
        Ok(self
            .registrations
            .iter()
            .map(|r| r.settings.queue)
            .filter(|q| seen.insert(*q))
            .collect())
    }

    /// Starts one supervised worker per registered type.
    fn start(&self) -> (watch::Sender<bool>, Vec<tokio::task::JoinHandle<()>>) {
        let (stop, stopped) = watch::channel(false);
        let workers = self
            .registrations
            .iter()
            .map(|r| {
                tokio::spawn(supervise(
                    self.backend.clone(),
                    r.settings.clone(),
                    r.dispatch.clone(),
                    self.names.clone(),
                    stopped.clone(),
                ))
            })
            .collect();
        (stop, workers)
    }

    /// Signals every worker to stop and waits up to the shutdown timeout.
    async fn stop(&self, stop: watch::Sender<bool>, workers: Vec<tokio::task::JoinHandle<()>>) {
        let _ = stop.send(true);
        let aborts: Vec<_> = workers.iter().map(|w| w.abort_handle()).collect();
        let all = futures::future::join_all(workers);
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
    }

    /// Reports (or, if configured, gives up) pending messages of unregistered types.
    async fn handle_unregistered(
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
            let n = self.backend.fail_unregistered(registered, &reason).await?;
            tracing::warn!(count = n, "gave up messages of unregistered types");
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

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
async fn shutdown_signal() {
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
