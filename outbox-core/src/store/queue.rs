//! The records a worker and the queue exchange: what a claim asks for and returns, and how
//! a claimed message is settled.

use std::time::{Duration, SystemTime};

use crate::{
    clock::{Due, Now},
    enqueue::MessageId,
};

/// A request for the next due messages of one type.
#[derive(Debug, Clone)]
pub struct ClaimRequest<'a> {
    /// The type tag to claim from.
    pub type_tag: &'a str,
    /// The worker that will hold the messages (the lease owner).
    pub owner: &'a str,
    /// Most messages to claim.
    pub limit: u32,
    /// Messages due at or before this time are claimable.
    pub now: Now,
    /// The lease: unless extended, the messages may be rescued this long after `now`.
    pub lease: Duration,
    /// The type's messages may carry ordering keys: a keyed message is claimable only when
    /// no earlier message of its type and key is queued, running or a dead letter. `false`
    /// (a type without keys) claims without looking at keys.
    pub ordered: bool,
}

/// One claimed message: leased to its worker, its attempt already counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// The message's stable id.
    pub id: MessageId,
    /// The stored payload (JSON bytes), not yet decoded.
    pub payload: Vec<u8>,
    /// This attempt's number, starting at 1 (a snooze or a release gives it back).
    pub attempt: u32,
    /// Attempts the message gets in all.
    pub max_attempts: u32,
    /// Scheduling priority (higher first).
    pub priority: i32,
    /// When it became due.
    pub due_at: SystemTime,
    /// How many times the message has been claimed, this claim included: the fencing token
    /// its settlement names. Never given back, so no two claims of a message share it.
    pub claim: u32,
    /// Its group, if it was enqueued into one.
    pub group: Option<String>,
    /// When it was enqueued (the time its group's cancel is compared with).
    pub enqueued_at: SystemTime,
}

impl Claimed {
    /// Claim order: higher priority first, then earlier due, then older id.
    pub fn claim_order(a: &Claimed, b: &Claimed) -> std::cmp::Ordering {
        b.priority
            .cmp(&a.priority)
            .then(a.due_at.cmp(&b.due_at))
            .then(a.id.cmp(&b.id))
    }
}

/// A claimed message a worker still holds, for lease extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The message's id.
    pub id: MessageId,
    /// The claim the worker holds it for ([`Claimed::claim`]).
    pub claim: u32,
}

/// One worker's part of a process's heartbeat: the worker, its type, how long its leases
/// last, and the messages it holds.
#[derive(Debug, Clone, Copy)]
pub struct WorkerBeat<'a> {
    /// The worker (the lease owner).
    pub owner: &'a str,
    /// The type it works on (for the worker registry).
    pub type_tag: &'a str,
    /// How long after the heartbeat its leases last.
    pub lease: Duration,
    /// The messages it holds, each under the claim named.
    pub held: &'a [Held],
}

/// How a claimed message ends its attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Settle {
    /// Delivered (or dropped as an orphan). Deleted, or kept as a done row when the
    /// outbox retains history; `note` is recorded with a kept row.
    Done {
        /// Keep the row as done (retention) instead of deleting it.
        keep: bool,
        /// Recorded with a kept row (why an orphan was dropped).
        note: Option<String>,
    },
    /// Back to the queue, due at `due`, with `error` recorded; `give_back_attempt` returns
    /// the attempt (its count goes down by one: a snooze does not use up the message).
    Retry {
        /// When it is due again.
        due: Due,
        /// Why the attempt did not complete.
        error: String,
        /// Whether the attempt did not count (the count goes back down by one).
        give_back_attempt: bool,
    },
    /// Back to the queue unchanged, as if never claimed: its attempt is given back and its
    /// due time and place in line are kept (not started, or stopped before its side effect).
    Release,
    /// Not sent: a suppression stops it. Kept as a `suppressed` row with `reason` (pruned
    /// later), its attempt given back.
    Suppressed {
        /// Which suppression stopped it.
        reason: String,
    },
    /// Moved to the dead letters with `reason`, in the same transaction.
    Bury {
        /// Why it was given up.
        reason: String,
    },
}

/// The end of one claimed attempt, written by the worker's flusher.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    /// The message.
    pub id: MessageId,
    /// The attempt it settles (its number goes into the attempt log).
    pub attempt: u32,
    /// The claim it settles ([`Claimed::claim`]): it only applies while the message is
    /// still leased to this worker under this claim (fencing).
    pub claim: u32,
    /// What happens to it.
    pub settle: Settle,
    /// Whether the message belongs to a group: a delivery is then counted in the group's
    /// row in the same transaction.
    pub grouped: bool,
}

/// What a batch of settlements did: every settlement either applied or was fenced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settled {
    /// Settlements applied.
    pub applied: u64,
    /// Settlements refused because the message was no longer leased to this worker under
    /// that claim (its lease expired and it was rescued, or requeued by an admin), in the
    /// batch's order. Nothing of theirs was written.
    pub fenced: Vec<Fenced>,
}

/// A settlement the database refused: its message was no longer leased to the settling
/// worker under the claim it names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fenced {
    /// The message.
    pub id: MessageId,
    /// The claim the refused settlement named ([`Settlement::claim`]).
    pub claim: u32,
}

impl Fenced {
    /// The refused `settlement`'s message and claim.
    pub fn of(settlement: &Settlement) -> Self {
        Self {
            id: settlement.id.clone(),
            claim: settlement.claim,
        }
    }
}

/// How long delivered messages are kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Retention {
    /// Deleted when delivered (the default): the queue only holds unfinished work.
    #[default]
    DeleteOnSuccess,
    /// Kept as done rows for this long (by the database's clock), then pruned in bounded
    /// batches.
    KeepFor(std::time::Duration),
}

impl Retention {
    /// Delivered messages are deleted at once (the default).
    pub fn delete_on_success() -> Self {
        Retention::DeleteOnSuccess
    }

    /// Delivered messages are kept as done rows for `window`, then pruned (the pruner looks
    /// every tenth of the window, between 100 ms and 30 s); their idempotency keys stay
    /// taken until then.
    pub fn keep_for(window: std::time::Duration) -> Self {
        Retention::KeepFor(window)
    }
}
