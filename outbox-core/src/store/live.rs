//! The records of live messages (queued, scheduled, running and retrying rows of the
//! queue) and the filter their operations take.

use std::time::SystemTime;

use super::FailedAttempt;
use crate::{
    enqueue::MessageId,
    message::{DecodeError, OutboxMessage},
};

/// Where a live message stands, as [`TypeCounts`](super::TypeCounts) counts it: the same
/// definitions, computed at the time of the read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LiveState {
    /// Queued, never failed, due: waiting for a worker.
    Pending,
    /// Queued, never failed, due later (enqueued with a delay or a due time).
    Scheduled,
    /// Claimed by a worker, which holds its lease.
    Running,
    /// Queued after at least one attempt (failed, or given back by a lease that ran out),
    /// due now or later.
    Retrying,
    /// Queued, but its type or its group is paused: it waits for a resume.
    Paused,
}

impl LiveState {
    /// The state's name as the statements use it.
    pub fn as_str(self) -> &'static str {
        match self {
            LiveState::Pending => "pending",
            LiveState::Scheduled => "scheduled",
            LiveState::Running => "running",
            LiveState::Retrying => "retrying",
            LiveState::Paused => "paused",
        }
    }

    /// The state named `name` (as [`LiveState::as_str`] writes it).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "pending" => LiveState::Pending,
            "scheduled" => LiveState::Scheduled,
            "running" => LiveState::Running,
            "retrying" => LiveState::Retrying,
            "paused" => LiveState::Paused,
            _ => return None,
        })
    }
}

/// One live message, without its payload (see [`LiveMessageDetail`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveMessage {
    /// The message's id.
    pub id: MessageId,
    /// Its type tag.
    pub type_tag: String,
    /// Where it stands at the time of the read.
    pub state: LiveState,
    /// Its group, if it was enqueued into one.
    pub group: Option<String>,
    /// Attempts made so far (counted at claim: a running message counts its current one).
    pub attempts: u32,
    /// Attempts it has.
    pub max_attempts: u32,
    /// Its priority (higher first).
    pub priority: i32,
    /// When it is (or was) due.
    pub due_at: SystemTime,
    /// When it was enqueued.
    pub enqueued_at: SystemTime,
    /// Its idempotency key, if any.
    pub idempotency_key: Option<String>,
    /// The error of its last failed attempt, if any.
    pub last_error: Option<String>,
    /// Its failed attempts, oldest first (the last [`FailedAttempt::LOG_LIMIT`]).
    pub attempt_log: Vec<FailedAttempt>,
    /// The worker holding it, while running.
    pub lease_owner: Option<String>,
    /// When that worker's lease runs out, while running.
    pub lease_expires_at: Option<SystemTime>,
}

/// One live message with its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveMessageDetail {
    /// The message.
    pub message: LiveMessage,
    /// The payload as stored (JSON bytes).
    pub payload: Vec<u8>,
}

impl LiveMessageDetail {
    /// The payload as an `M`; an error if the message is of another type or its payload
    /// does not decode as `M`.
    pub fn decode<M: OutboxMessage>(&self) -> Result<M, DecodeError> {
        crate::message::decode_stored::<M>(&self.message.type_tag, &self.payload)
    }
}

/// Which delivered messages, kept for the retention window, to send again
/// ([`LiveMessageStore::replay_done`](crate::store::LiveMessageStore::replay_done)): all,
/// or those matching every condition given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayFilter {
    /// Only this message.
    pub id: Option<String>,
    /// Only this type.
    pub type_tag: Option<String>,
    /// Only messages of this group.
    pub group: Option<String>,
    /// Only messages delivered at or after this time.
    pub done_after: Option<SystemTime>,
    /// Only messages delivered before this time.
    pub done_before: Option<SystemTime>,
}

/// Which live messages an operation applies to: all, or those matching every condition
/// given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveFilter {
    /// Only this message.
    pub id: Option<String>,
    /// Only this type.
    pub type_tag: Option<String>,
    /// Only messages in this state.
    pub state: Option<LiveState>,
    /// Only messages whose idempotency key starts with this text (case-sensitive).
    pub key_prefix: Option<String>,
    /// Only messages whose last error contains this text (case-sensitive).
    pub error_contains: Option<String>,
    /// Only messages of this group.
    pub group: Option<String>,
    /// Only messages to this recipient: the address a type that names one recipient
    /// declares ([`OutboxMessage::recipient`]), stored lowercased at enqueue and compared
    /// exactly (set it with [`LiveFilter::to`], which lowercases it). Messages of types
    /// without a recipient never match.
    pub recipient: Option<String>,
}

impl LiveFilter {
    /// Every live message.
    pub fn all() -> Self {
        Self::default()
    }

    /// One message.
    pub fn id(id: impl Into<String>) -> Self {
        Self {
            id: Some(id.into()),
            ..Self::default()
        }
    }

    /// One type.
    pub fn type_tag(type_tag: impl Into<String>) -> Self {
        Self {
            type_tag: Some(type_tag.into()),
            ..Self::default()
        }
    }

    /// Narrows to messages of `type_tag`.
    pub fn of_type(mut self, type_tag: impl Into<String>) -> Self {
        self.type_tag = Some(type_tag.into());
        self
    }

    /// Narrows to messages of group `name`.
    pub fn in_group(mut self, name: impl Into<String>) -> Self {
        self.group = Some(name.into());
        self
    }

    /// Narrows to messages in `state`.
    pub fn state(mut self, state: LiveState) -> Self {
        self.state = Some(state);
        self
    }

    /// Narrows to messages whose idempotency key starts with `prefix`.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = Some(prefix.into());
        self
    }

    /// Narrows to messages whose last error contains `text`.
    pub fn error_contains(mut self, text: impl Into<String>) -> Self {
        self.error_contains = Some(text.into());
        self
    }

    /// Narrows to messages to `address` (trimmed and lowercased, as the enqueue stores
    /// it): an email to `Ann@Example.com` is found as `ann@example.com`. Found through an
    /// index of the recipients, not by reading payloads.
    pub fn to(mut self, address: impl AsRef<str>) -> Self {
        self.recipient = Some(address.as_ref().trim().to_lowercase());
        self
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::store::DeadLetter;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Welcome {
        to: String,
    }

    impl OutboxMessage for Welcome {
        const TYPE: &'static str = "welcome";
    }

    fn detail(type_tag: &str, payload: &[u8]) -> LiveMessageDetail {
        LiveMessageDetail {
            message: LiveMessage {
                id: MessageId::from_string("01J0000000000000000000000"),
                type_tag: type_tag.into(),
                state: LiveState::Retrying,
                group: None,
                attempts: 1,
                max_attempts: 3,
                priority: 0,
                due_at: UNIX_EPOCH,
                enqueued_at: UNIX_EPOCH,
                idempotency_key: None,
                last_error: None,
                attempt_log: Vec::new(),
                lease_owner: None,
                lease_expires_at: None,
            },
            payload: payload.to_vec(),
        }
    }

    #[test]
    fn decode_reads_the_payload_as_its_type() {
        let m = detail("welcome", br#"{"to":"a@example.com"}"#);
        assert_eq!(
            m.decode::<Welcome>().unwrap(),
            Welcome {
                to: "a@example.com".into()
            }
        );
    }

    #[test]
    fn decode_names_both_types_when_they_differ() {
        let e = detail("invoice", br#"{"to":"a"}"#)
            .decode::<Welcome>()
            .unwrap_err();
        assert!(matches!(
            &e,
            DecodeError::WrongType { stored, expected: "welcome" } if stored == "invoice"
        ));
        let text = e.to_string();
        assert!(
            text.contains("`invoice`") && text.contains("`welcome`"),
            "{text}"
        );
    }

    #[test]
    fn decode_gives_the_serde_error_of_a_bad_payload() {
        let e = detail("welcome", br#"{"too":1}"#)
            .decode::<Welcome>()
            .unwrap_err();
        let DecodeError::Payload { source, .. } = &e else {
            panic!("a payload error: {e}");
        };
        assert!(
            source.to_string().contains("missing field `to`"),
            "{source}"
        );
        assert!(e.to_string().contains("missing field `to`"), "{e}");
    }

    #[test]
    fn dead_letters_decode_too() {
        let letter = DeadLetter {
            id: MessageId::from_string("01J0000000000000000000000"),
            type_tag: "welcome".into(),
            payload: br#"{"to":"b"}"#.to_vec(),
            attempts: 3,
            max_attempts: 3,
            idempotency_key: None,
            last_error: "gone".into(),
            enqueued_at: None,
            failed_at: UNIX_EPOCH,
            attempt_log: Vec::new(),
        };
        assert_eq!(letter.decode::<Welcome>().unwrap().to, "b");
        let other = DeadLetter {
            type_tag: "other".into(),
            ..letter
        };
        assert!(matches!(
            other.decode::<Welcome>(),
            Err(DecodeError::WrongType { .. })
        ));
    }
}

/// Why an order key holds its later messages ([`HeldKey`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldBy {
    /// A dead letter with the key: the later messages wait until it is requeued or purged.
    Dead,
    /// The key's first unfinished message failed and waits for its retry.
    Retrying,
}

impl HeldBy {
    /// `dead` or `retrying`.
    pub fn as_str(self) -> &'static str {
        match self {
            HeldBy::Dead => "dead",
            HeldBy::Retrying => "retrying",
        }
    }
}

/// An order key whose later messages wait behind a failing or dead message
/// ([`LiveMessageStore::held_keys`](crate::store::LiveMessageStore::held_keys)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldKey {
    /// The order key.
    pub key: String,
    /// The message that holds it (a dead letter's id, or the failing message's).
    pub message_id: String,
    /// Dead or retrying.
    pub held_by: HeldBy,
    /// That message's last error.
    pub last_error: String,
    /// How many of the key's messages wait behind it.
    pub waiting: u64,
}
