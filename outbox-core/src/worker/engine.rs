//! The engine of one worker: the apalis-core `Backend` every database shares, built only
//! on the storage port.
//!
//! * **Claims** move a batch of due messages straight to `running` with a lease (one
//!   statement per batch). The next whole batch is claimed once half a batch is left in
//!   the buffer, so the buffer of claimed, unstarted messages never exceeds a batch and a
//!   half, and a message that waits in it for half its lease (its type was paused, its
//!   rate bucket is empty) is released unchanged, so nothing sits claimed and idle past
//!   its lease. The batch doubles, up to the type's maximum, while the handlers run dry
//!   before a prefetch returns ([`ClaimSize`]).
//! * **Settlements** (done, retry, release, bury) are sent to a flusher task that writes
//!   whatever has accumulated in one transaction while the claims go on; a settlement
//!   applies only while the message is still leased to this worker under its claim (the
//!   claim count, which a snooze or release never gives back, unlike the attempt). The
//!   flusher counts each attempt's outcome (and logs a move to the dead letters) only once
//!   its settlement applied; the refused ones are named in one WARN and count nothing.
//! * **Heartbeats** are the process's ([`super::hub`]): one for all its workers.
//! * **Wake-ups**: a claim that finds nothing leaves the worker idle, without polling,
//!   until its backend signals a commit of its type (PostgreSQL NOTIFY, a SQLite commit in
//!   this process) or the process's due probe finds its type due. A claim that finds some
//!   but fewer than it asked for claims again after 20 ms or a wake-up, whichever is first.
//!
//! Failure modes: a claim that fails is logged and tried again after a growing pause (the
//! worker does not die); settlements that cannot be written are kept and retried, and if
//! the process dies first the messages come back when their lease expires (at-least-once).
//! A settlement whose try failed with its outcome unknown (the connection broke around its
//! `COMMIT`) and that the next try finds fenced is read back before it is called fenced.
//! A message whose lease may have run out by this process's clock (the heartbeat could not
//! extend it) is given back instead of started (the settle layer checks as it starts).

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

use apalis_core::{
    backend::{finalize::Ephemeral, Backend as ApalisBackend, BackendConfig},
    task::{builder::TaskBuilder, task_id::TaskId, Task},
    worker::context::WorkerContext,
};
use futures::future::BoxFuture;
use tokio::{
    sync::{mpsc, Notify},
    task::JoinHandle,
};

use super::{
    claim_size::ClaimSize,
    hub::{Hub, Process},
    settle::SettleLayer,
    shared::{Lease, Shared},
    unreachable, WorkerSettings,
};
use crate::{
    counters::Outcome,
    error::Error,
    store::{Backend, ClaimRequest, Claimed, Settle, Settled, Settlement},
};

/// The pause after a claim that found fewer messages than it asked for.
const PARTIAL_CLAIM_PAUSE: Duration = Duration::from_millis(20);
/// First pause before claiming again after a database error.
const MIN_CLAIM_BACKOFF: Duration = Duration::from_millis(50);
/// Longest pause between claims after database errors.
const MAX_CLAIM_BACKOFF: Duration = Duration::from_secs(5);
/// Most settlements written in one transaction.
const MAX_SETTLE_BATCH: usize = 1_000;
/// Refusals by the database (not connection failures) of one settlement write, about
/// 10 s with the growing pause, before a batch is split or a single settlement given up.
const SETTLE_TRIES: u32 = 8;
/// Longest a settlement waits for others to share its transaction.
const MAX_SETTLE_WAIT: Duration = Duration::from_millis(10);
/// Most message ids named in the log line of a batch's refused settlements.
const MAX_FENCED_IDS_LOGGED: usize = 20;

/// A running claim: the messages to start and how many it claimed.
type ClaimFuture = BoxFuture<'static, Result<(Vec<Claimed>, usize), Error>>;

/// The apalis backend of one worker.
pub(crate) struct Engine<B: Backend> {
    shared: Arc<Shared<B>>,
    /// The running claim: the messages to start (those a suppression stops are settled
    /// already) and how many it claimed.
    claim: Option<ClaimFuture>,
    /// How many messages the running claim asked for.
    claim_limit: usize,
    /// How many to claim at a time.
    size: ClaimSize,
    /// Waiting for a wake-up (or, after an error, a pause) before the next claim.
    idle: Option<BoxFuture<'static, ()>>,
    hub: Arc<Hub<B>>,
    backoff: Duration,
    background: Background,
    closing: Option<BoxFuture<'static, ()>>,
}

/// The flusher task, aborted if the worker is dropped without closing.
struct Background(Vec<JoinHandle<()>>);

impl Drop for Background {
    fn drop(&mut self) {
        self.0.iter().for_each(JoinHandle::abort);
    }
}

impl<B: Backend> Engine<B> {
    /// An engine over the process's store, one of the workers of its hub; starts its
    /// flusher.
    pub(crate) fn start(process: Process<B>, settings: WorkerSettings) -> Self {
        let Process { store, clock, hub } = process;
        let (settle_tx, settle_rx) = mpsc::unbounded_channel();
        let wake = store.wakeups().subscribe(settings.type_tag);
        let size = ClaimSize::new(settings.batch_size, settings.max_batch_size)
            .first_at_most(settings.first_claim);
        let shared = Arc::new(Shared {
            store,
            settings,
            clock,
            buffer: Mutex::new(VecDeque::new()),
            held: Mutex::new(HashMap::new()),
            all_settled: Notify::new(),
            running: AtomicUsize::new(0),
            unwritten: AtomicUsize::new(0),
            settle_tx,
            wake,
            idle: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            dry: AtomicBool::new(false),
            reach: Arc::clone(&hub.reach),
            signals: Arc::clone(&hub.signals),
        });
        hub.join(&shared);
        let flusher = tokio::spawn(flush(Arc::clone(&shared), settle_rx));
        Self {
            shared,
            hub,
            claim: None,
            claim_limit: 0,
            size,
            idle: None,
            backoff: Duration::ZERO,
            background: Background(vec![flusher]),
            closing: None,
        }
    }

    fn buffered(&self) -> usize {
        self.shared
            .buffer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// Starts a claim for the free room in the buffer, unless one runs or there is none.
    /// The buffer holds a batch and a half, and a refill starts only once half a batch is
    /// left, so every claim but the last asks for at least a whole batch (claims of half a
    /// batch cost twice the claim statements and commits per message).
    fn start_claim(&mut self) {
        let buffered = self.buffered();
        let room = self.size.room(buffered);
        if self.claim.is_some() || room == 0 {
            return;
        }
        let shared = Arc::clone(&self.shared);
        self.claim_limit = room;
        self.size.claim_started(buffered);
        self.claim = Some(Box::pin(async move {
            let s = &shared.settings;
            // The leases run from here on, as far as this process knows.
            let sent = Instant::now();
            let request = ClaimRequest {
                type_tag: s.type_tag,
                owner: &s.owner,
                limit: room as u32,
                now: shared.clock.database_now(),
                lease: s.lease,
                ordered: s.ordered,
            };
            let claimed = shared.reach.watch(shared.store.claim(&request)).await?;
            {
                let mut held = shared.held.lock().unwrap_or_else(|e| e.into_inner());
                for c in &claimed {
                    let lease = Lease {
                        claim: c.claim,
                        from: sent,
                    };
                    held.insert(c.id.clone(), lease);
                }
            }
            let count = claimed.len();
            let claimed = match s.recipient_of {
                Some(recipient_of) => shared.settle_suppressed(claimed, recipient_of).await,
                None => claimed,
            };
            Ok((claimed, count))
        }));
    }

    /// Drives the running claim; true when it finished (its messages are buffered).
    fn poll_claim(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(claim) = self.claim.as_mut() else {
            return false;
        };
        let Poll::Ready(result) = claim.as_mut().poll(cx) else {
            return false;
        };
        self.claim = None;
        self.shared.signals.claim_returned();
        match result {
            Ok((claimed, count)) => {
                self.backoff = Duration::ZERO;
                let full = count >= self.claim_limit;
                self.shared.dry.store(!full, Ordering::SeqCst);
                let bytes = claimed.iter().map(|c| c.payload.len()).sum();
                self.claim_done(full, bytes);
                if count == 0 {
                    // Nothing is due: wait for a wake-up (a commit signal, or the
                    // process's due probe).
                    self.arm_wake();
                } else {
                    self.hub.worked();
                    if !full {
                        // Other workers hold the rest, or little is due: claim again after
                        // a short pause (or a wake-up), not at once, so claimers that
                        // share a backlog do not spin on each other's locked rows.
                        self.arm_pause();
                    }
                }
                let now = Instant::now();
                let mut buffer = self.shared.buffer.lock().unwrap_or_else(|e| e.into_inner());
                buffer.extend(claimed.into_iter().map(|c| (c, now)));
                drop(buffer);
                self.shared.signal_if_drained();
            }
            Err(e) => {
                self.claim_done(false, 0);
                self.backoff = (self.backoff * 2)
                    .max(MIN_CLAIM_BACKOFF)
                    .min(MAX_CLAIM_BACKOFF);
                if unreachable(&e) {
                    // Said once for the process (`Reach`).
                    tracing::debug!(
                        message.type = self.shared.settings.type_tag, error = %e, retry_in = ?self.backoff,
                        "cannot claim messages; trying again"
                    );
                } else {
                    tracing::warn!(
                        message.type = self.shared.settings.type_tag, error = %e, retry_in = ?self.backoff,
                        "cannot claim messages; trying again"
                    );
                }
                // A wake-up does not cut the pause short: new messages do not mend the
                // database.
                let pause = self.backoff;
                self.idle = Some(Box::pin(tokio::time::sleep(pause)));
            }
        }
        true
    }

    /// Lets the claim size learn how the last claim went, and says at DEBUG when it moves.
    fn claim_done(&mut self, full: bool, bytes: usize) {
        let before = self.size.batch();
        self.size.claim_done(full, bytes);
        if self.size.batch() != before {
            tracing::debug!(
                message.type = self.shared.settings.type_tag, batch = self.size.batch(),
                "claim batch changed"
            );
        }
    }

    /// Waits [`PARTIAL_CLAIM_PAUSE`] or for a wake-up before the next claim.
    fn arm_pause(&mut self) {
        let shared = Arc::clone(&self.shared);
        self.idle = Some(Box::pin(async move {
            tokio::select! {
                _ = shared.wake.notified() => {}
                _ = tokio::time::sleep(PARTIAL_CLAIM_PAUSE) => {}
            }
        }));
    }

    /// Waits for a wake-up before the next claim, marked idle for the process's due probe.
    fn arm_wake(&mut self) {
        let shared = Arc::clone(&self.shared);
        shared.idle.store(true, Ordering::SeqCst);
        self.idle = Some(Box::pin(async move {
            shared.wake.notified().await;
            shared.idle.store(false, Ordering::SeqCst);
        }));
    }

    /// The next buffered message to start; a message of a paused group is given back
    /// instead (its place in line kept), and so is one of a cancelled group (then deleted).
    fn pop(&mut self) -> Option<Claimed> {
        loop {
            let (claimed, _) = self
                .shared
                .buffer
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front()?;
            let paused = &self.hub.paused_groups;
            match &claimed.group {
                Some(group) if paused.holds_back(group, claimed.enqueued_at).is_some() => {
                    self.shared.release(&claimed)
                }
                _ => return Some(claimed),
            }
        }
    }
}

/// The apalis task of a claimed message.
fn task_of(claimed: Claimed) -> Task<Claimed> {
    let id = TaskId::from_string(claimed.id.as_str());
    let (attempt, max) = (claimed.attempt as usize, claimed.max_attempts as usize);
    TaskBuilder::new(claimed)
        .task_id(id)
        .attempt(attempt.saturating_sub(1))
        .max_attempts(max)
        .build()
}

impl<B: Backend> ApalisBackend for Engine<B> {
    type Task = Task<Claimed>;
    type Error = Error;

    fn poll_ready(&mut self, cx: &mut Context<'_>, _: &WorkerContext) -> Poll<Result<(), Error>> {
        // Keep a prefetch claim moving while the service is busy.
        self.poll_claim(cx);
        Poll::Ready(Ok(()))
    }

    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
        _: &WorkerContext,
    ) -> Poll<Option<Result<Task<Claimed>, Error>>> {
        loop {
            self.poll_claim(cx);
            if let Some(claimed) = self.pop() {
                // Prefetch: once half a batch is left, claim the next batch while these
                // run (not while idle: nothing more was due at the last claim).
                if self.idle.is_none() && self.buffered() <= self.size.refill_below() {
                    self.start_claim();
                    self.poll_claim(cx);
                }
                self.shared.running.fetch_add(1, Ordering::SeqCst);
                return Poll::Ready(Some(Ok(task_of(claimed))));
            }
            if self.claim.is_some() {
                self.size.slot_waits();
                return Poll::Pending;
            }
            if let Some(idle) = self.idle.as_mut() {
                if idle.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.idle = None;
            }
            self.start_claim();
        }
    }

    fn poll_close(&mut self, cx: &mut Context<'_>, _: &WorkerContext) -> Poll<Result<(), Error>> {
        if self.closing.is_none() {
            let claim = self.claim.take();
            let shared = Arc::clone(&self.shared);
            self.closing = Some(Box::pin(async move {
                // A claim in flight finishes, so the rows it leased are known.
                if let Some(Ok((claimed, _))) = match claim {
                    Some(c) => Some(c.await),
                    None => None,
                } {
                    let now = Instant::now();
                    let mut buffer = shared.buffer.lock().unwrap_or_else(|e| e.into_inner());
                    buffer.extend(claimed.into_iter().map(|c| (c, now)));
                }
                // Claimed but never started: back to the queue, attempt given back.
                shared.release_buffered(None);
                let done =
                    || shared.held_count() == 0 && shared.unwritten.load(Ordering::SeqCst) == 0;
                while !done() {
                    let settled = shared.all_settled.notified();
                    if done() {
                        break;
                    }
                    let _ = tokio::time::timeout(Duration::from_millis(50), settled).await;
                }
                shared.closed.store(true, Ordering::SeqCst);
                if let Err(e) = shared.store.deregister(&shared.settings.owner).await {
                    tracing::debug!(error = %e, "cannot remove the worker from the registry");
                }
            }));
        }
        let closing = self.closing.as_mut().expect("set above");
        match closing.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.background.0.iter().for_each(JoinHandle::abort);
                Poll::Ready(Ok(()))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<B: Backend> BackendConfig for Engine<B> {
    type Args = Claimed;
    type Id = String;
    type Kind = Ephemeral;
    type Config = WorkerSettings;
    type Layer = SettleLayer<B>;

    fn config(&self) -> &WorkerSettings {
        &self.shared.settings
    }

    fn middleware(&mut self, _: &mut WorkerContext) -> SettleLayer<B> {
        SettleLayer::new(Arc::clone(&self.shared))
    }
}

/// Writes settlements in batches until every sender is gone.
async fn flush<B: Backend>(
    shared: Arc<Shared<B>>,
    mut rx: mpsc::UnboundedReceiver<(Settlement, Option<Outcome>)>,
) {
    let mut pending = Vec::new();
    while let Some(first) = rx.recv().await {
        pending.push(first);
        // Attempts still running will report soon: let them share this transaction, up to
        // the largest claim or MAX_SETTLE_WAIT. Once none runs, nothing is gained by waiting.
        let deadline = tokio::time::Instant::now() + MAX_SETTLE_WAIT;
        let enough = shared.settings.max_batch_size.clamp(1, MAX_SETTLE_BATCH);
        loop {
            while let Ok(s) = rx.try_recv() {
                pending.push(s);
                if pending.len() >= MAX_SETTLE_BATCH {
                    break;
                }
            }
            if pending.len() >= enough || shared.running.load(Ordering::SeqCst) == 0 {
                break;
            }
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(s)) => pending.push(s),
                Ok(None) | Err(_) => break,
            }
        }
        let (batch, outcomes): (Vec<Settlement>, Vec<Option<Outcome>>) = pending.drain(..).unzip();
        // These claims are settled from here on: their leases need no more extending. The
        // entries go before the write, while the database still shows the rows running, so
        // a new claim of the same message (after a release) cannot be mistaken for them.
        {
            let mut held = shared.held.lock().unwrap_or_else(|e| e.into_inner());
            for s in &batch {
                if held.get(&s.id).map(|l| l.claim) == Some(s.claim) {
                    held.remove(&s.id);
                }
            }
        }
        if !write_settlements(&shared, &batch, &outcomes).await {
            // The database keeps refusing the batch: one settlement may be what it refuses.
            // Written one by one, the others get through; one that still fails is given up
            // (its message comes back when its lease expires, and counts nothing here)
            // instead of blocking the rest.
            for (one, outcome) in batch.chunks(1).zip(outcomes.chunks(1)) {
                if !write_settlements(&shared, one, outcome).await {
                    tracing::error!(
                        message.type = shared.settings.type_tag, message.id = %one[0].id,
                        "gave up recording this message's result; it is delivered again after its lease"
                    );
                }
            }
        }
        // Counted (in `written`) before a clean stop can see nothing unwritten, so a drain's
        // report includes every outcome its workers recorded.
        shared.unwritten.fetch_sub(batch.len(), Ordering::SeqCst);
        shared.all_settled.notify_waiters();
        shared.signal_if_drained();
    }
}

/// Writes `batch` in one transaction, then counts and logs what applied ([`written`]).
/// While the database cannot be reached it tries again for as long as it takes (giving up
/// would deliver finished messages twice); when the database refuses the statement itself,
/// it tries [`SETTLE_TRIES`] times with a growing pause and returns false.
async fn write_settlements<B: Backend>(
    shared: &Shared<B>,
    batch: &[Settlement],
    outcomes: &[Option<Outcome>],
) -> bool {
    let mut pause = Duration::from_millis(50);
    let mut refusals = 0;
    // A try failed without the database's word on it (the connection broke, perhaps
    // around the commit): it may have applied.
    let mut unknown = false;
    loop {
        let settle =
            shared
                .store
                .settle(&shared.settings.owner, batch, shared.clock.database_now());
        match shared.reach.watch(settle).await {
            Ok(mut settled) => {
                if unknown && !settled.fenced.is_empty() {
                    read_back(shared, batch, &mut settled).await;
                }
                written(shared, batch, outcomes, &settled);
                return true;
            }
            Err(e) => {
                let refused = matches!(&e, Error::Database(sqlx::Error::Database(_)));
                unknown |= !refused;
                if refused {
                    refusals += 1;
                    if refusals >= SETTLE_TRIES {
                        tracing::warn!(
                            message.type = shared.settings.type_tag, error = %e, count = batch.len(),
                            "the database keeps refusing these message results"
                        );
                        return false;
                    }
                }
                if !unreachable(&e) {
                    tracing::warn!(
                        message.type = shared.settings.type_tag, error = %e, retry_in = ?pause,
                        count = batch.len(), "cannot record message results; retrying"
                    );
                } else {
                    tracing::debug!(
                        message.type = shared.settings.type_tag, error = %e, retry_in = ?pause,
                        count = batch.len(), "cannot record message results; retrying"
                    );
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_CLAIM_BACKOFF);
            }
        }
    }
}

/// `settled` (of `batch`, after an earlier try failed with its outcome unknown) names as
/// fenced those settlements that earlier try may have applied: read back, those it did
/// apply are not fenced (they count as written). Read back until the database answers:
/// calling an applied settlement fenced would leave its outcome uncounted.
async fn read_back<B: Backend>(shared: &Shared<B>, batch: &[Settlement], settled: &mut Settled) {
    let fenced: HashSet<(&str, u32)> = settled
        .fenced
        .iter()
        .map(|f| (f.id.as_str(), f.claim))
        .collect();
    let suspects: Vec<Settlement> = batch
        .iter()
        .filter(|s| fenced.contains(&(s.id.as_str(), s.claim)))
        .cloned()
        .collect();
    let mut pause = Duration::from_millis(50);
    let applied = loop {
        match shared
            .reach
            .watch(shared.store.applied_before(&suspects))
            .await
        {
            Ok(applied) => break applied,
            Err(e) => {
                tracing::debug!(
                    message.type = shared.settings.type_tag, error = %e, retry_in = ?pause,
                    "cannot read back message results; retrying"
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_CLAIM_BACKOFF);
            }
        }
    };
    if applied.is_empty() {
        return;
    }
    tracing::debug!(
        message.type = shared.settings.type_tag, applied = applied.len(),
        "results whose commit went unanswered were recorded after all"
    );
    settled.fenced.retain(|f| !applied.contains(f));
    settled.applied += applied.len() as u64;
}

/// After `batch` was written: counts the outcome of every settlement that applied and logs
/// each move to the dead letters among them; the fenced ones (their message's lease was
/// taken over) count nothing and are named in one WARN.
fn written<B: Backend>(
    shared: &Shared<B>,
    batch: &[Settlement],
    outcomes: &[Option<Outcome>],
    settled: &Settled,
) {
    let fenced: HashSet<(&str, u32)> = settled
        .fenced
        .iter()
        .map(|f| (f.id.as_str(), f.claim))
        .collect();
    let type_tag = shared.settings.type_tag;
    for (s, outcome) in batch.iter().zip(outcomes) {
        if !fenced.is_empty() && fenced.contains(&(s.id.as_str(), s.claim)) {
            continue;
        }
        let Some(outcome) = *outcome else { continue };
        shared.settings.tally.record(outcome);
        if let (Outcome::GivenUp { attempts, .. }, Settle::Bury { reason }) = (outcome, &s.settle) {
            tracing::warn!(
                message.type = type_tag, message.id = %s.id, attempts, reason = %reason,
                "moved to the dead letters"
            );
        }
    }
    if settled.fenced.is_empty() {
        return;
    }
    let shown = settled.fenced.iter().take(MAX_FENCED_IDS_LOGGED);
    let mut ids = shown.map(|f| f.id.as_str()).collect::<Vec<_>>().join(", ");
    if settled.fenced.len() > MAX_FENCED_IDS_LOGGED {
        ids.push_str(&format!(
            " and {} more",
            settled.fenced.len() - MAX_FENCED_IDS_LOGGED
        ));
    }
    tracing::warn!(
        message.type = type_tag, fenced = settled.fenced.len(), ids = %ids,
        "results not recorded (not counted, nothing moved): those messages' leases had expired and were taken over"
    );
}

impl<B: Backend> std::fmt::Debug for Engine<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("type_tag", &self.shared.settings.type_tag)
            .field("owner", &self.shared.settings.owner)
            .finish_non_exhaustive()
    }
}
