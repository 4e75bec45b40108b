//! The settings of one type's worker, built once per registration (by
//! `QueueOptions::settings_for`) and read by its supervisor, engine and settle step.

use std::time::Duration;

use crate::counters::Tally;

/// How one type's worker claims, holds and settles its messages.
#[derive(Debug, Clone)]
pub(crate) struct WorkerSettings {
    /// The type tag it works on.
    pub(crate) type_tag: &'static str,
    /// The lease owner: this worker's unique name (empty until the supervisor names the
    /// worker it starts, see [`WorkerSettings::owned_by`]).
    pub(crate) owner: String,
    /// Messages claimed per statement at first (a worker holds up to a batch and a half
    /// claimed before they start).
    pub(crate) batch_size: usize,
    /// The most a claim grows to while the handlers outpace the claims (at least
    /// `batch_size`; equal to it, the batch never grows; see `ClaimSize`).
    pub(crate) max_batch_size: usize,
    /// The most the worker's first claim asks for: its concurrency, so the first
    /// handlers start as soon as the database returns that many (the next batch is
    /// claimed while they run).
    pub(crate) first_claim: usize,
    /// How often leases are extended and expired ones rescued.
    pub(crate) heartbeat_interval: Duration,
    /// How long a claim or a heartbeat holds a message unless extended
    /// (`heartbeat_interval × missed_heartbeats`).
    pub(crate) lease: Duration,
    /// Keep delivered messages as done rows (retention) instead of deleting them.
    pub(crate) keep_done: bool,
    /// The type takes rate-limit tokens: a message put back for want of one returns to the
    /// front of the worker's buffer (keeping its place), not to the database.
    pub(crate) rate_limited: bool,
    /// Where the settle step counts the outcome of each attempt (the outbox's
    /// `DeliveryCounts` and the `metrics` counters of this type).
    pub(crate) tally: Tally,
    /// Reads a payload's recipient, for a type that may name one: each claimed batch is
    /// checked against the suppression list before it starts.
    pub(crate) recipient_of: Option<RecipientOf>,
    /// The type's messages may carry ordering keys: claimed with the ordered statement.
    pub(crate) ordered: bool,
}

pub(crate) use crate::message::RecipientOf;

impl WorkerSettings {
    /// These settings for the worker named `owner` (the lease owner of what it claims).
    pub(crate) fn owned_by(mut self, owner: String) -> Self {
        self.owner = owner;
        self
    }
}
