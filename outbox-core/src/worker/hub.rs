//! What the workers of one process share, so that its cost does not grow with the number
//! of message types: one loop asks the database which idle types have due messages (one
//! statement for all of them, under the [`IdlePoll`] backoff) and wakes only those, and
//! one heartbeat extends every held lease and rescues expired ones for every type (a
//! fixed number of statements per interval). A type with nothing due costs nothing: its
//! worker waits on its wake-up without polling.

use std::{
    collections::HashSet,
    sync::{atomic::Ordering, Arc, Mutex, Weak},
    time::{Duration, Instant},
};

use futures::FutureExt;
use tokio::{
    sync::{watch, Notify},
    task::JoinHandle,
};

use super::{
    idle_poll::IdlePoll,
    reach::{unreachable, Reach},
    shared::Shared,
    signals::Signals,
};
use crate::{
    clock::Clock,
    layers::pause::PausedGroups,
    store::{Backend, Claimed, Held, WorkerBeat},
};

/// What every worker of one process is started with: the store, the clock its claims,
/// settlements and leases run at, and the hub they share.
pub(crate) struct Process<B> {
    pub(crate) store: B,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) hub: Arc<Hub<B>>,
}

impl<B: Clone> Clone for Process<B> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            clock: Arc::clone(&self.clock),
            hub: Arc::clone(&self.hub),
        }
    }
}

/// The live workers of one process, and the signals between them and the process loops.
pub(crate) struct Hub<B> {
    workers: Mutex<Vec<Weak<Shared<B>>>>,
    /// A worker claimed messages: probe soon.
    activity: Notify,
    /// A worker started: send a heartbeat now, so the registry shows it at once.
    joined: Notify,
    /// The paused groups, as the process last read them.
    pub(crate) paused_groups: Arc<PausedGroups>,
    /// Whether the process reaches its database.
    pub(crate) reach: Arc<Reach>,
    /// The workers' first claim and their quiet moments, for the process's loops.
    pub(crate) signals: Arc<Signals>,
}

impl<B: Backend> Hub<B> {
    /// A hub without workers.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            workers: Mutex::new(Vec::new()),
            activity: Notify::new(),
            joined: Notify::new(),
            paused_groups: Arc::new(PausedGroups::default()),
            reach: Arc::default(),
            signals: Arc::default(),
        })
    }

    /// Adds a starting worker.
    pub(super) fn join(&self, shared: &Arc<Shared<B>>) {
        let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        workers.retain(|w| w.strong_count() > 0);
        workers.push(Arc::downgrade(shared));
        self.joined.notify_one();
    }

    /// A worker claimed messages.
    pub(super) fn worked(&self) {
        self.activity.notify_one();
    }

    /// Gives back every buffered (claimed, not started) message of a paused group, or of
    /// a group cancelled after it was enqueued, in every worker; returns how many.
    pub(crate) fn release_paused_groups(&self) -> usize {
        let paused = &self.paused_groups;
        let held = |c: &Claimed| {
            let group = c.group.as_deref();
            group.is_some_and(|g| paused.holds_back(g, c.enqueued_at).is_some())
        };
        self.live()
            .iter()
            .map(|s| s.release_buffered_where(held))
            .sum()
    }

    /// Wakes every worker (something it may claim became claimable).
    pub(crate) fn wake_all(&self) {
        self.live().iter().for_each(|s| s.wake.notify_one());
    }

    /// Gives back every buffered (claimed, not started) message of `types`, in every
    /// worker; returns how many.
    pub(crate) fn release_types(&self, types: &[&str]) -> usize {
        self.live()
            .iter()
            .filter(|s| types.contains(&s.settings.type_tag))
            .map(|s| s.release_buffered(None))
            .sum()
    }

    /// Wakes the workers of `types` (their messages may start again).
    pub(crate) fn wake_types(&self, types: &[&str]) {
        self.live()
            .iter()
            .filter(|s| types.contains(&s.settings.type_tag))
            .for_each(|s| s.wake.notify_one());
    }

    /// The workers still running (not closed).
    fn live(&self) -> Vec<Arc<Shared<B>>> {
        let workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        workers
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|s| !s.closed.load(Ordering::SeqCst))
            .collect()
    }
}

/// Starts the loop that wakes idle workers whose type has due messages; it ends when
/// `stopped` turns true.
pub(crate) fn watch_due<B: Backend>(
    hub: Arc<Hub<B>>,
    store: B,
    clock: Arc<dyn Clock>,
    mut poll: IdlePoll,
    mut stopped: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut last = tokio::time::Instant::now();
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(last + poll.wait()) => {}
                _ = hub.activity.notified() => {
                    poll.worked();
                    continue;
                }
                _ = stopped.wait_for(|s| *s) => return,
            }
            last = tokio::time::Instant::now();
            let idle: Vec<_> = hub
                .live()
                .into_iter()
                .filter(|s| s.idle.load(Ordering::SeqCst))
                .collect();
            if idle.is_empty() {
                continue;
            }
            let tags: Vec<&str> = idle.iter().map(|s| s.settings.type_tag).collect();
            match hub
                .reach
                .watch(store.due_types(&tags, clock.database_now()))
                .await
            {
                Ok(due) => {
                    poll.probed(!due.is_empty());
                    for s in idle
                        .iter()
                        .filter(|s| due.iter().any(|t| t == s.settings.type_tag))
                    {
                        s.idle.store(false, Ordering::SeqCst);
                        s.wake.notify_one();
                    }
                }
                Err(e) => {
                    poll.probed(false);
                    if unreachable(&e) {
                        tracing::debug!(error = %e, retry_in = ?poll.wait(), "cannot ask which message types have due messages");
                    } else {
                        tracing::warn!(error = %e, retry_in = ?poll.wait(), "cannot ask which message types have due messages");
                    }
                }
            }
        }
    })
}

/// Starts the process's heartbeat: every `every` (and when a worker starts) it extends the
/// leases of everything the workers hold in one heartbeat, rescues the expired leases of
/// every type they run in one statement, and gives back buffered messages that waited half
/// their lease without starting. It runs until aborted, after the workers stopped. Its
/// first beat waits for the workers' first claim (the rescue scans the queue; see
/// [`Signals`]), and rescues only with `first_rescue` (a drain rescues at its start itself:
/// one scan, not two).
pub(crate) fn heartbeat<B: Backend>(
    hub: Arc<Hub<B>>,
    store: B,
    clock: Arc<dyn Clock>,
    every: Duration,
    first_rescue: bool,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        hub.signals.after_first_claim().await;
        // The first beat registers every worker that joined so far.
        let _ = hub.joined.notified().now_or_never();
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut rescue = first_rescue;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = hub.joined.notified() => {}
            }
            let workers = hub.live();
            if workers.is_empty() {
                continue;
            }
            beat(&workers, &store, clock.as_ref(), &hub.reach, rescue).await;
            rescue = true;
        }
    })
}

/// One heartbeat of `workers`.
async fn beat<B: Backend>(
    workers: &[Arc<Shared<B>>],
    store: &B,
    clock: &dyn Clock,
    reach: &Reach,
    rescue: bool,
) {
    let now = clock.database_now();
    let sent = Instant::now();
    let held: Vec<Vec<Held>> = workers.iter().map(|s| s.held_snapshot()).collect();
    let beats: Vec<WorkerBeat<'_>> = workers
        .iter()
        .zip(&held)
        .map(|(s, held)| WorkerBeat {
            owner: &s.settings.owner,
            type_tag: s.settings.type_tag,
            lease: s.settings.lease,
            held,
        })
        .collect();
    match reach.watch(store.heartbeat(&beats, now)).await {
        Ok(()) => {
            let answered = Instant::now();
            for (s, held) in workers.iter().zip(&held) {
                s.leases_renewed(held, sent, answered);
            }
        }
        // Out of reach: said once for the process (`Reach`); the workers meanwhile start
        // nothing whose lease may have run out.
        Err(e) if unreachable(&e) => tracing::debug!(error = %e, "cannot extend leases"),
        Err(e) => {
            tracing::warn!(error = %e, "cannot extend leases; held messages may be taken over")
        }
    }
    if rescue {
        let tags: Vec<&str> = workers
            .iter()
            .map(|s| s.settings.type_tag)
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        match reach.watch(store.rescue_expired(&tags, now)).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::warn!(
                    rescued = n,
                    "re-queued messages whose worker's lease expired"
                );
                workers.iter().for_each(|s| s.wake.notify_one());
            }
            Err(e) if unreachable(&e) => {
                tracing::debug!(error = %e, "cannot rescue expired leases")
            }
            Err(e) => tracing::warn!(error = %e, "cannot rescue expired leases"),
        }
    }
    for s in workers {
        // (Right after the host booted there is no instant half a lease ago: nothing is stale.)
        let released = match Instant::now().checked_sub(s.settings.lease / 2) {
            Some(limit) => s.release_buffered(Some(limit)),
            None => 0,
        };
        if released > 0 {
            tracing::info!(
                message.type = s.settings.type_tag, released,
                "gave back claimed messages that waited half their lease without starting"
            );
        }
    }
}
