//! What a handler knows about the message it delivers.

use std::{sync::Arc, time::SystemTime};

use crate::enqueue::MessageId;

/// Facts about the message being delivered, and the application state.
#[derive(Debug)]
pub struct MessageContext<S = ()> {
    pub(crate) id: MessageId,
    pub(crate) type_tag: &'static str,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    pub(crate) state: Arc<S>,
}

impl<S> Clone for MessageContext<S> {
    fn clone(&self) -> Self {
        Self {
            id: self.id.clone(),
            type_tag: self.type_tag,
            attempt: self.attempt,
            max_attempts: self.max_attempts,
            state: Arc::clone(&self.state),
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
}
