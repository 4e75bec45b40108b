//! What one worker's parts share: its settings, the claimed messages it holds, the
//! channel to its flusher and its wake-up. The engine (claims, flusher), the settle layer
//! and the process's loops (due probe, heartbeat) use it; none imports another.

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Instant,
};

use tokio::sync::{mpsc, Notify};

use super::WorkerSettings;
use crate::{
    clock::Clock,
    counters::Outcome,
    enqueue::MessageId,
    store::{Backend, Claimed, Held, Settle, Settlement},
};

/// A message a worker holds: the claim it holds it under, and when its lease last ran from
/// by this process's monotonic clock (when its claim, or the last heartbeat that extended
/// it, was sent: never later than the database's start of the lease).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lease {
    pub(crate) claim: u32,
    pub(crate) from: Instant,
}

/// State shared by the worker's stream, its flusher, its settle layer and the process's
/// due probe and heartbeat.
pub(crate) struct Shared<B> {
    pub(crate) store: B,
    pub(crate) settings: WorkerSettings,
    /// The time claims, settlements, heartbeats and rescue run at.
    pub(crate) clock: Arc<dyn Clock>,
    /// Claimed, not yet started, with when they were claimed.
    pub(super) buffer: Mutex<VecDeque<(Claimed, Instant)>>,
    /// Every message claimed and not yet taken by the flusher, by id: the leases the
    /// heartbeat extends.
    pub(super) held: Mutex<HashMap<MessageId, Lease>>,
    /// Signalled after each batch the flusher wrote (a clean stop waits for the last).
    pub(super) all_settled: Notify,
    /// Attempts handed to the service and not yet reported to the flusher.
    pub(super) running: AtomicUsize,
    /// Settlements sent to the flusher and not yet written (a clean stop waits for them).
    pub(super) unwritten: AtomicUsize,
    /// Settlements for the flusher, each with what its attempt counts as once written
    /// (nothing for a release of a message never started).
    pub(super) settle_tx: mpsc::UnboundedSender<(Settlement, Option<Outcome>)>,
    /// Woken when messages of its type may be due (a commit signal, the process's due
    /// probe, a rescue).
    pub(super) wake: Arc<Notify>,
    /// Waiting for a wake-up after a claim found nothing: the process's due probe asks
    /// about this type.
    pub(super) idle: AtomicBool,
    /// Closing or closed: the process heartbeat leaves it out (it deregistered).
    pub(super) closed: AtomicBool,
    /// The last claim found fewer messages than it asked for: the backlog ran dry.
    pub(super) dry: AtomicBool,
    /// Whether the process reaches its database (the hub's).
    pub(super) reach: Arc<super::Reach>,
    /// The process's first-claim and quiet signals (the hub's).
    pub(super) signals: Arc<super::Signals>,
}

impl<B: Backend> Shared<B> {
    /// Reports an attempt's end to the flusher, which counts `outcome` once the
    /// settlement is written.
    pub(crate) fn finish(&self, settlement: Settlement, outcome: Outcome) {
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.send(settlement, Some(outcome));
    }

    /// Returns a started message that did not get to its side effect (no rate-limit token)
    /// to the buffer, in claim order, still claimed; counted as deferred.
    pub(crate) fn put_back(&self, claimed: Claimed) {
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.settings.tally.record(Outcome::Deferred);
        let mut buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        buffer.push_front((claimed, Instant::now()));
        buffer
            .make_contiguous()
            .sort_by(|a, b| Claimed::claim_order(&a.0, &b.0));
        drop(buffer);
        // An idle engine (its last claim found nothing) picks it up again.
        self.wake.notify_one();
    }

    /// Queues a settlement that counts nothing (a release) for the flusher.
    pub(crate) fn settle(&self, settlement: Settlement) {
        self.send(settlement, None);
    }

    /// Queues a settlement of a message that never started, counted as `outcome`.
    pub(super) fn send_outcome(&self, settlement: Settlement, outcome: Outcome) {
        self.send(settlement, Some(outcome));
    }

    fn send(&self, settlement: Settlement, outcome: Option<Outcome>) {
        self.unwritten.fetch_add(1, Ordering::SeqCst);
        // The flusher outlives every sender it serves; a closed channel means the worker is
        // being torn down, and the lease brings the message back.
        let _ = self.settle_tx.send((settlement, outcome));
    }

    pub(super) fn held_snapshot(&self) -> Vec<Held> {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(id, lease)| Held {
                id: id.clone(),
                claim: lease.claim,
            })
            .collect()
    }

    /// A heartbeat sent at `sent` and answered at `answered` extended the leases of
    /// `renewed` (those still held under the same claim): they run from `sent` on. A lease
    /// that had run out by `answered` is left as it was: the heartbeat extends only what
    /// the database still leased to this worker, and such a message may have been taken
    /// over.
    pub(super) fn leases_renewed(&self, renewed: &[Held], sent: Instant, answered: Instant) {
        let lease = self.settings.lease;
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        for h in renewed {
            if let Some(l) = held.get_mut(&h.id).filter(|l| l.claim == h.claim) {
                if answered.saturating_duration_since(l.from) < lease {
                    l.from = l.from.max(sent);
                }
            }
        }
    }

    /// Whether `claimed` may start now: more than half a heartbeat interval of its lease is
    /// left by this process's clock. A heartbeat renews every lease once an interval, so a
    /// live worker's messages always have more left; a worker cut off from its database
    /// starts nothing that another worker may have taken over meanwhile.
    pub(crate) fn may_start(&self, claimed: &Claimed) -> bool {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let Some(lease) = held.get(&claimed.id).filter(|l| l.claim == claimed.claim) else {
            return true;
        };
        let s = &self.settings;
        let usable = s.lease.saturating_sub(s.heartbeat_interval / 2);
        lease.from.elapsed() < usable
    }

    /// A message handed to the service did not start (see [`Shared::may_start`]): it goes
    /// back to the queue unchanged.
    pub(crate) fn not_started(&self, claimed: &Claimed) {
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.release(claimed);
    }

    pub(super) fn held_count(&self) -> usize {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Says so to the process's loops ([`super::Signals::holding_nothing`]) when this worker's
    /// backlog ran dry (its last claim found fewer than it asked for) and it holds no
    /// message: none claimed, running or waiting for its settlement to be written. (Mid-way
    /// through a backlog its claims are full, and nothing is said.)
    pub(super) fn signal_if_drained(&self) {
        if self.dry.load(Ordering::SeqCst)
            && self.running.load(Ordering::SeqCst) == 0
            && self.unwritten.load(Ordering::SeqCst) == 0
            && self.held_count() == 0
        {
            self.signals.holding_nothing();
        }
    }

    /// Gives back buffered messages claimed before `older_than` (all when `None`).
    pub(super) fn release_buffered(&self, older_than: Option<Instant>) -> usize {
        let mut buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        let mut released = 0;
        buffer.retain(|(claimed, at)| {
            let stale = older_than.is_none_or(|limit| *at < limit);
            if stale {
                released += 1;
                self.release(claimed);
            }
            !stale
        });
        released
    }

    /// Gives back the buffered messages `which` picks.
    pub(super) fn release_buffered_where(&self, which: impl Fn(&Claimed) -> bool) -> usize {
        let mut buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        let mut released = 0;
        buffer.retain(|(claimed, _)| {
            let picked = which(claimed);
            if picked {
                released += 1;
                self.release(claimed);
            }
            !picked
        });
        released
    }

    /// Gives `claimed` back unchanged, as if never claimed (it was not started).
    pub(super) fn release(&self, claimed: &Claimed) {
        self.settle(Settlement {
            id: claimed.id.clone(),
            attempt: claimed.attempt,
            claim: claimed.claim,
            settle: Settle::Release,
            grouped: claimed.group.is_some(),
        });
    }
}
