//! The webhook message: an event for one endpoint, enqueued in the application's
//! transaction like any message.

use futures::future::BoxFuture;
use outbox_core::{
    Enqueue, EnqueueConnection, EnqueueError, EnqueueOptions, Enqueued, InvalidMessage,
    OutboxMessage,
};
use serde::{Deserialize, Serialize};

use crate::endpoint::WebhookEndpoint;

pub use crate::endpoint::group_of;
use crate::WEBHOOK_TYPE;

/// Longest event type, in bytes.
pub const MAX_EVENT_TYPE_LEN: usize = 100;

/// An event to deliver to one endpoint: POSTed as JSON
/// `{"type": event_type, "timestamp": enqueued (RFC 3339), "data": data}`, signed with the
/// endpoint's secrets, `webhook-id` = the outbox message id (the same on every retry).
///
/// Build it from the endpoint it goes to ([`Webhook::new`]): the endpoint's host is kept
/// with the message as its destination, so traffic shaping and the per-destination circuit
/// breaker act per receiving host. The URL and the secrets are read when it is sent: a
/// changed URL or a rotated secret applies to queued messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Webhook {
    /// The endpoint's name.
    pub endpoint: String,
    /// The endpoint's host (and port, when not the scheme's) when it was enqueued.
    pub host: String,
    /// The event type (`invoice.paid`): letters, digits, `_`, `-` and `.`.
    pub event_type: String,
    /// The event's data.
    pub data: serde_json::Value,
    /// Delivered in order with the endpoint's other ordered events (its endpoint was
    /// ordered when it was enqueued).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ordered: bool,
}

impl Webhook {
    /// Event `event_type` with `data` for `endpoint`.
    pub fn new(
        endpoint: &WebhookEndpoint,
        event_type: impl Into<String>,
        data: serde_json::Value,
    ) -> Self {
        Self {
            endpoint: endpoint.name.clone(),
            host: endpoint.host_key(),
            event_type: event_type.into(),
            data,
            ordered: endpoint.ordered,
        }
    }

    /// The group its endpoint's messages are enqueued in: paused while the endpoint is
    /// disabled.
    pub fn group(&self) -> String {
        group_of(&self.endpoint)
    }

    /// Writes this event in the caller's transaction, in its endpoint's group (so a
    /// disabled endpoint parks it).
    pub fn enqueue<'a, C>(&'a self, conn: C) -> BoxFuture<'a, Result<Enqueued, EnqueueError>>
    where
        C: EnqueueConnection + 'a,
    {
        self.enqueue_with(conn, EnqueueOptions::new())
    }

    /// [`enqueue`](Self::enqueue) with explicit options (delay, priority, attempts); the
    /// group is always the endpoint's.
    pub fn enqueue_with<'a, C>(
        &'a self,
        conn: C,
        options: EnqueueOptions,
    ) -> BoxFuture<'a, Result<Enqueued, EnqueueError>>
    where
        C: EnqueueConnection + 'a,
    {
        Enqueue::enqueue_with(self, conn, options.group(self.group()))
    }
}

impl OutboxMessage for Webhook {
    const TYPE: &'static str = WEBHOOK_TYPE;
    const HAS_DESTINATION: bool = true;
    const ORDERED: bool = true;

    fn destination(&self) -> Option<String> {
        Some(self.host.clone())
    }

    fn order_key(&self) -> Option<String> {
        self.ordered.then(|| self.endpoint.clone())
    }

    fn validate(&self) -> Result<(), InvalidMessage> {
        if let Err(why) = crate::endpoint::check_name(&self.endpoint) {
            return Err(InvalidMessage::new("endpoint", why));
        }
        let t = &self.event_type;
        if t.is_empty()
            || t.len() > MAX_EVENT_TYPE_LEN
            || !t
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        {
            return Err(InvalidMessage::new(
                "event_type",
                format!(
                    "`{}` is not an event type: use 1 to {MAX_EVENT_TYPE_LEN} letters, digits, \
                     `_`, `-` or `.` (e.g. `invoice.paid`)",
                    t.chars().take(60).collect::<String>()
                ),
            ));
        }
        if self.host.is_empty() {
            return Err(InvalidMessage::new(
                "host",
                "empty: build the message with Webhook::new from the endpoint",
            ));
        }
        Ok(())
    }
}
