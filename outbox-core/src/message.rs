//! The message contract: what a type must say about itself to travel through the outbox.

use std::time::Duration;

use serde::{de::DeserializeOwned, Serialize};

/// Largest idempotency key accepted at enqueue, in bytes (the same on every backend).
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

/// The default payload limit of a message type: 1 MiB of JSON.
///
/// Queue rows are read whole by every claim, and MariaDB refuses a statement larger than
/// its `max_allowed_packet` (16 MiB by default on the server, and the whole batch insert
/// counts), so large content belongs in a table or an object store, with its reference
/// in the message.
pub const DEFAULT_MAX_PAYLOAD: usize = 1024 * 1024;

/// Largest type tag accepted, in bytes (the tag is the queue name on every backend).
pub const MAX_TYPE_TAG_LEN: usize = 100;

/// A typed message that can be enqueued inside the caller's transaction and delivered
/// later by a worker.
///
/// Implement it with `#[derive(OutboxMessage)]`; the derive fills in a stable type tag,
/// the per-type defaults and the optional idempotency key from `#[outbox(...)]` attributes.
pub trait OutboxMessage: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The stable type tag stored with every queued row: the queue name of this type.
    ///
    /// It must never depend on the Rust module path, so that moving or renaming the type
    /// in code cannot orphan rows that are already queued.
    const TYPE: &'static str;

    /// Defaults applied to every message of this type unless the enqueue call overrides them.
    const DEFAULTS: MessageDefaults = MessageDefaults::DEFAULT;

    /// The idempotency key of this message, if the type declares one.
    ///
    /// Two messages of the same type with the same key are the same message: the second
    /// enqueue is reported as a duplicate and writes nothing, for as long as the first row
    /// exists.
    fn idempotency_key(&self) -> Option<String> {
        None
    }

    /// Whether messages of this type may name a [`recipient`](Self::recipient): the
    /// workers then check the suppression list before starting them (one statement per
    /// claimed batch). Set it to `true` when you implement `recipient`; an enqueue of a
    /// message that names one while this is `false` is refused.
    const HAS_RECIPIENT: bool = false;

    /// The one person this message goes to, if it goes to one: the suppression list is
    /// checked for it when it is enqueued and again before a worker starts it, and a
    /// suppressed message is kept as `suppressed` instead of being sent. The default is
    /// `None` (no check); implement it together with
    /// [`HAS_RECIPIENT`](Self::HAS_RECIPIENT).
    fn recipient(&self) -> Option<Recipient> {
        None
    }

    /// Whether messages of this type name a [`destination`](Self::destination): traffic
    /// shaping then applies to them (one decode per message when shaping is configured).
    /// Set it to `true` when you implement `destination`.
    const HAS_DESTINATION: bool = false;

    /// Where this message goes, as a neutral key that traffic shaping groups by: its
    /// [`Shaping`](crate::Shaping) site is found from it (a route, the kind's resolver, or the
    /// key itself). An email's destination is its recipient's domain, a webhook's its
    /// endpoint's host. The default is `None` (not shaped); implement it together with
    /// [`HAS_DESTINATION`](Self::HAS_DESTINATION) (an enqueue that names one without it is
    /// refused). Keys are compared trimmed and lowercased; a key that is empty, has spaces
    /// or is longer than 200 bytes is refused at enqueue. A panicking `destination` counts
    /// as none.
    fn destination(&self) -> Option<String> {
        None
    }

    /// Whether messages of this type may carry an [ordering key](Self::order_key): the
    /// workers then claim with the ordered statement (a message starts only when no earlier
    /// one of its key is unfinished or dead). Set it to `true` (with the derive,
    /// `#[outbox(ordered)]`) when you implement `order_key` or enqueue with
    /// [`EnqueueOptions::order_key`](crate::EnqueueOptions::order_key); an enqueue with a
    /// key while this is `false` is refused. Types that never use keys claim with the plain
    /// statement and pay nothing for ordering.
    const ORDERED: bool = false;

    /// The message's ordering key, if it has one (an aggregate's id, an account): messages
    /// of this type with the same key start one at a time, in enqueue order, across every
    /// process, and a message that fails holds the later ones of its key until it is
    /// delivered, or — given up — until its dead letter is requeued or purged. Keys do not
    /// hold each other. [`EnqueueOptions::order_key`](crate::EnqueueOptions::order_key)
    /// sets one for an enqueue call. 1 to 255 bytes, no control characters. The default is
    /// `None` (no order). Enqueue order is the order of the messages' ids: the order in
    /// which they were made, which is the commit order when the transactions that enqueue
    /// one key's messages follow each other (as they do when they update the aggregate's
    /// row); a replayed message keeps its place.
    fn order_key(&self) -> Option<String> {
        None
    }

    /// Checks the message before it is written; an error refuses the enqueue with the
    /// field and the reason, and nothing is written. The default accepts everything.
    fn validate(&self) -> Result<(), InvalidMessage> {
        Ok(())
    }
}

/// Why [`OutboxMessage::validate`] refused a message.
#[derive(Clone, PartialEq, Eq)]
pub struct InvalidMessage {
    /// The offending field, as the application names it (e.g. `to[1]`).
    pub field: String,
    /// What is wrong and what to do.
    pub reason: String,
}

impl InvalidMessage {
    /// `field` is invalid because of `reason`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for InvalidMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "field `{}`: {}", self.field, self.reason)
    }
}

impl std::error::Error for InvalidMessage {}

/// Per-type defaults for delivery: attempts, priority, the handler's time limit and the
/// payload limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageDefaults {
    /// How many times a message is tried before it is given up (at least 1).
    pub max_attempts: u32,
    /// Scheduling priority: among due messages of one type, higher runs first.
    pub priority: u16,
    /// How long one handler call may run before the attempt counts as failed.
    pub timeout: Option<Duration>,
    /// The largest payload accepted at enqueue, in bytes of JSON; a larger message is
    /// refused with [`EnqueueError::PayloadTooLarge`](crate::EnqueueError::PayloadTooLarge).
    pub max_payload: usize,
}

impl MessageDefaults {
    /// The defaults used when a type declares none: 10 attempts, priority 0, 5 minutes,
    /// payloads up to [`DEFAULT_MAX_PAYLOAD`] (1 MiB).
    pub const DEFAULT: Self = Self {
        max_attempts: 10,
        priority: 0,
        timeout: Some(Duration::from_secs(300)),
        max_payload: DEFAULT_MAX_PAYLOAD,
    };
}

impl Default for MessageDefaults {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The one recipient of a message, as the suppression list sees it
/// ([`OutboxMessage::recipient`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    /// The address (compared lowercased).
    pub address: String,
    /// The mailing list the message is mail of, if any: suppressions of that list stop it.
    pub list: Option<String>,
    /// A transactional message (a password reset, a receipt) is stopped only by
    /// suppressions of all mail or of its own type, and never by an unsubscribe.
    pub transactional: bool,
}

impl Recipient {
    /// A transactional message to `address`.
    pub fn transactional(address: impl Into<String>) -> Self {
        Self {
            address: address.into(),
            list: None,
            transactional: true,
        }
    }

    /// Bulk mail to `address`, of `list` if given: every suppression of the address in
    /// its scopes stops it.
    pub fn bulk(address: impl Into<String>, list: Option<String>) -> Self {
        Self {
            address: address.into(),
            list,
            transactional: false,
        }
    }
}

/// Checks that a type tag is usable as a queue name: 1 to [`MAX_TYPE_TAG_LEN`] bytes of
/// ASCII letters, digits, `_`, `-`, `.` and `:`.
///
/// The derive runs the same check at compile time; this one guards hand-written impls.
pub fn validate_type_tag(tag: &str) -> Result<(), String> {
    if tag.is_empty() {
        return Err("the type tag is empty".into());
    }
    if tag.len() > MAX_TYPE_TAG_LEN {
        return Err(format!(
            "the type tag is {} bytes long; the limit is {MAX_TYPE_TAG_LEN}",
            tag.len()
        ));
    }
    if let Some(c) = tag
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
    {
        return Err(format!(
            "the type tag {tag:?} contains {c:?}; use ASCII letters, digits, '_', '-', '.' or ':'"
        ));
    }
    Ok(())
}

/// Why a stored payload could not be read as a message type.
#[derive(thiserror::Error)]
pub enum DecodeError {
    /// The stored message is of another type.
    #[error(
        "the message is of type `{stored}`, not `{expected}`: decode it as the type whose \
         TYPE is `{stored}`"
    )]
    WrongType {
        /// The stored type tag.
        stored: String,
        /// The type tag of the type asked for.
        expected: &'static str,
    },
    /// The payload is not valid JSON for the type.
    #[error(
        "the payload of this `{type_tag}` message does not decode as `{rust_type}`: {source} \
         (it was written by other code or an older version of the type)"
    )]
    Payload {
        /// The type tag.
        type_tag: &'static str,
        /// The Rust type asked for.
        rust_type: &'static str,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
}

/// `payload` (JSON bytes) decoded as `M`; a `Deserialize` implementation that panics is
/// an undecodable payload too. How the worker and the admin read payloads.
/// Why a stored payload of `M` that does not decode can never be delivered, and what to do.
pub(crate) fn undecodable<M: OutboxMessage>(e: &serde_json::Error) -> String {
    format!(
        "payload does not decode as `{}` ({}): {e}; it was written by other code or an \
         older version of the type (fix the data or add #[serde(default)], then requeue)",
        M::TYPE,
        std::any::type_name::<M>()
    )
}

/// The check a rate-limited type runs before its token: the payload decodes as `M` and
/// [`OutboxMessage::validate`] accepts it.
pub(crate) fn precheck<M: OutboxMessage>(payload: &[u8]) -> Result<(), String> {
    let message = decode_payload::<M>(payload).map_err(|e| undecodable::<M>(&e))?;
    message
        .validate()
        .map_err(|e| format!("`{}` message is invalid: {e}", M::TYPE))
}

/// Reads the recipient a stored payload names (`None`: none, or it does not decode).
pub(crate) type RecipientOf = fn(&[u8]) -> Option<Recipient>;

/// The recipient a stored payload of `M` names; `None` when it names none or does not
/// decode (its attempt then fails as undecodable, as without the check). A panicking
/// `recipient` counts as none.
pub(crate) fn recipient_of<M: OutboxMessage>(payload: &[u8]) -> Option<Recipient> {
    let message = decode_payload::<M>(payload).ok()?;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| message.recipient()))
        .ok()
        .flatten()
}

/// Reads the destination a stored payload names (`None`: none, or it does not decode).
pub(crate) type DestinationOf = fn(&[u8]) -> Option<String>;

/// The destination a stored payload of `M` names; `None` when it names none, does not
/// decode (its attempt then fails as undecodable) or `destination` panics.
pub(crate) fn destination_of<M: OutboxMessage>(payload: &[u8]) -> Option<String> {
    let message = decode_payload::<M>(payload).ok()?;
    let key = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| message.destination()))
        .ok()
        .flatten()?;
    // Checked at enqueue; a row written before (or by other code) is not shaped.
    crate::shaping::destination_key(&key).ok()
}

pub(crate) fn decode_payload<M: OutboxMessage>(payload: &[u8]) -> Result<M, serde_json::Error> {
    std::panic::catch_unwind(|| serde_json::from_slice::<M>(payload)).unwrap_or_else(|_| {
        Err(serde::de::Error::custom(
            "its Deserialize implementation panicked",
        ))
    })
}

/// A stored message of `type_tag` with `payload`, decoded as `M`.
pub(crate) fn decode_stored<M: OutboxMessage>(
    type_tag: &str,
    payload: &[u8],
) -> Result<M, DecodeError> {
    if type_tag != M::TYPE {
        return Err(DecodeError::WrongType {
            stored: type_tag.to_owned(),
            expected: M::TYPE,
        });
    }
    decode_payload::<M>(payload).map_err(|source| DecodeError::Payload {
        type_tag: M::TYPE,
        rust_type: std::any::type_name::<M>(),
        source,
    })
}

// `Debug` prints the message (what is wrong, what to do), as the crate's other errors do.
impl std::fmt::Debug for InvalidMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Debug for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}
