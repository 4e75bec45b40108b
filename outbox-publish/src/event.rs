//! The event message: a subject (NATS) or routing key (RabbitMQ), an optional ordering key,
//! headers and a payload, enqueued in the caller's transaction.

use std::collections::BTreeMap;

use base64::{engine::general_purpose::STANDARD, Engine as _};
use futures::future::BoxFuture;
use outbox_core::{
    Enqueue, EnqueueConnection, EnqueueError, EnqueueOptions, Enqueued, InvalidMessage,
    OutboxMessage,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::EVENT_TYPE;

/// Longest subject (routing key), in bytes: AMQP's limit for a routing key.
pub const MAX_SUBJECT_LEN: usize = 255;

/// Most headers one event may carry.
pub const MAX_HEADERS: usize = 64;

/// Longest header name, in bytes.
const MAX_HEADER_NAME_LEN: usize = 128;

/// Longest header value, in bytes.
const MAX_HEADER_VALUE_LEN: usize = 4096;

/// Headers the relays set themselves, refused in an event's own headers.
const RESERVED_HEADERS: &[&str] = &["nats-msg-id", "nats-expected-stream"];

/// An event to publish: `subject` is the NATS subject or the RabbitMQ routing key,
/// `key` (when set) orders it after the earlier events with the same key, `headers` travel
/// with it, and the broker's message id is the outbox message id — the same on every
/// attempt, so a broker's de-duplication (JetStream's `Nats-Msg-Id`) and the consumer's
/// inbox can drop a re-publish.
///
/// ```
/// use outbox_publish::Event;
///
/// let event = Event::json("orders.created", &serde_json::json!({"order": 42}))
///     .unwrap()
///     .key("order-42")
///     .header("tenant", "acme");
/// assert_eq!(event.subject, "orders.created");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Event {
    /// The NATS subject or RabbitMQ routing key (`orders.created`).
    pub subject: String,
    /// The ordering key (an aggregate's id): events with the same key are published one
    /// at a time in enqueue order, across every relay process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Headers published with the event.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The payload's media type (`application/json` for [`Event::json`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The payload.
    pub payload: Payload,
}

/// An event's payload, as stored in the outbox row.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Payload {
    /// A JSON document, published as its compact text: kept as that text from the enqueue
    /// to the publish (never parsed into a tree on the way; [`Payload::json_value`] parses
    /// it on demand).
    Json(Box<RawValue>),
    /// Bytes, stored in base64 and published as they are.
    #[serde(serialize_with = "to_base64", deserialize_with = "from_base64")]
    Bytes(Vec<u8>),
}

impl Payload {
    /// The bytes published.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Payload::Json(raw) => raw.get().as_bytes().to_vec(),
            Payload::Bytes(bytes) => bytes.clone(),
        }
    }

    /// A JSON payload parsed into a [`serde_json::Value`] (`None` for bytes), e.g. to
    /// compare it in a test.
    pub fn json_value(&self) -> Option<serde_json::Value> {
        match self {
            Payload::Json(raw) => serde_json::from_str(raw.get()).ok(),
            Payload::Bytes(_) => None,
        }
    }
}

/// Two JSON payloads are equal when their texts are (both are the compact text the
/// serializer wrote); bytes when their bytes are.
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Payload::Json(a), Payload::Json(b)) => a.get() == b.get(),
            (Payload::Bytes(a), Payload::Bytes(b)) => a == b,
            _ => false,
        }
    }
}

fn to_base64<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&STANDARD.encode(bytes))
}

fn from_base64<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let text = String::deserialize(d)?;
    STANDARD.decode(text).map_err(serde::de::Error::custom)
}

impl Event {
    /// An event on `subject` whose payload is `value` as JSON.
    pub fn json<T: Serialize + ?Sized>(
        subject: impl Into<String>,
        value: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self {
            subject: subject.into(),
            key: None,
            headers: BTreeMap::new(),
            content_type: Some("application/json".to_owned()),
            payload: Payload::Json(serde_json::value::to_raw_value(value)?),
        })
    }

    /// An event on `subject` whose payload is `bytes`, published as they are.
    pub fn bytes(subject: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            subject: subject.into(),
            key: None,
            headers: BTreeMap::new(),
            content_type: None,
            payload: Payload::Bytes(bytes.into()),
        }
    }

    /// Orders this event after the earlier events with the same `key` (an aggregate's id):
    /// one at a time, in enqueue order.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Adds header `name: value`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Sets the payload's media type.
    pub fn content_type(mut self, content_type: impl Into<String>) -> Self {
        self.content_type = Some(content_type.into());
        self
    }

    /// Writes this event in the caller's transaction: it is published after the
    /// transaction commits, and never if it rolls back.
    pub fn enqueue<'a, C>(&'a self, conn: C) -> BoxFuture<'a, Result<Enqueued, EnqueueError>>
    where
        C: EnqueueConnection + 'a,
    {
        Enqueue::enqueue(self, conn)
    }

    /// [`enqueue`](Self::enqueue) with explicit options (delay, priority, attempts, group,
    /// idempotency key).
    pub fn enqueue_with<'a, C>(
        &'a self,
        conn: C,
        options: EnqueueOptions,
    ) -> BoxFuture<'a, Result<Enqueued, EnqueueError>>
    where
        C: EnqueueConnection + 'a,
    {
        Enqueue::enqueue_with(self, conn, options)
    }
}

impl OutboxMessage for Event {
    const TYPE: &'static str = EVENT_TYPE;
    const ORDERED: bool = true;

    fn order_key(&self) -> Option<String> {
        self.key.clone()
    }

    fn validate(&self) -> Result<(), InvalidMessage> {
        check_subject(&self.subject).map_err(|why| InvalidMessage::new("subject", why))?;
        if self.headers.len() > MAX_HEADERS {
            return Err(InvalidMessage::new(
                "headers",
                format!(
                    "{} headers: an event carries at most {MAX_HEADERS}",
                    self.headers.len()
                ),
            ));
        }
        for (name, value) in &self.headers {
            check_header(name, value).map_err(|why| InvalidMessage::new("headers", why))?;
        }
        if let Some(ct) = &self.content_type {
            if ct.is_empty() || ct.len() > 255 || ct.bytes().any(|b| b.is_ascii_control()) {
                return Err(InvalidMessage::new(
                    "content_type",
                    "not a media type: 1 to 255 bytes without control characters \
                     (e.g. `application/json`)",
                ));
            }
        }
        Ok(())
    }
}

/// Whether `subject` can be published on both brokers: 1 to [`MAX_SUBJECT_LEN`] bytes,
/// no whitespace or control characters, no empty `.`-separated token, no wildcard.
pub fn check_subject(subject: &str) -> Result<(), String> {
    let shown = || subject.chars().take(60).collect::<String>();
    if subject.is_empty() || subject.len() > MAX_SUBJECT_LEN {
        return Err(format!(
            "`{}` is {} bytes: a subject has 1 to {MAX_SUBJECT_LEN} (e.g. `orders.created`)",
            shown(),
            subject.len()
        ));
    }
    if subject.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "`{}` holds whitespace or a control character: subjects are tokens separated by \
             `.` (e.g. `orders.created`)",
            shown()
        ));
    }
    if subject
        .split('.')
        .any(|t| t.is_empty() || t == "*" || t == ">")
    {
        return Err(format!(
            "`{}` has an empty token or a wildcard (`*`, `>`): an event is published on one \
             concrete subject (e.g. `orders.42.created`)",
            shown()
        ));
    }
    Ok(())
}

fn check_header(name: &str, value: &str) -> Result<(), String> {
    let shown = name.chars().take(60).collect::<String>();
    if name.is_empty()
        || name.len() > MAX_HEADER_NAME_LEN
        || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':')
    {
        return Err(format!(
            "header name `{shown}`: use 1 to {MAX_HEADER_NAME_LEN} printable ASCII characters \
             without `:` or spaces"
        ));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!(
            "header `{shown}` is set by the relay (the outbox message id is the event's id)"
        ));
    }
    if value.len() > MAX_HEADER_VALUE_LEN || value.chars().any(|c| c == '\r' || c == '\n') {
        return Err(format!(
            "header `{shown}`'s value: at most {MAX_HEADER_VALUE_LEN} bytes, no line breaks"
        ));
    }
    Ok(())
}

/// A type of the application that is published as an [`Event`]: its subject built from its
/// fields, an optional ordering key, and its JSON as the payload.
///
/// `#[derive(PublishEvent)]` writes it from
/// `#[publish(subject = "orders.{id}.created", key = "{id}")]` (with this crate alone, not
/// through the `outbox` facade, add `crate = "outbox_publish"`); implement it by hand for
/// anything the pattern cannot say.
///
/// ```
/// use outbox_publish::PublishEvent;
///
/// #[derive(serde::Serialize)]
/// struct OrderPaid {
///     order: u64,
///     cents: i64,
/// }
///
/// impl PublishEvent for OrderPaid {
///     fn subject(&self) -> String {
///         format!("orders.{}.paid", self.order)
///     }
///     fn key(&self) -> Option<String> {
///         Some(self.order.to_string())
///     }
/// }
///
/// let event = OrderPaid { order: 42, cents: 1999 }.to_event().unwrap();
/// assert_eq!((event.subject.as_str(), event.key.as_deref()), ("orders.42.paid", Some("42")));
/// ```
pub trait PublishEvent: Serialize {
    /// The subject (routing key) this value is published on.
    fn subject(&self) -> String;

    /// The ordering key (an aggregate's id), if events of this type are ordered.
    fn key(&self) -> Option<String> {
        None
    }

    /// The event: [`subject`](Self::subject), [`key`](Self::key), this value as JSON.
    fn to_event(&self) -> Result<Event, serde_json::Error> {
        let event = Event::json(self.subject(), self)?;
        Ok(match self.key() {
            Some(key) => event.key(key),
            None => event,
        })
    }

    /// Enqueues [`to_event`](Self::to_event) in the caller's transaction.
    fn publish<'a, C>(&'a self, conn: C) -> BoxFuture<'a, Result<Enqueued, EnqueueError>>
    where
        C: EnqueueConnection + 'a,
        Self: Sync,
    {
        Box::pin(async move {
            let event = self.to_event().map_err(|source| EnqueueError::Serialize {
                type_tag: EVENT_TYPE,
                source,
            })?;
            event.enqueue(conn).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_through_the_stored_json() {
        let bytes = Event::bytes("a.b", vec![0u8, 159, 146, 150]).key("k");
        let text = serde_json::to_string(&bytes).unwrap();
        assert_eq!(
            text,
            r#"{"subject":"a.b","key":"k","payload":{"bytes":"AJ+Slg=="}}"#
        );
        assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), bytes);
        let json = Event::json("a.b", &serde_json::json!({"n": 1})).unwrap();
        let back: Event = serde_json::from_str(&serde_json::to_string(&json).unwrap()).unwrap();
        assert_eq!(back.payload.to_bytes(), br#"{"n":1}"#);
        assert_eq!(back.order_key(), None);
        assert_eq!(bytes.order_key().as_deref(), Some("k"));
    }

    #[test]
    fn bad_subjects_and_headers_are_refused_with_the_reason() {
        for bad in ["", "a..b", "a.*", "orders.>", "a b", ".a", "a."] {
            let err = Event::bytes(bad, vec![]).validate().unwrap_err();
            assert!(err.to_string().contains("subject"), "{bad}: {err}");
        }
        assert!(Event::bytes("x".repeat(256), vec![]).validate().is_err());
        assert!(Event::bytes("orders.42.created", vec![]).validate().is_ok());
        let reserved = Event::bytes("a", vec![]).header("Nats-Msg-Id", "1");
        assert!(reserved
            .validate()
            .unwrap_err()
            .to_string()
            .contains("relay"));
        let newline = Event::bytes("a", vec![]).header("x", "1\r\n2");
        assert!(newline.validate().is_err());
        let spaced = Event::bytes("a", vec![]).header("x y", "1");
        assert!(spaced.validate().is_err());
    }
}
