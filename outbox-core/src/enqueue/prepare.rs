//! Turning a typed message and its options into a checked row, before anything is written.

use std::time::Duration;

use super::{
    options::{KeyChoice, When},
    EnqueueOptions, MessageId,
};
use crate::{
    clock::Due,
    error::EnqueueError,
    message::{validate_type_tag, OutboxMessage, MAX_IDEMPOTENCY_KEY_LEN},
    suppression::SuppressionProbe,
};

/// Longest delay accepted (about 1,000 years: the due time must fit the database's
/// millisecond column).
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(1_000 * 365 * 24 * 3600);

/// Highest `max_attempts` accepted.
pub(crate) const MAX_ATTEMPTS_LIMIT: u32 = 1000;

/// One checked, serialized message ready to be inserted by a backend.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// The new row's id.
    pub id: MessageId,
    /// The type tag, i.e. the queue.
    pub queue: &'static str,
    /// The message as JSON bytes.
    pub payload: Vec<u8>,
    /// When it is due: a delay after the enqueue's `now` (by the database's clock), or a
    /// chosen time.
    pub due: Due,
    /// Scheduling priority; higher runs first.
    pub priority: u16,
    /// Attempts before the message is given up.
    pub max_attempts: u32,
    /// Key unique per type while the row exists.
    pub idempotency_key: Option<String>,
    /// The group it belongs to, if any.
    pub group: Option<String>,
    /// Its one recipient as the suppression list sees it, if it has one.
    pub suppression: Option<SuppressionProbe>,
    /// Its ordering key: messages of the type with the same key start one at a time, in
    /// id order.
    pub order_key: Option<String>,
}

impl NewMessage {
    /// Checks and serializes `msg`; nothing is written.
    pub(crate) fn prepare<M: OutboxMessage>(
        msg: &M,
        options: &EnqueueOptions,
    ) -> Result<Self, EnqueueError> {
        validate_type_tag(M::TYPE).map_err(|reason| EnqueueError::InvalidTypeTag {
            rust_type: std::any::type_name::<M>(),
            reason,
        })?;
        msg.validate()
            .map_err(|source| EnqueueError::InvalidMessage {
                type_tag: M::TYPE,
                source,
            })?;
        let max_attempts = options.max_attempts.unwrap_or(M::DEFAULTS.max_attempts);
        if !(1..=MAX_ATTEMPTS_LIMIT).contains(&max_attempts) {
            return Err(EnqueueError::InvalidOption {
                type_tag: M::TYPE,
                option: "max_attempts",
                reason: format!("{max_attempts} is outside 1..={MAX_ATTEMPTS_LIMIT}"),
            });
        }
        let key = match &options.key {
            KeyChoice::FromMessage => msg.idempotency_key(),
            KeyChoice::Custom(key) => Some(key.clone()),
            KeyChoice::Without => None,
        };
        if let Some(key) = &key {
            check_key(key).map_err(|reason| EnqueueError::InvalidKey {
                type_tag: M::TYPE,
                reason,
            })?;
        }
        if let Some(group) = &options.group {
            check_group(group).map_err(|reason| EnqueueError::InvalidOption {
                type_tag: M::TYPE,
                option: "group",
                reason,
            })?;
        }
        let order_key = options.order_key.clone().or_else(|| msg.order_key());
        if let Some(key) = &order_key {
            check_order_key(key).map_err(|reason| EnqueueError::InvalidOption {
                type_tag: M::TYPE,
                option: "order_key",
                reason,
            })?;
            if !M::ORDERED {
                return Err(EnqueueError::InvalidOption {
                    type_tag: M::TYPE,
                    option: "order_key",
                    reason: "the message has an ordering key but its type says `ORDERED = \
                             false`, so workers would claim it without keeping the key's \
                             order; declare the type ordered: `#[outbox(ordered)]` with the \
                             derive, or `const ORDERED: bool = true;` in its `OutboxMessage` \
                             impl"
                        .into(),
                });
            }
        }
        let recipient = msg.recipient();
        if recipient.is_some() && !M::HAS_RECIPIENT {
            return Err(EnqueueError::InvalidOption {
                type_tag: M::TYPE,
                option: "recipient",
                reason: "the message names a recipient but its type says `HAS_RECIPIENT = \
                         false`, so workers would not check the suppression list before \
                         sending it; add `const HAS_RECIPIENT: bool = true;` to its \
                         `OutboxMessage` impl"
                    .into(),
            });
        }
        match msg.destination() {
            Some(_) if !M::HAS_DESTINATION => {
                return Err(EnqueueError::InvalidOption {
                    type_tag: M::TYPE,
                    option: "destination",
                    reason: "the message names a destination but its type says \
                             `HAS_DESTINATION = false`, so traffic shaping would not see it; \
                             add `const HAS_DESTINATION: bool = true;` to its `OutboxMessage` \
                             impl"
                        .into(),
                });
            }
            Some(key) => {
                crate::shaping::destination_key(&key).map_err(|reason| {
                    EnqueueError::InvalidOption {
                        type_tag: M::TYPE,
                        option: "destination",
                        reason,
                    }
                })?;
            }
            None => {}
        }
        let due = match options.when {
            None => Due::After(Duration::ZERO),
            Some(When::At(at)) => Due::At(at),
            Some(When::After(delay)) if delay > MAX_DELAY => {
                return Err(EnqueueError::InvalidOption {
                    type_tag: M::TYPE,
                    option: "after",
                    reason: format!(
                        "a delay of {delay:?} is longer than the longest one ({MAX_DELAY:?})"
                    ),
                })
            }
            Some(When::After(delay)) => Due::After(delay),
        };
        let payload = serde_json::to_vec(msg).map_err(|source| EnqueueError::Serialize {
            type_tag: M::TYPE,
            source,
        })?;
        let limit = options.max_payload.unwrap_or(M::DEFAULTS.max_payload);
        if payload.len() > limit {
            return Err(EnqueueError::PayloadTooLarge {
                type_tag: M::TYPE,
                size: payload.len(),
                limit,
            });
        }
        Ok(Self {
            id: MessageId::generate(),
            queue: M::TYPE,
            payload,
            due,
            priority: options.priority.unwrap_or(M::DEFAULTS.priority),
            max_attempts,
            idempotency_key: key,
            group: options.group.clone(),
            suppression: recipient.and_then(|r| {
                SuppressionProbe::new(
                    &r.address,
                    r.list.as_deref(),
                    r.transactional,
                    M::TYPE,
                    options.group.as_deref(),
                )
            }),
            order_key,
        })
    }
}

/// Longest ordering key, in bytes.
pub const MAX_ORDER_KEY_LEN: usize = 255;

/// An ordering key is 1 to [`MAX_ORDER_KEY_LEN`] bytes without control characters.
fn check_order_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.len() > MAX_ORDER_KEY_LEN {
        return Err(format!(
            "an ordering key is 1 to {MAX_ORDER_KEY_LEN} bytes, not {} (`{}`)",
            key.len(),
            key.chars().take(40).collect::<String>()
        ));
    }
    if key.chars().any(char::is_control) {
        return Err(format!(
            "an ordering key may not hold control characters: {key:?}"
        ));
    }
    Ok(())
}

/// An idempotency key is 1 to [`MAX_IDEMPOTENCY_KEY_LEN`] bytes without control characters.
fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("it is empty; leave it out or build it from the message's fields".into());
    }
    if key.len() > MAX_IDEMPOTENCY_KEY_LEN {
        return Err(format!(
            "it is {} bytes long; the limit is {MAX_IDEMPOTENCY_KEY_LEN} (hash longer keys)",
            key.len()
        ));
    }
    if key.chars().any(char::is_control) {
        return Err("it contains control characters".into());
    }
    Ok(())
}

/// Longest group name, in bytes.
pub const MAX_GROUP_NAME_LEN: usize = 200;

/// A group name is 1 to [`MAX_GROUP_NAME_LEN`] bytes without control characters.
pub(crate) fn check_group(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the group name is empty; name the campaign (e.g. \"campaign-7\")".into());
    }
    if name.len() > MAX_GROUP_NAME_LEN {
        return Err(format!(
            "the group name is {} bytes long; the limit is {MAX_GROUP_NAME_LEN}",
            name.len()
        ));
    }
    if name.chars().any(char::is_control) {
        return Err("the group name contains control characters".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked() {
        assert!(check_key("order-1").is_ok());
        assert!(check_key("").unwrap_err().contains("empty"));
        assert!(check_key(&"k".repeat(256))
            .unwrap_err()
            .contains("256 bytes"));
        assert!(check_key("a\nb").unwrap_err().contains("control"));
    }

    #[test]
    fn group_names_are_checked() {
        assert!(check_group("campaign-7").is_ok());
        assert!(check_group("").unwrap_err().contains("empty"));
        assert!(check_group(&"g".repeat(201))
            .unwrap_err()
            .contains("201 bytes"));
        assert!(check_group("a\tb").unwrap_err().contains("control"));
    }
}
