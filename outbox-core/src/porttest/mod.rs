//! A conformance suite for the storage port itself (feature `porttest`): every case drives
//! the verbs of [`crate::store`] directly — claim, settle, heartbeat, rescue, prune, the
//! token buckets and the dead letters — and pins what they must do, so every backend (the
//! built-in ones, and a future backend crate) runs the same checks.
//!
//! The cases are split by area of the port: [`claim`](mod@claim) (order, batching, due times, pauses,
//! concurrent claimers, counters), [`settle`] (each settlement kind and its fencing),
//! [`lease`] (heartbeats, rescue of expired leases, the worker registry), [`prune`]
//! (retention of done rows), [`events`] (receipts and events of messages), [`endpoints`]
//! (the endpoints of message kinds), [`bucket`] (token bucket arithmetic) and [`dead_letters`]
//! (filters, paging, purge and requeue), [`live`] (live messages: filters, keyset paging,
//! retry now, cancel), [`groups`] (progress, pause, cancel, completion hooks), [`breakers`]
//! (open, probe and close once across callers), and [`housekeeping`] (drains, unregistered
//! types, the database's own clock).
//!
//! # Time
//!
//! Every case pins the time with [`Now::At`], starting at [`t0`] (2100-01-01, so that due
//! times written by an enqueue are never clamped to the real clock), and moves it by whole
//! milliseconds (bucket cases by binary fractions of a second, so the arithmetic is exact).
//! Nothing sleeps; a lease expires because the next call runs at a later pinned time.
//!
//! # Running it for a backend
//!
//! A case is `pub async fn case<H: PortHarness>(h: &H)`: it takes a [`PortHarness`] over a
//! freshly migrated, empty database of its own and panics when the backend does not
//! conform. The harness gives the backend and the two things the port does not do: write
//! messages (an enqueue goes through the application's connection, not the port) and list
//! the worker registry. [`port_suite!`](crate::port_suite) writes one `#[tokio::test]` per
//! case (the calling crate needs `tokio` with the `macros` and `rt-multi-thread` features):
//!
//! ```ignore
//! use futures::future::BoxFuture;
//! use outbox_core::{porttest::PortHarness, Enqueued, Error, InsertMessages, NewMessage};
//!
//! struct MyHarness { pool: MyPool, backend: MyBackend /* , the database to drop */ }
//!
//! impl PortHarness for MyHarness {
//!     type Backend = MyBackend;
//!     fn backend(&self) -> &MyBackend { &self.backend }
//!     fn insert<'a>(&'a self, rows: &'a [NewMessage]) -> BoxFuture<'a, Result<Vec<Enqueued>, Error>> {
//!         Box::pin(async move { Ok(self.pool.acquire().await?.insert_messages(rows).await?) })
//!     }
//!     fn workers(&self) -> BoxFuture<'_, Result<Vec<String>, Error>> {
//!         Box::pin(async move { /* SELECT name FROM outbox_workers ORDER BY name */ })
//!     }
//! }
//!
//! /// A new database, migrated with `Backend::migrate`, nothing in it.
//! async fn fresh() -> MyHarness { /* … */ }
//!
//! outbox_core::port_suite!(fresh);
//! ```

pub mod breakers;
pub mod bucket;
pub mod claim;
pub mod dead_letters;
pub mod endpoints;
pub mod events;
pub mod groups;
pub mod housekeeping;
pub mod lease;
pub mod live;
pub mod prune;
pub mod settle;
pub mod shaping;
pub mod suppressions;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;

use crate::{
    clock::{Due, Now},
    enqueue::Enqueued,
    enqueue::MessageId,
    enqueue::NewMessage,
    error::Error,
    store::{Backend, ClaimRequest, Claimed, Settle, Settlement, TypeCounts},
};

/// What a case needs besides the port: the backend over a freshly migrated, empty
/// database of its own, a way to write messages, and a view of the worker registry.
pub trait PortHarness: Send + Sync {
    /// The backend under test.
    type Backend: Backend;

    /// The backend over this harness's database.
    fn backend(&self) -> &Self::Backend;

    /// Writes `rows` as the backend's enqueue does (through a connection of its database,
    /// e.g. [`crate::InsertMessages::insert_messages`]), committed when it returns; one
    /// [`Enqueued`] per row, in order.
    fn insert<'a>(&'a self, rows: &'a [NewMessage]) -> BoxFuture<'a, Result<Vec<Enqueued>, Error>>;

    /// The names in the worker registry (`outbox_workers`), sorted: what
    /// [`QueueStore::heartbeat`](crate::store::QueueStore::heartbeat) registers and
    /// [`QueueStore::deregister`](crate::store::QueueStore::deregister) removes.
    fn workers(&self) -> BoxFuture<'_, Result<Vec<String>, Error>>;
}

/// Writes one `#[tokio::test]` per case of the suite, each on a fresh harness from
/// `$fresh` (a path to an `async fn() -> impl PortHarness`). Use it in a module of the
/// backend's test crate; see [`porttest`](crate::porttest).
#[macro_export]
macro_rules! port_suite {
    ($fresh:path) => {
        $crate::port_suite!(@cases $fresh;
            claim::claim_order_is_priority_then_due_then_id,
            claim::claim_respects_the_limit,
            claim::claim_takes_only_due_messages_of_its_type,
            claim::paused_type_is_not_claimed,
            claim::concurrent_claimers_never_share_a_message,
            claim::claim_counts_attempts_and_claims,
            claim::a_key_holds_its_later_messages_until_the_first_is_finished,
            settle::done_without_keep_deletes,
            settle::done_with_keep_keeps_a_done_row,
            settle::retry_after_a_delay,
            settle::retry_at_a_time,
            settle::given_back_attempts_are_not_logged,
            settle::release_keeps_due_time_and_place,
            settle::bury_moves_to_the_dead_letters,
            settle::stale_claims_are_fenced,
            settle::applied_before_finds_what_a_lost_commit_applied,
            settle::mixed_batch_counts_exactly,
            settle::a_partly_fenced_batch_names_the_fenced,
            settle::a_fenced_bury_writes_no_dead_letter,
            settle::attempt_log_keeps_the_last_entries,
            lease::lease_expires_after_its_duration,
            lease::heartbeat_extends_the_lease,
            lease::heartbeat_extends_only_the_owners_claims,
            lease::heartbeat_extends_only_the_named_claim,
            lease::heartbeat_registers_and_deregister_removes,
            lease::one_heartbeat_serves_every_worker,
            lease::due_types_names_the_types_with_due_messages,
            prune::prune_deletes_only_done_rows_older_than_the_window,
            prune::prune_limit_bounds_one_call,
            prune::kept_done_rows_are_replayed_by_filter,
            events::events_are_recorded_once_and_found_by_message_and_by_external_id,
            events::old_events_are_pruned,
            endpoints::endpoints_are_stored_updated_listed_and_removed,
            endpoints::endpoints_are_disabled_enabled_and_keep_a_failure_clock,
            bucket::new_bucket_is_full_then_waits,
            bucket::tokens_refill_with_time,
            bucket::tokens_cap_at_the_burst,
            bucket::rate_change_keeps_earned_tokens_capped,
            bucket::unknown_bucket_and_listing,
            dead_letters::list_and_count_by_filters,
            dead_letters::purge_by_filters,
            dead_letters::requeue_by_filters,
            dead_letters::requeue_skips_a_taken_key,
            live::live_list_and_count_by_filters,
            live::keyset_paging_survives_concurrent_deletes,
            live::retry_now_moves_due_keeps_attempts_skips_running,
            live::cancel_removes_queued_matching_in_batches,
            live::live_messages_are_found_by_recipient,
            groups::group_progress_counts_every_state,
            groups::a_paused_group_is_not_claimed,
            groups::cancel_removes_a_groups_queued_messages,
            groups::delivered_counts_only_what_applied,
            groups::the_dead_letters_keep_the_group,
            groups::the_completion_hook_fires_once,
            groups::an_idle_or_finished_group_has_no_rate,
            breakers::a_breaker_opens_once_and_closes_once,
            breakers::one_probe_at_a_time_on_its_backoff,
            breakers::breakers_run_at_the_database_clock,
            breakers::steering_reads_pauses_groups_and_open_breakers,
            housekeeping::count_unfinished_sees_due_and_held_messages,
            housekeeping::unregistered_types_are_counted_and_buried,
            housekeeping::database_clock_runs_the_verbs,
            housekeeping::history_adds_per_minute_and_prunes,
            housekeeping::workers_seen_reads_the_newest_heartbeat,
            suppressions::entries_are_added_listed_and_removed,
            suppressions::an_enqueue_keeps_stopped_messages_as_suppressed,
            suppressions::an_expired_entry_stops_nothing_at_enqueue,
            suppressions::the_check_finds_the_entry_in_force,
            suppressions::a_suppressed_settlement_is_kept_counted_and_pruned,
            suppressions::a_token_is_used_once,
            suppressions::a_batch_of_tokens_is_used_once_each,
            suppressions::unicode_spellings_of_an_address_name_one_entry,
            shaping::sites_are_configured_and_listed,
            shaping::a_site_spends_tokens_and_caps_messages_in_flight,
            shaping::rule_matches_are_counted_in_their_window,
            shaping::slowing_and_suspending_change_the_grants,
            shaping::rules_are_stored_replaced_and_removed,
            shaping::in_force_refund_renew_and_prune,
            shaping::sites_run_at_the_database_clock,
        );
    };
    (@cases $fresh:path; $($area:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness = $fresh().await;
                $crate::porttest::$area::$case(&harness).await;
            }
        )*
    };
}

/// The lease every case claims with, unless it says otherwise.
pub const LEASE: Duration = Duration::from_secs(30);

/// The time every case starts at: 2100-01-01T00:00:00Z (later than any real clock, so a
/// message written due at a pinned time keeps that due time).
pub fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(4_102_444_800)
}

/// [`t0`] plus `ms` milliseconds.
pub fn at(ms: u64) -> SystemTime {
    t0() + Duration::from_millis(ms)
}

/// A message of `type_tag` with payload `{"n":n}`, due at [`t0`], priority 0, 3 attempts,
/// no idempotency key, and a fresh id (greater than every id made before it).
pub fn message(type_tag: &'static str, n: u32) -> NewMessage {
    NewMessage {
        id: MessageId::generate(),
        queue: type_tag,
        payload: format!("{{\"n\":{n}}}").into_bytes(),
        due: Due::At(t0()),
        priority: 0,
        max_attempts: 3,
        idempotency_key: None,
        group: None,
        suppression: None,
        order_key: None,
    }
}

/// Writes `rows`, asserting each was new; their ids in order.
pub async fn insert<H: PortHarness>(h: &H, rows: &[NewMessage]) -> Vec<MessageId> {
    let written = h.insert(rows).await.expect("insert messages");
    assert_eq!(written.len(), rows.len(), "one result per row");
    rows.iter()
        .zip(written)
        .map(|(row, done)| {
            assert_eq!(done, Enqueued::New(row.id.clone()), "a new row");
            row.id.clone()
        })
        .collect()
}

/// Claims up to `limit` messages of `type_tag` for `owner` at `now`, leased for [`LEASE`].
pub async fn claim<H: PortHarness>(
    h: &H,
    type_tag: &str,
    owner: &str,
    limit: u32,
    now: SystemTime,
) -> Vec<Claimed> {
    let request = ClaimRequest {
        type_tag,
        owner,
        limit,
        now: Now::At(now),
        lease: LEASE,
        ordered: false,
    };
    crate::store::QueueStore::claim(h.backend(), &request)
        .await
        .expect("claim")
}

/// [`claim()`] for a type whose messages carry ordering keys (the ordered statement).
pub async fn claim_ordered<H: PortHarness>(
    h: &H,
    type_tag: &str,
    owner: &str,
    limit: u32,
    now: SystemTime,
) -> Vec<Claimed> {
    let request = ClaimRequest {
        type_tag,
        owner,
        limit,
        now: Now::At(now),
        lease: LEASE,
        ordered: true,
    };
    crate::store::QueueStore::claim(h.backend(), &request)
        .await
        .expect("claim")
}

/// The ids of claimed messages, in claim order.
pub fn ids(claimed: &[Claimed]) -> Vec<MessageId> {
    claimed.iter().map(|c| c.id.clone()).collect()
}

/// A settlement of `claimed` (its attempt and claim) as `settle`.
pub fn settlement(claimed: &Claimed, settle: Settle) -> Settlement {
    Settlement {
        id: claimed.id.clone(),
        attempt: claimed.attempt,
        claim: claimed.claim,
        settle,
        grouped: claimed.group.is_some(),
    }
}

/// The status counts of `type_tag` at `now` (all zero if the type has no rows).
pub async fn counts<H: PortHarness>(h: &H, type_tag: &str, now: SystemTime) -> TypeCounts {
    let all = crate::store::StatsStore::status_counts(h.backend(), Now::At(now))
        .await
        .expect("status counts");
    all.into_iter()
        .find(|c| c.type_tag == type_tag)
        .unwrap_or_else(|| TypeCounts {
            type_tag: type_tag.to_owned(),
            ..TypeCounts::default()
        })
}
