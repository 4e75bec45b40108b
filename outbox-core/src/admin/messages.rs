//! The live messages: queued, scheduled, running and retrying rows of the queue, to list,
//! count, show, retry now or cancel.

use std::sync::Arc;

use super::{LiveFilter, LiveMessage, LiveMessageDetail};
use crate::{
    clock::Clock,
    enqueue::MessageId,
    error::Error,
    message_events::{MessageEvent, NewMessageEvent},
    store::{Backend, HeldKey, ReplayFilter},
};

/// The most events of one message [`LiveMessages::events`] returns.
pub const MAX_MESSAGE_EVENTS: u32 = 200;

/// The most keys [`LiveMessages::held_keys`] returns.
pub const MAX_HELD_KEYS: u32 = 1_000;

/// How many messages one transaction of a retry-now or a cancel changes at most.
pub const LIVE_BATCH: u32 = 1_000;

/// One page of live messages and where the next one starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePage {
    /// The messages, by id.
    pub messages: Vec<LiveMessage>,
    /// The cursor of the next page (pass it as `after`), or `None` if this page was the
    /// last.
    pub next: Option<MessageId>,
}

/// List, count, show, retry now and cancel the messages in the queue. Safe while workers
/// run: a running message is never changed (its worker finishes it), and each change is
/// written in transactions of at most [`LIVE_BATCH`] messages.
///
/// Lists and counts scan the queue (no index serves every filter, and each index would be
/// written by every claim and settlement): cheap for thousands of messages, a full table
/// read for millions.
#[derive(Clone)]
pub struct LiveMessages<B> {
    backend: B,
    clock: Arc<dyn Clock>,
}

impl<B: Backend> LiveMessages<B> {
    pub(crate) fn new(backend: B, clock: Arc<dyn Clock>) -> Self {
        Self { backend, clock }
    }

    /// A page of up to `page_size` (1 to 1,000) matching messages, by id, starting after
    /// the message `after` (from the start if `None`): pass [`LivePage::next`] to read on.
    /// Paging is by key, not by offset: messages deleted between two pages (delivered,
    /// cancelled) never make a page repeat or skip a message that is still there.
    pub async fn list(
        &self,
        filter: &LiveFilter,
        after: Option<&MessageId>,
        page_size: u32,
    ) -> Result<LivePage, Error> {
        let size = page_size.clamp(1, 1000);
        let messages = self
            .backend
            .list_live(
                filter,
                after.map(MessageId::as_str),
                size,
                self.clock.database_now(),
            )
            .await?;
        let next = if messages.len() == size as usize {
            messages.last().map(|m| m.id.clone())
        } else {
            None
        };
        Ok(LivePage { messages, next })
    }

    /// How many messages match.
    pub async fn count(&self, filter: &LiveFilter) -> Result<u64, Error> {
        self.backend
            .count_live(filter, self.clock.database_now())
            .await
    }

    /// One message with its payload; `None` if it is not in the queue (delivered,
    /// cancelled, dead, or never there).
    pub async fn show(&self, id: &MessageId) -> Result<Option<LiveMessageDetail>, Error> {
        self.backend
            .show_live(id.as_str(), self.clock.database_now())
            .await
    }

    /// Makes one queued message due now, keeping its attempts; false if it is not queued
    /// with a later due time (running, already due, or gone). An idle worker of its type
    /// starts it within about a second (at its process's next due probe).
    pub async fn retry_now(&self, id: &MessageId) -> Result<bool, Error> {
        Ok(self.retry_now_where(&LiveFilter::id(id.as_str())).await? == 1)
    }

    /// Makes every matching queued message with a later due time due now, keeping its
    /// attempts (running messages are left alone); returns how many.
    pub async fn retry_now_where(&self, filter: &LiveFilter) -> Result<u64, Error> {
        self.backend
            .retry_live_now(filter, self.clock.database_now(), LIVE_BATCH)
            .await
    }

    /// Deletes one queued message; false if it is running (it finishes) or gone.
    pub async fn cancel(&self, id: &MessageId) -> Result<bool, Error> {
        Ok(self.cancel_where(&LiveFilter::id(id.as_str())).await? == 1)
    }

    /// Deletes every matching queued message (running messages finish); returns how
    /// many. It runs batch after batch until one finds nothing, so matching messages
    /// enqueued while it runs are deleted too.
    pub async fn cancel_where(&self, filter: &LiveFilter) -> Result<u64, Error> {
        self.backend
            .cancel_live(filter, self.clock.database_now(), LIVE_BATCH)
            .await
    }

    /// What downstreams said about a message (live, delivered or dead): its receipts and
    /// the events reported later, oldest first, at most [`MAX_MESSAGE_EVENTS`]
    /// ([`crate::message_events`]).
    pub async fn events(&self, id: &MessageId) -> Result<Vec<MessageEvent>, Error> {
        self.backend
            .events_of(id.as_str(), MAX_MESSAGE_EVENTS)
            .await
    }

    /// The message `provider` accepted as `external_id` (the id in its receipt), if the
    /// receipt is recorded and not pruned yet.
    pub async fn by_receipt(
        &self,
        provider: &str,
        external_id: &str,
    ) -> Result<Option<MessageId>, Error> {
        let id = self.backend.message_of(provider, external_id).await?;
        Ok(id.map(MessageId::from_string))
    }

    /// The order keys of `type_tag` whose later messages wait behind a dead letter (until
    /// it is requeued or purged) or a failing message (until its retry succeeds), by key,
    /// at most [`MAX_HELD_KEYS`]; each with the message that holds it, its last error and
    /// how many wait. To skip a dead one, purge it from the dead letters; to give up on a
    /// failing one, cancel it.
    pub async fn held_keys(&self, type_tag: &str) -> Result<Vec<HeldKey>, Error> {
        self.backend.held_keys(type_tag, MAX_HELD_KEYS).await
    }

    /// Sends the matching delivered messages again, in place (same id and payload, due
    /// now, attempts reset); only messages kept for the retention window
    /// ([`Retention::keep_for`](crate::Retention::keep_for)) can be, deleted ones are gone.
    /// Returns how many. A replayed message of a group counts as delivered again.
    pub async fn replay(&self, filter: &ReplayFilter) -> Result<u64, Error> {
        self.backend
            .replay_done(filter, self.clock.database_now())
            .await
    }

    /// Records `events` (a repeat of one recorded before is skipped); how many were new.
    /// For events read from a downstream (a provider's webhook) once their message is
    /// known ([`by_receipt`](Self::by_receipt)).
    pub async fn record_events(&self, events: &[NewMessageEvent]) -> Result<u64, Error> {
        self.backend
            .record_events(events, self.clock.database_now())
            .await
    }
}
