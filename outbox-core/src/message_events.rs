//! What a downstream said about a message after taking it: its receipt (the id the
//! downstream gave the message, e.g. a provider's message id) and the events it reported
//! later (delivered, bounced, complained), kept per message so an operator sees them on
//! the message's page and an event that names only the downstream's id finds its message.
//!
//! A handler records the receipt with
//! [`MessageContext::record_receipt`](crate::MessageContext::record_receipt) when the
//! downstream accepts the message; whoever reads the downstream's events (the web
//! endpoint for providers' webhooks) finds the message by that id
//! ([`EventStore::message_of`](crate::store::EventStore::message_of)) and records the event
//! beside it. An event is recorded once: a repeat (the same provider and event id) is
//! ignored. Rows are pruned [`EVENTS_KEPT`] after they were written (or after the
//! retention window, when that is longer).

use std::time::{Duration, SystemTime};

/// How long message events are kept (unless the outbox keeps done rows longer).
pub const EVENTS_KEPT: Duration = Duration::from_secs(30 * 24 * 3600);

/// The event kind of a receipt: the downstream accepted the message.
pub const ACCEPTED: &str = "accepted";

/// Longest provider name, event id, external id or kind, in bytes (their columns).
pub const MAX_EVENT_KEY_LEN: usize = 255;

/// An event to record about an outbox message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessageEvent {
    /// The outbox message it is about.
    pub message_id: String,
    /// Who said it: a provider's name (`postmark`, `ses`, …) or another downstream's.
    pub provider: String,
    /// The provider's id of this event (for a receipt, the external id); a second event
    /// with the same provider and id is a repeat and is not recorded.
    pub event_id: String,
    /// The provider's id of the message.
    pub external_id: String,
    /// What happened: [`ACCEPTED`], `delivered`, `hard_bounce`, `complaint`, …
    pub kind: String,
    /// The recipient it is about, if one.
    pub recipient: Option<String>,
    /// The provider's words (an SMTP reply, a bounce type); may be empty.
    pub detail: String,
    /// When it happened (by the provider's clock when it says; else when it was read).
    pub at: SystemTime,
}

impl NewMessageEvent {
    /// The receipt of `message_id`: `provider` accepted it as `external_id` at `at`.
    pub fn receipt(
        message_id: impl Into<String>,
        provider: impl Into<String>,
        external_id: impl Into<String>,
        at: SystemTime,
    ) -> Self {
        let external_id = external_id.into();
        Self {
            message_id: message_id.into(),
            provider: provider.into(),
            event_id: external_id.clone(),
            external_id,
            kind: ACCEPTED.to_owned(),
            recipient: None,
            detail: String::new(),
            at,
        }
    }

    /// Why it cannot be stored, if it cannot: an empty or too long key.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (name, value) in [
            ("message id", &self.message_id),
            ("provider", &self.provider),
            ("event id", &self.event_id),
            ("external id", &self.external_id),
            ("kind", &self.kind),
        ] {
            if value.trim().is_empty() || value.len() > MAX_EVENT_KEY_LEN {
                return Err(format!(
                    "a message event's {name} must be 1 to {MAX_EVENT_KEY_LEN} bytes (got {:?})",
                    value.chars().take(40).collect::<String>()
                ));
            }
        }
        Ok(())
    }
}

/// A recorded event of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageEvent {
    /// Who said it.
    pub provider: String,
    /// The provider's id of the event.
    pub event_id: String,
    /// The provider's id of the message.
    pub external_id: String,
    /// What happened ([`ACCEPTED`] for the receipt).
    pub kind: String,
    /// The recipient it is about, if one.
    pub recipient: Option<String>,
    /// The provider's words.
    pub detail: String,
    /// When it happened.
    pub at: SystemTime,
}
