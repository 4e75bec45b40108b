//! What a handler knows about the message it delivers.

use std::{fmt, sync::Arc, time::SystemTime};

use futures::future::BoxFuture;

use crate::{
    enqueue::MessageId, error::Error, message_events::NewMessageEvent, suppression::NewSuppression,
};

/// Writes entries to the suppression list of the outbox a message came from.
pub(crate) type SuppressFn =
    Arc<dyn Fn(NewSuppression) -> BoxFuture<'static, Result<(), Error>> + Send + Sync>;

/// Where [`MessageContext::suppress`] writes: the worker's database, or nowhere (a
/// context made by [`testing::perform`](crate::testing::perform)).
#[derive(Clone, Default)]
pub(crate) struct SuppressionList(pub(crate) Option<SuppressFn>);

impl SuppressionList {
    /// Adds `entry` to the list; an error when the list cannot be written or there is none
    /// (a context made by `testing::perform`).
    pub(crate) async fn write(&self, entry: NewSuppression) -> Result<(), Error> {
        match &self.0 {
            Some(write) => write(entry).await,
            None => Err(Error::Config(format!(
                "cannot suppress {}: this message context has no suppression list (it was \
                 made by testing::perform, not by a worker)",
                entry.address
            ))),
        }
    }
}

impl fmt::Debug for SuppressionList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "SuppressionList(database)"
        } else {
            "SuppressionList(none)"
        })
    }
}

/// Writes message events to the outbox a message came from.
pub(crate) type RecordFn =
    Arc<dyn Fn(NewMessageEvent) -> BoxFuture<'static, Result<(), Error>> + Send + Sync>;

/// Where [`MessageContext::record_receipt`] writes: the worker's database, or nowhere (a
/// context made by [`testing::perform`](crate::testing::perform)).
#[derive(Clone, Default)]
pub(crate) struct EventLog(pub(crate) Option<RecordFn>);

impl EventLog {
    /// Records `event`; an error when it cannot be written or there is no database.
    pub(crate) async fn write(&self, event: NewMessageEvent) -> Result<(), Error> {
        match &self.0 {
            Some(write) => write(event).await,
            None => Err(Error::Config(format!(
                "cannot record {} of message {}: this message context has no database (it \
                 was made by testing::perform, not by a worker)",
                event.kind, event.message_id
            ))),
        }
    }
}

impl fmt::Debug for EventLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "EventLog(database)"
        } else {
            "EventLog(none)"
        })
    }
}

/// Facts about the message being delivered, and the application state.
#[derive(Debug)]
pub struct MessageContext<S = ()> {
    pub(crate) id: MessageId,
    pub(crate) type_tag: &'static str,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    pub(crate) group: Option<String>,
    pub(crate) state: Arc<S>,
    pub(crate) suppressions: SuppressionList,
    pub(crate) events: EventLog,
}

impl<S> Clone for MessageContext<S> {
    fn clone(&self) -> Self {
        Self {
            id: self.id.clone(),
            type_tag: self.type_tag,
            attempt: self.attempt,
            max_attempts: self.max_attempts,
            group: self.group.clone(),
            state: Arc::clone(&self.state),
            suppressions: self.suppressions.clone(),
            events: self.events.clone(),
        }
    }
}

impl<S> MessageContext<S> {
    /// The message's stable id (the same on every attempt).
    pub fn id(&self) -> &MessageId {
        &self.id
    }

    /// The message's type tag.
    pub fn type_tag(&self) -> &'static str {
        self.type_tag
    }

    /// Which attempt this is, starting at 1.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// How many attempts the message gets in all.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// True when a failure of this attempt gives the message up.
    pub fn is_last_attempt(&self) -> bool {
        self.attempt >= self.max_attempts
    }

    /// The group the message was enqueued into, if any.
    pub fn group(&self) -> Option<&str> {
        self.group.as_deref()
    }

    /// When the message was enqueued (read from its id; `None` for foreign ids).
    pub fn enqueued_at(&self) -> Option<SystemTime> {
        self.id.enqueued_at()
    }

    /// The application state given to [`Outbox::with_state`](crate::Outbox::with_state).
    pub fn state(&self) -> &S {
        &self.state
    }

    /// A shared handle on the application state.
    pub fn state_arc(&self) -> Arc<S> {
        Arc::clone(&self.state)
    }

    /// Puts `entry` on the suppression list of the outbox this message came from (its
    /// database), at once: for a handler that learns while delivering that an address
    /// must not be sent to again — a receiving server saying the mailbox does not exist,
    /// a provider's API saying the address is invalid. The message's own outcome is what
    /// the handler returns, as always.
    ///
    /// Fails when the list cannot be written (the database error), and for a context made
    /// by [`testing::perform`](crate::testing::perform), which has no database.
    pub async fn suppress(&self, entry: NewSuppression) -> Result<(), Error> {
        self.suppressions.write(entry).await
    }

    /// Records that `provider` (the downstream's name, e.g. `postmark`) accepted this
    /// message as `external_id` (its id of the message): the message's page shows it, and
    /// an event the provider reports later under that id (a delivery, a bounce) is tied
    /// back to this message ([`crate::message_events`]). Call it when the downstream has
    /// accepted the message; a retried message records each attempt's receipt.
    ///
    /// The receipt is handed to the running outbox, which writes the receipts of many
    /// messages in one statement shortly after (and the rest when it stops), so recording
    /// costs a delivery nothing measurable; a process killed in between loses those
    /// receipts, never a message. Fails for an empty or too long id (1 to 255 bytes) and
    /// for a context made by [`testing::perform`](crate::testing::perform); the message
    /// was delivered all the same, so a handler logs the failure and returns `Ok`.
    pub async fn record_receipt(&self, provider: &str, external_id: &str) -> Result<(), Error> {
        let event =
            NewMessageEvent::receipt(self.id.as_str(), provider, external_id, SystemTime::now());
        event.check().map_err(Error::Config)?;
        self.events.write(event).await
    }
}
