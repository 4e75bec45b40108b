//! The storage port: the one interface between the backend-neutral outbox (workers,
//! layers, admin) and the engine of each database.
//!
//! Every database implements these traits over the same schema (`outbox_messages`,
//! `outbox_dead_letters`, `outbox_rate_buckets`, `outbox_paused`, `outbox_workers`);
//! nothing above this module names a database, and no backend imports a layer, the worker
//! or the admin API. Times cross the port as [`SystemTime`] (or as [`Now`], the time an
//! operation runs at: the database's own clock, or a time a test pinned) and durations;
//! each backend converts them once, with [`crate::clock`] (unix milliseconds in every
//! table, seconds for rate buckets and shaping). Due times, leases, bucket refills and
//! shaping's tokens and slots are computed by the database from `now` and a duration, so
//! hosts with skewed clocks agree.
//!
//! The lifecycle of one message, as verbs of [`QueueStore`]:
//!
//! ```text
//! enqueue ─▶ queued ──claim──▶ running (leased to one worker, attempt counted)
//!              ▲                 │ settle: Done    → deleted (or kept as done, retention)
//!              │                 │ settle: Retry   → queued, due later
//!              ├─────────────────┤ settle: Release → queued, unchanged, attempt given back
//!              │ rescue_expired  │ settle: Bury    → outbox_dead_letters
//!              └── lease expired ┘ (a settlement only applies while the lease is its own)
//! ```

mod breakers;
mod bucket;
mod counts;
mod dead_letters;
mod groups;
mod live;
mod queue;
mod shaping;
mod wake;

use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

pub use crate::clock::{Due, Now};
pub use crate::endpoints::Endpoint;
pub use crate::message_events::{MessageEvent, NewMessageEvent};
pub use crate::shaping::{RuleAction, ShapingRule, SiteDecision, SiteLimit, SiteState};
pub use crate::suppression::{
    normalize_address, NewSuppression, SuppressedMessage, Suppression, SuppressionFilter,
    SuppressionProbe, SuppressionReason, SuppressionScope, TokenUse, MAX_SCOPE_NAME_LEN,
    MAX_SUPPRESSION_ADDRESS_LEN, MAX_TOKEN_BATCH,
};
pub use breakers::{BreakerState, ProbeFailure, ProbeGrant, BREAKER_POLL};
pub use bucket::{BucketState, RateLimit};
pub use counts::{MinuteOutcomes, TypeCounts, TypeOutcomes, WorkersSeen};
pub use dead_letters::{DeadLetter, DeadLetterFilter, FailedAttempt, Requeued};
pub use groups::{GroupHook, GroupProgress, RateWindow, MAX_IDLE_AFTER, RATE_WINDOW};
pub use live::{
    HeldBy, HeldKey, LiveFilter, LiveMessage, LiveMessageDetail, LiveState, ReplayFilter,
};
pub use queue::{
    ClaimRequest, Claimed, Fenced, Held, Retention, Settle, Settled, Settlement, WorkerBeat,
};
pub use shaping::{SiteAnswer, SitesInForce};
pub use wake::Wakeups;

use crate::{enqueue::MessageId, error::Error};

/// A waiting message's id and stored payload.
pub type Waiting = (MessageId, Vec<u8>);

/// A message type paused across processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PausedType {
    /// The paused type tag.
    pub type_tag: String,
    /// When it was paused.
    pub paused_at: SystemTime,
    /// Why, as given when pausing.
    pub reason: String,
}

/// What a running outbox reads five times a second, in one statement: what is paused, and
/// which circuit breakers are open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Steering {
    /// The paused types.
    pub paused_types: Vec<PausedType>,
    /// The names of the paused groups.
    pub paused_groups: Vec<String>,
    /// The open circuit breakers.
    pub open_breakers: Vec<BreakerState>,
    /// The groups cancelled in the last [`CANCEL_WINDOW`], with the time of their cancel:
    /// a claimed message of such a group enqueued before it is given back, not started.
    pub cancelled_groups: Vec<CancelledGroup>,
}

/// How long after a group's cancel every process still checks its claimed messages
/// against it (and deletes what was given back): far longer than a claimed message waits
/// to start.
pub const CANCEL_WINDOW: Duration = Duration::from_secs(600);

/// A group cancelled recently, as [`Steering`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelledGroup {
    /// The group's name.
    pub name: String,
    /// When it was cancelled: its messages enqueued until then are cancelled.
    pub cancelled_at: SystemTime,
}

/// A pending-message count for a type that no handler in this process is registered for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnregisteredType {
    /// The type tag found in the queue.
    pub type_tag: String,
    /// How many messages of it are waiting.
    pub pending: u64,
}

/// The outcome of trying to take one token from a bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TokenGrant {
    /// A token was taken (durably).
    Granted,
    /// No token now; one will be there after this long.
    Wait(Duration),
    /// The bucket does not exist.
    NoSuchBucket,
}

/// The queue's lifecycle verbs: claim, settle, leases, rescue, retention, and the
/// housekeeping reads the workers need.
pub trait QueueStore: Send + Sync + 'static {
    /// Moves up to `limit` due, queued messages of one (unpaused) type straight to
    /// `running`, leased to `owner` for `lease` from `now`, counting the attempt and the claim
    /// ([`Claimed::claim`]); returns
    /// them in claim order (priority, due time, id). One statement (or one short write
    /// transaction) per batch; concurrent claimers never get the same message.
    fn claim<'a>(
        &'a self,
        request: &'a ClaimRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Claimed>, Error>>;

    /// Applies a batch of settlements of `owner`'s claims in one transaction. Each one
    /// only applies while its message is still leased to `owner` under its claim; the
    /// others are returned as fenced ([`Settled::fenced`], each by message and claim) and
    /// change nothing: a fenced bury writes no dead letter. The worker counts and logs
    /// only what applied.
    fn settle<'a>(
        &'a self,
        owner: &'a str,
        settlements: &'a [Settlement],
        now: Now,
    ) -> BoxFuture<'a, Result<Settled, Error>>;

    /// Of `settlements`, which a later try reported fenced after an earlier try of the same
    /// batch failed with its outcome unknown (the connection broke around the commit):
    /// those the earlier try applied after all, read back from where their messages are
    /// now (gone from the queue after a delete or a move to the dead letters; or still
    /// under the same claim with the state the settlement gives). One read, only after
    /// such a failure; a message an operator cancelled in that instant may be taken for
    /// delivered.
    fn applied_before<'a>(
        &'a self,
        settlements: &'a [Settlement],
    ) -> BoxFuture<'a, Result<Vec<Fenced>, Error>>;

    /// Records that the workers of `beats` are alive (registering them if new) and extends
    /// the leases of the messages each holds to its lease from `now`, each only while that
    /// worker holds the claim named ([`Held::claim`]). One process sends one heartbeat for
    /// all its workers: a fixed number of statements however many types it runs.
    fn heartbeat<'a>(
        &'a self,
        beats: &'a [WorkerBeat<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// Removes worker `owner` from the registry (a clean stop).
    fn deregister<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<(), Error>>;

    /// Puts the running messages of `type_tags` whose lease expired before `now` back in
    /// the queue, keeping their due time and so their place in line (their worker crashed
    /// or stalled; the attempt stays counted and joins the attempt log); returns how many.
    /// One statement for every type.
    fn rescue_expired<'a>(
        &'a self,
        type_tags: &'a [&'a str],
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>>;

    /// Which of `type_tags` are not paused and have a queued message due at `now`: how an
    /// idle process learns, in one statement, which of its types to claim for.
    fn due_types<'a>(
        &'a self,
        type_tags: &'a [&'a str],
        now: Now,
    ) -> BoxFuture<'a, Result<Vec<String>, Error>>;

    /// Deletes up to `limit` done rows (kept for retention) that finished more than
    /// `window` before `now`.
    fn prune_done(
        &self,
        window: Duration,
        now: Now,
        limit: u32,
    ) -> BoxFuture<'_, Result<u64, Error>>;

    /// Whether any message of `type_tags` (except paused types) is due at `now`, or held
    /// by a worker whose name starts with `owner_prefix`: 0 means a drain is complete, any
    /// other value that it is not (the statements stop at the first such message).
    fn count_unfinished<'a>(
        &'a self,
        type_tags: &'a [&'static str],
        owner_prefix: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>>;

    /// Queued messages of types other than `registered`.
    fn unregistered_pending<'a>(
        &'a self,
        registered: &'a [&'static str],
    ) -> BoxFuture<'a, Result<Vec<UnregisteredType>, Error>>;

    /// Moves queued messages of types other than `registered` to the dead letters with
    /// `reason`; returns how many.
    fn bury_unregistered<'a>(
        &'a self,
        registered: &'a [&'static str],
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>>;
}

/// Named token buckets shared by every process on the database.
pub trait RateBucketStore: Send + Sync + 'static {
    /// Takes one token at `now` if there is one.
    fn take_token<'a>(
        &'a self,
        bucket: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<TokenGrant, Error>>;

    /// Creates the bucket full, or changes its rate keeping the tokens it has (capped),
    /// at `now`.
    fn set_bucket<'a>(
        &'a self,
        bucket: &'a str,
        limit: RateLimit,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// The bucket's settings and tokens, read at `now`.
    fn bucket<'a>(
        &'a self,
        bucket: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<BucketState>, Error>>;

    /// Every bucket with its settings and tokens, read at `now`, by name.
    fn buckets(&self, now: Now) -> BoxFuture<'_, Result<Vec<(String, BucketState)>, Error>>;
}

/// Message types paused across processes.
pub trait PauseStore: Send + Sync + 'static {
    /// Pauses `type_tag` (idempotent).
    fn pause<'a>(
        &'a self,
        type_tag: &'a str,
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>>;
    /// Resumes `type_tag`; false if it was not paused.
    fn resume<'a>(&'a self, type_tag: &'a str) -> BoxFuture<'a, Result<bool, Error>>;
    /// Every paused type.
    fn paused(&self) -> BoxFuture<'_, Result<Vec<PausedType>, Error>>;
    /// The paused types and groups and the open circuit breakers (their probe state at
    /// `now`), in one read: what every running outbox polls.
    fn steering(&self, now: Now) -> BoxFuture<'_, Result<Steering, Error>>;
}

/// The dead-letter table.
pub trait DeadLetterStore: Send + Sync + 'static {
    /// A page of dead letters, newest first.
    fn list_dead<'a>(
        &'a self,
        filter: &'a DeadLetterFilter,
        limit: u32,
        offset: u64,
    ) -> BoxFuture<'a, Result<Vec<DeadLetter>, Error>>;
    /// How many dead letters match.
    fn count_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>>;
    /// Moves matching dead letters back to the queue, due at `now`, attempts reset, in
    /// one transaction; a dead letter another caller moved first is simply not counted.
    fn requeue_dead<'a>(
        &'a self,
        filter: &'a DeadLetterFilter,
        now: Now,
    ) -> BoxFuture<'a, Result<Requeued, Error>>;
    /// Deletes matching dead letters.
    fn purge_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>>;
}

/// The live messages of the queue: queued, scheduled, running and retrying rows (done
/// rows kept for retention are not live). Every read derives each row's [`LiveState`] at
/// `now`, as [`StatsStore::status_counts`] does.
pub trait LiveMessageStore: Send + Sync + 'static {
    /// Up to `limit` matching live messages with ids greater than `after` (all, if
    /// `None`), by id: a keyset page. Rows deleted between two pages never make the next
    /// page repeat or skip a row.
    fn list_live<'a>(
        &'a self,
        filter: &'a LiveFilter,
        after: Option<&'a str>,
        limit: u32,
        now: Now,
    ) -> BoxFuture<'a, Result<Vec<LiveMessage>, Error>>;
    /// How many live messages match.
    fn count_live<'a>(
        &'a self,
        filter: &'a LiveFilter,
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>>;
    /// The payloads of the oldest (by id) up to `limit` queued messages of `type_tag`
    /// that no worker runs, with their ids: what the start check
    /// ([`Handler::refuses`](crate::Handler::refuses)) reads.
    fn oldest_queued_payloads<'a>(
        &'a self,
        type_tag: &'a str,
        limit: u32,
        now: Now,
    ) -> BoxFuture<'a, Result<Vec<Waiting>, Error>>;
    /// One live message with its payload, if it exists and is live.
    fn show_live<'a>(
        &'a self,
        id: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<LiveMessageDetail>, Error>>;
    /// Makes the matching queued messages due later than `now` due at `now`, keeping
    /// their attempts; running messages and messages already due are left as they are.
    /// Runs in transactions of at most `batch` messages; returns how many it moved.
    fn retry_live_now<'a>(
        &'a self,
        filter: &'a LiveFilter,
        now: Now,
        batch: u32,
    ) -> BoxFuture<'a, Result<u64, Error>>;
    /// Deletes the matching queued messages (never running ones: those finish), in
    /// transactions of at most `batch` messages; returns how many it deleted.
    fn cancel_live<'a>(
        &'a self,
        filter: &'a LiveFilter,
        now: Now,
        batch: u32,
    ) -> BoxFuture<'a, Result<u64, Error>>;
    /// Sends the matching delivered messages that are kept for the retention window again,
    /// in place: the same id and payload, queued and due at `now`, attempts reset, their
    /// attempt log kept. Returns how many. Nothing else (live messages, dead letters) is
    /// touched.
    fn replay_done<'a>(
        &'a self,
        filter: &'a ReplayFilter,
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>>;
    /// Up to `limit` order keys of `type_tag` that hold later messages behind a dead letter
    /// or a failing message, by key.
    fn held_keys<'a>(
        &'a self,
        type_tag: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<HeldKey>, Error>>;
}

/// Groups (campaigns): messages enqueued with a group name, paused, counted and cancelled
/// as one, through the group indexes (never a scan of the queue).
pub trait GroupStore: Send + Sync + 'static {
    /// Pauses group `name` at `now` (idempotent): from the commit on, no claim takes its
    /// messages; running processes also stop starting the ones they hold within
    /// [`GROUP_PAUSE_POLL`] (they read [`GroupStore::paused_groups`]).
    fn pause_group<'a>(
        &'a self,
        name: &'a str,
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>>;
    /// Resumes group `name`; false if it was not paused.
    fn resume_group<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, Error>>;
    /// The names of the paused groups.
    fn paused_groups(&self) -> BoxFuture<'_, Result<Vec<String>, Error>>;
    /// Every group's progress at `now`, by name.
    fn groups(&self, now: Now) -> BoxFuture<'_, Result<Vec<GroupProgress>, Error>>;
    /// One group's progress at `now`; `None` if nothing is known of it.
    fn group<'a>(
        &'a self,
        name: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<GroupProgress>, Error>>;
    /// Records the group's cancel at `now` (its messages enqueued until then are never
    /// claimed again; running processes give back the ones they hold within
    /// [`GROUP_PAUSE_POLL`], reading [`Steering::cancelled_groups`]), then deletes them as
    /// [`GroupStore::cancel_group_leftovers`] does; returns how many it deleted.
    fn cancel_group<'a>(
        &'a self,
        name: &'a str,
        now: Now,
        batch: u32,
    ) -> BoxFuture<'a, Result<u64, Error>>;
    /// Deletes the group's queued messages enqueued before its latest cancel (never running
    /// ones: those finish; and none if it was never cancelled) and counts them as cancelled
    /// in its row, in transactions of at most `batch` messages, until a batch finds none;
    /// returns how many it deleted. Processes call it for what they gave back, and for
    /// messages that were running at the cancel and came back to the queue (a retry, an
    /// expired lease).
    fn cancel_group_leftovers<'a>(
        &'a self,
        name: &'a str,
        batch: u32,
    ) -> BoxFuture<'a, Result<u64, Error>>;
    /// Sets the group's completion hook (armed again if it had fired).
    fn set_group_hook<'a>(
        &'a self,
        name: &'a str,
        hook: &'a GroupHook,
    ) -> BoxFuture<'a, Result<(), Error>>;
    /// Fires the hooks of the groups with an armed hook and nothing queued or running:
    /// each group's hook message is enqueued (with a fresh id from `new_id`) in the same
    /// transaction that marks the hook fired, so across processes it fires once. Returns
    /// the groups whose hook this call fired.
    fn fire_group_hooks<'a>(
        &'a self,
        now: Now,
        new_id: &'a (dyn Fn() -> String + Send + Sync),
    ) -> BoxFuture<'a, Result<Vec<String>, Error>>;
}

/// How often a running outbox reads the paused groups (and types): a pause stops new
/// starts in every process within about this long.
pub const GROUP_PAUSE_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// Circuit breakers shared by every process: a downstream one process found down stops
/// every process's workers of the types it guards, and one probe at a time (across
/// processes) tests it on a backoff.
pub trait BreakerStore: Send + Sync + 'static {
    /// Opens breaker `name` at `now` with `reason`, its first probe due `first_probe` later;
    /// true when this call opened it, false when it was open already (then nothing
    /// changes). Creates its row on first use.
    fn open_breaker<'a>(
        &'a self,
        name: &'a str,
        reason: &'a str,
        now: Now,
        first_probe: Duration,
    ) -> BoxFuture<'a, Result<bool, Error>>;
    /// Gives the probe of open breaker `name` to `owner` for `lease` when it is due and no
    /// other holds it (or the other's lease expired); `None` otherwise.
    fn take_probe<'a>(
        &'a self,
        name: &'a str,
        owner: &'a str,
        now: Now,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<ProbeGrant>, Error>>;
    /// Records that `owner`'s probe of breaker `name` failed: the breaker stays open and
    /// the next probe is due `failure.next_in` from `now`. Applies only while `owner`
    /// holds the probe.
    fn probe_failed<'a>(
        &'a self,
        name: &'a str,
        owner: &'a str,
        failure: ProbeFailure<'a>,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>>;
    /// Closes breaker `name` at `now`; true when this call closed it.
    fn close_breaker<'a>(&'a self, name: &'a str, now: Now) -> BoxFuture<'a, Result<bool, Error>>;
    /// Makes the next probe of open breaker `name` due at `now` (an operator who knows the
    /// downstream is back); false if it is not open.
    fn probe_breaker_now<'a>(
        &'a self,
        name: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<bool, Error>>;
    /// Every breaker that ever opened, by name, as of `now`.
    fn breakers(&self, now: Now) -> BoxFuture<'_, Result<Vec<BreakerState>, Error>>;
}

/// The suppression list, the messages it stopped, and tokens that may be used once.
pub trait SuppressionStore: Send + Sync + 'static {
    /// Adds `entries` at `now`, each replacing an entry of the same address and scope, in
    /// one transaction; returns how many.
    fn add_suppressions<'a>(
        &'a self,
        entries: &'a [NewSuppression],
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>>;
    /// Removes the entry of `address` in `scope`; false if there was none.
    fn remove_suppression<'a>(
        &'a self,
        address: &'a str,
        scope: &'a SuppressionScope,
    ) -> BoxFuture<'a, Result<bool, Error>>;
    /// A page of the matching entries, newest first.
    fn list_suppressions<'a>(
        &'a self,
        filter: &'a SuppressionFilter,
        limit: u32,
        offset: u64,
    ) -> BoxFuture<'a, Result<Vec<Suppression>, Error>>;
    /// How many entries match.
    fn count_suppressions<'a>(
        &'a self,
        filter: &'a SuppressionFilter,
    ) -> BoxFuture<'a, Result<u64, Error>>;
    /// For each probe, the entry in force at `now` that stops its message, if any (in the
    /// probes' order): the workers' check before sending, one statement per batch.
    fn check_suppressions<'a>(
        &'a self,
        probes: &'a [SuppressionProbe],
        now: Now,
    ) -> BoxFuture<'a, Result<Vec<Option<Suppression>>, Error>>;
    /// The messages kept as suppressed, newest first.
    fn suppressed_messages(
        &self,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<SuppressedMessage>, Error>>;
    /// Deletes up to `limit` suppressed rows stopped more than `window` before `now`,
    /// counting the grouped ones in their groups' rows in the same transaction.
    fn prune_suppressed(
        &self,
        window: Duration,
        now: Now,
        limit: u32,
    ) -> BoxFuture<'_, Result<u64, Error>>;
    /// Forgets the used tokens of `kind` recorded more than `window` before `now` (a kind
    /// whose tokens carry their own time, checked elsewhere); returns how many.
    fn forget_tokens<'a>(
        &'a self,
        kind: &'a str,
        window: Duration,
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>>;
    /// Records that the token with digest `token` of `kind` was used at `now` and adds
    /// `entries`, in one transaction; false (and nothing written) when it had been used
    /// before.
    fn use_token<'a>(
        &'a self,
        kind: &'a str,
        token: &'a str,
        entries: &'a [NewSuppression],
        now: Now,
    ) -> BoxFuture<'a, Result<bool, Error>>;
    /// Records the uses of the tokens of `kind` in `uses` at `now` and adds the entries of
    /// those not used before, in one transaction (a token named twice counts once, the
    /// first time); for each use, whether its token was new. At most [`MAX_TOKEN_BATCH`]
    /// uses: more is a [`Error::Config`].
    fn use_tokens<'a>(
        &'a self,
        kind: &'a str,
        uses: &'a [TokenUse],
        now: Now,
    ) -> BoxFuture<'a, Result<Vec<bool>, Error>>;
}

/// Per-destination traffic shaping: the sites' limits and state, the slots of messages in
/// flight, the reply rules and their recent matches. Times are [`Now`]: the database's
/// clock for [`Now::Database`], computed in SQL where the database has one.
pub trait ShapingStore: Send + Sync + 'static {
    /// Writes the configured limits of `sites` in one transaction at `now`; a site
    /// configured before but not now loses its limits (what rules did to it stays). Also
    /// forgets the sites a rule created whose actions ended more than a day before `now`,
    /// and rule matches older than a year. `now` is the database's clock for
    /// [`Now::Database`], else the time given.
    fn configure_sites<'a>(
        &'a self,
        sites: &'a [(String, SiteLimit)],
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>>;
    /// Every site with a row, with its live slots at `now` (the database's clock for
    /// [`Now::Database`], else the time given), by name.
    fn sites(&self, now: Now) -> BoxFuture<'_, Result<Vec<SiteState>, Error>>;
    /// The sites the workers must ask at `now` (configured limits, or a rule's action in
    /// force), by name, without their slots: what each process reads every second. `now`
    /// is the database's clock for [`Now::Database`], else the time given; the read
    /// returns it ([`SitesInForce::read_at`]), even when no site is in force.
    fn sites_in_force(&self, now: Now) -> BoxFuture<'_, Result<SitesInForce, Error>>;
    /// Asks `site` for one more message at `now`, in one transaction on its locked row
    /// ([`SiteState::decide`]); a grant spends its token and, when the site caps messages
    /// in flight, takes a slot held by `holder` until it is released or `now + lease`.
    /// `now` is the database's clock for [`Now::Database`] (read once, with the row), else
    /// the time given; the answer returns it ([`SiteAnswer::at`]). `None` when the site has
    /// no row.
    fn take_site<'a>(
        &'a self,
        site: &'a str,
        holder: &'a str,
        now: Now,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<SiteAnswer>, Error>>;
    /// Frees the slot `holder` took at `site` (nothing if it took none), and the site's
    /// slots whose lease ran out before `now` (the database's clock for [`Now::Database`],
    /// else the time given); with `refund`, gives back the token the grant spent (the
    /// message did not reach its side effect).
    fn release_site<'a>(
        &'a self,
        site: &'a str,
        holder: &'a str,
        refund: bool,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>>;
    /// Extends the slot `holder` holds at `site` until `now + lease` (`now`: the
    /// database's clock for [`Now::Database`], else the time given), so a send that
    /// outlasts its first lease keeps its place under the cap.
    fn renew_site<'a>(
        &'a self,
        site: &'a str,
        holder: &'a str,
        now: Now,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), Error>>;
    /// Records a match of rule `rule` at `site` at `now` (the database's clock for
    /// [`Now::Database`], else the time given); returns the matches within `window` before
    /// `now`, this one included (older ones are forgotten).
    fn record_hit<'a>(
        &'a self,
        site: &'a str,
        rule: &'a str,
        now: Now,
        window: Duration,
    ) -> BoxFuture<'a, Result<u32, Error>>;
    /// Slows or suspends `site` from `now` as `action` says, saying why in `reason`
    /// (creating its row when it has none); a site slowed already keeps its tokens and has
    /// its slowdown extended. `now` is the database's clock for [`Now::Database`] (read once,
    /// with the row), else the time given. True when the site was neither slowed nor
    /// suspended before (the action is news). A bounce changes nothing.
    fn act_on_site<'a>(
        &'a self,
        site: &'a str,
        action: &'a RuleAction,
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<bool, Error>>;
    /// Ends the slowdown and suspension of `site`; false when it has no row.
    fn resume_site<'a>(&'a self, site: &'a str) -> BoxFuture<'a, Result<bool, Error>>;
    /// Every stored rule, by name; a row that does not read as a rule is an error naming it
    /// (its pattern is not compiled here: [`ShapingRule::check_fields`]).
    fn shaping_rules(&self) -> BoxFuture<'_, Result<Vec<Result<ShapingRule, String>>, Error>>;
    /// Adds or replaces `rules` (by name) in one transaction.
    fn put_rules<'a>(&'a self, rules: &'a [ShapingRule]) -> BoxFuture<'a, Result<(), Error>>;
    /// Removes the rule `name`; false when there was none.
    fn remove_rule<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, Error>>;
}

/// Counts per type and status, and the history of what the workers did.
pub trait StatsStore: Send + Sync + 'static {
    /// Message counts per type, at time `now` (which messages are due).
    fn status_counts(&self, now: Now) -> BoxFuture<'_, Result<Vec<TypeCounts>, Error>>;

    /// Adds `outcomes` to the history rows of the minute `now` falls in (and deletes the
    /// rows older than two days), in one transaction.
    fn add_history<'a>(
        &'a self,
        outcomes: &'a [TypeOutcomes],
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// The history rows from the minute `since` falls in on, oldest first.
    fn history(&self, since: SystemTime) -> BoxFuture<'_, Result<Vec<MinuteOutcomes>, Error>>;

    /// The newest heartbeat in the worker registry and the time of the read, `now`: how
    /// an operator learns that no worker runs. One statement.
    fn workers_seen(&self, now: Now) -> BoxFuture<'_, Result<WorkersSeen, Error>>;
}

/// What downstreams said about messages after taking them: receipts and later events
/// ([`crate::message_events`]).
pub trait EventStore: Send + Sync + 'static {
    /// Records `events` (each checked: keys of 1 to 255 bytes) at `now` in one statement;
    /// an event whose provider and event id are recorded already is skipped. How many were
    /// new.
    fn record_events<'a>(
        &'a self,
        events: &'a [NewMessageEvent],
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>>;

    /// The outbox message `provider` accepted as `external_id` (its receipt), if one was
    /// recorded and not pruned yet.
    fn message_of<'a>(
        &'a self,
        provider: &'a str,
        external_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, Error>>;

    /// The events of `message_id`, oldest first, at most `limit`.
    fn events_of<'a>(
        &'a self,
        message_id: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<MessageEvent>, Error>>;

    /// Deletes up to `limit` events recorded more than `window` before `now`.
    fn prune_events(
        &self,
        window: Duration,
        now: Now,
        limit: u32,
    ) -> BoxFuture<'_, Result<u64, Error>>;
}

/// The endpoints of message kinds ([`crate::endpoints`]): named downstreams with the kind's
/// settings, an enabled flag and a failure clock.
pub trait EndpointStore: Send + Sync + 'static {
    /// Stores endpoint `name` of `kind` with `settings` (JSON text) at `now`: a new one
    /// enabled, a known one keeps its state and takes the new settings. Checked first
    /// ([`check_endpoint`](crate::endpoints::check_endpoint)).
    fn put_endpoint<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        settings: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// Endpoint `name` of `kind`, if stored.
    fn endpoint<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Endpoint>, Error>>;

    /// Every endpoint of `kind`, by name.
    fn endpoints<'a>(&'a self, kind: &'a str) -> BoxFuture<'a, Result<Vec<Endpoint>, Error>>;

    /// Disables endpoint `name` of `kind` for `reason` at `now` (a disabled one keeps its
    /// first time and takes the new reason); the endpoint after the change, `None` if it is
    /// not stored.
    fn disable_endpoint<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<Endpoint>, Error>>;

    /// Enables endpoint `name` of `kind` at `now` and stops its failure clock; the endpoint
    /// after the change, `None` if it is not stored.
    fn enable_endpoint<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<Endpoint>, Error>>;

    /// Records whether a delivery to endpoint `name` of `kind` failed (`failing`: its
    /// failure clock starts at `now` unless it runs already) or went through (the clock
    /// stops). Meant for changes of health, not for every delivery.
    fn endpoint_health<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        failing: bool,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// Forgets endpoint `name` of `kind`; false if it was not stored.
    fn remove_endpoint<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, Error>>;
}

/// The inbox of consumers ([`crate::inbox`]): the ids of messages they processed, written
/// in their own transactions; here, what is read and pruned apart from those.
pub trait InboxStore: Send + Sync + 'static {
    /// Deletes up to `limit` inbox rows processed more than `window` before `now`.
    fn prune_processed(
        &self,
        window: Duration,
        now: Now,
        limit: u32,
    ) -> BoxFuture<'_, Result<u64, Error>>;

    /// Per consumer, by name: how many processed ids the inbox holds, the oldest and the
    /// newest.
    fn processed_counts(&self) -> BoxFuture<'_, Result<Vec<ProcessedCount>, Error>>;
}

/// What the inbox holds for one consumer ([`InboxStore::processed_counts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessedCount {
    /// The consumer's name.
    pub consumer: String,
    /// Processed ids kept.
    pub ids: u64,
    /// When the oldest kept one was processed.
    pub oldest: SystemTime,
    /// When the newest was processed.
    pub newest: SystemTime,
}

/// A database the outbox runs on: every store of the port, its schema and its wake-ups.
pub trait Backend:
    QueueStore
    + RateBucketStore
    + PauseStore
    + DeadLetterStore
    + LiveMessageStore
    + GroupStore
    + StatsStore
    + BreakerStore
    + SuppressionStore
    + ShapingStore
    + EventStore
    + EndpointStore
    + InboxStore
    + Clone
    + Send
    + Sync
    + 'static
{
    /// Short name for logs ("sqlite", "postgres", "mysql").
    fn name(&self) -> &'static str;

    /// Creates or upgrades the tables the outbox needs; safe to run at every start and
    /// from several processes.
    fn migrate(&self) -> BoxFuture<'_, Result<(), Error>>;

    /// Where idle workers of this database wait to hear of new messages. A backend
    /// without a commit signal returns a registry nobody notifies (the process's due probe
    /// then finds new messages).
    fn wakeups(&self) -> std::sync::Arc<Wakeups>;

    /// The most a type's default batch grows to while its handlers outpace the claims
    /// (see `QueueOptions::batch_size`): larger claims and settlements share each
    /// transaction's fixed cost among more messages. The default batch itself is 100; a
    /// value at or below it means the batch never grows.
    fn max_default_batch(&self) -> usize {
        500
    }
}
