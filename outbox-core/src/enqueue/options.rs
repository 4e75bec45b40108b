//! Per-call options for enqueue: delay, priority, attempts, payload limit and the
//! idempotency key.

use std::time::{Duration, SystemTime};

/// Options of one enqueue call; anything left unset comes from the type's
/// [`MessageDefaults`](crate::MessageDefaults) and its idempotency key.
///
/// ```
/// # use std::time::Duration;
/// # use outbox_core::EnqueueOptions;
/// let opts = EnqueueOptions::new().after(Duration::from_secs(600)).priority(5);
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Default)]
pub struct EnqueueOptions {
    pub(crate) when: Option<When>,
    pub(crate) priority: Option<u16>,
    pub(crate) max_attempts: Option<u32>,
    pub(crate) max_payload: Option<usize>,
    pub(crate) key: KeyChoice,
    pub(crate) group: Option<String>,
    pub(crate) order_key: Option<String>,
}

/// When a delayed message becomes due.
#[derive(Debug, Clone, Copy)]
pub(crate) enum When {
    At(SystemTime),
    After(Duration),
}

/// Which idempotency key the message gets.
#[derive(Debug, Clone, Default)]
pub(crate) enum KeyChoice {
    #[default]
    FromMessage,
    Custom(String),
    Without,
}

impl EnqueueOptions {
    /// Options that change nothing: the type's defaults apply.
    pub fn new() -> Self {
        Self::default()
    }

    /// Deliver no earlier than `delay` from now.
    ///
    /// Due times are stored in milliseconds, rounded up, so a message is never delivered
    /// early; an idle worker finds it within its poll interval of becoming due.
    pub fn after(mut self, delay: Duration) -> Self {
        self.when = Some(When::After(delay));
        self
    }

    /// Deliver no earlier than `at` (a time in the past means "now").
    pub fn at(mut self, at: SystemTime) -> Self {
        self.when = Some(When::At(at));
        self
    }

    /// Among due messages of one type, higher priority runs first.
    pub fn priority(mut self, priority: u16) -> Self {
        self.priority = Some(priority);
        self
    }

    /// How many attempts this message gets (1 to 1000).
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }

    /// The largest serialized payload accepted for this message, in bytes, instead of the
    /// type's [`max_payload`](crate::MessageDefaults::max_payload) (for a type you cannot
    /// annotate, such as the email message).
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = Some(bytes);
        self
    }

    /// Use this idempotency key instead of the one the type derives from its fields.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.key = KeyChoice::Custom(key.into());
        self
    }

    /// Put the message in group `name` (a campaign, a mailing): a group is paused,
    /// resumed, counted and cancelled as one, across processes, with `Admin::groups`. A
    /// name is 1 to 200 bytes without control characters.
    pub fn group(mut self, name: impl Into<String>) -> Self {
        self.group = Some(name.into());
        self
    }

    /// Orders the messages of this call under `key` (instead of the type's
    /// [`order_key`](crate::OutboxMessage::order_key)): messages of the type with the same
    /// key start one at a time, in enqueue order, in every process; a failing one holds the
    /// later ones. 1 to 255 bytes without control characters. The type must be declared
    /// ordered ([`OutboxMessage::ORDERED`](crate::OutboxMessage::ORDERED),
    /// `#[outbox(ordered)]`), or the enqueue is refused.
    pub fn order_key(mut self, key: impl Into<String>) -> Self {
        self.order_key = Some(key.into());
        self
    }

    /// Enqueue without an idempotency key, even if the type declares one.
    pub fn without_idempotency_key(mut self) -> Self {
        self.key = KeyChoice::Without;
        self
    }
}
