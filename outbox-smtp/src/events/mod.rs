//! Delivery events from email providers (feature `webhooks`), verified and normalised into
//! one model: Amazon SES through SNS ([`sns`]), SendGrid ([`sendgrid`]), Mailgun
//! ([`mailgun`]), Postmark ([`postmark`]), and bounce reports that arrive as mail
//! ([`dsn`]).
//!
//! Each provider module checks a request's signature (or leaves it to the caller, for
//! Postmark's basic authentication) and reads its events into [`ProviderEvent`]s: what
//! happened ([`EventKind`]), to whom, and which of our messages it is about — matched by the
//! `Message-ID` the mailer wrote (`<outbox id@domain>`). [`EventPolicy`] says which events
//! suppress the recipient. Nothing here writes to a database; the web endpoint
//! (`outbox::web::Webhooks`) or the application applies the events.

pub mod dsn;
pub mod mailgun;
pub mod postmark;
pub mod sendgrid;
pub mod sns;

use std::time::SystemTime;

use outbox_core::{NewSuppression, SuppressionReason, SuppressionScope};

/// What a provider says happened to one email for one recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// The receiving server accepted it.
    Delivered,
    /// The receiving server deferred it; the provider tries again.
    Deferred,
    /// A temporary failure the provider gave up on (mailbox full, server busy).
    SoftBounce,
    /// A permanent failure: the address does not exist or refuses mail for good.
    HardBounce,
    /// The recipient marked it as spam.
    Complaint,
    /// The recipient unsubscribed through the provider.
    Unsubscribe,
}

impl EventKind {
    /// The kind as written in logs: `delivered`, `deferred`, `soft_bounce`, `hard_bounce`,
    /// `complaint`, `unsubscribe`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Delivered => "delivered",
            EventKind::Deferred => "deferred",
            EventKind::SoftBounce => "soft_bounce",
            EventKind::HardBounce => "hard_bounce",
            EventKind::Complaint => "complaint",
            EventKind::Unsubscribe => "unsubscribe",
        }
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One provider event, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderEvent {
    /// Who sent it: `ses`, `sendgrid`, `mailgun`, `postmark` or `dsn`.
    pub provider: &'static str,
    /// The provider's id of this event (repeated deliveries of one event carry the same id).
    pub id: String,
    /// What happened.
    pub kind: EventKind,
    /// The recipient it is about, lowercased.
    pub recipient: String,
    /// The `Message-ID` of the email, without angle brackets, when the provider gives it.
    pub message_id: Option<String>,
    /// The outbox id of the email: the part of our `Message-ID` before `@`, when it is one.
    pub outbox_id: Option<String>,
    /// The provider's own id of the email (Postmark's `MessageID`, SES's `messageId`,
    /// SendGrid's `X-Message-Id`, Mailgun's `id` without angle brackets): what the
    /// mailer recorded as the email's receipt when the provider's API took it, so the
    /// event finds its outbox message when the `Message-ID` does not name it.
    pub provider_message_id: Option<String>,
    /// When it happened, by the provider's clock.
    pub at: Option<SystemTime>,
    /// The provider's words: the SMTP reply, the bounce type, the complaint's feedback type.
    pub detail: String,
}

impl ProviderEvent {
    /// An event with `message_id` read as ours (see [`outbox_id_of`]).
    pub(crate) fn new(
        provider: &'static str,
        id: impl Into<String>,
        kind: EventKind,
        recipient: &str,
        message_id: Option<&str>,
    ) -> Self {
        let message_id = message_id
            .map(|m| {
                m.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
            .filter(|m| !m.is_empty());
        Self {
            provider,
            id: id.into(),
            kind,
            recipient: recipient.trim().to_lowercase(),
            outbox_id: message_id.as_deref().and_then(outbox_id_of),
            message_id,
            provider_message_id: None,
            at: None,
            detail: String::new(),
        }
    }

    pub(crate) fn at(mut self, at: Option<SystemTime>) -> Self {
        self.at = at;
        self
    }

    pub(crate) fn provider_message_id(mut self, id: Option<&str>) -> Self {
        self.provider_message_id = id
            .map(|id| id.trim().trim_start_matches('<').trim_end_matches('>'))
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
        self
    }

    pub(crate) fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }
}

/// The outbox id in a `Message-ID` the mailer wrote (`<01J…@example.com>`): the part before
/// `@` when it is a ULID; `None` for other mail.
pub fn outbox_id_of(message_id: &str) -> Option<String> {
    let m = message_id
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>');
    let (local, _) = m.split_once('@')?;
    ulid::Ulid::from_string(local)
        .ok()
        .map(|_| local.to_owned())
}

/// Which events suppress their recipient, and in which scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPolicy {
    /// A hard bounce suppresses all mail to the address (default: yes).
    pub hard_bounce: Option<SuppressionScope>,
    /// A complaint suppresses all mail to the address (default: yes).
    pub complaint: Option<SuppressionScope>,
    /// A provider's unsubscribe suppresses all bulk mail to the address (default: yes;
    /// transactional mail still goes).
    pub unsubscribe: Option<SuppressionScope>,
}

impl Default for EventPolicy {
    fn default() -> Self {
        Self {
            hard_bounce: Some(SuppressionScope::All),
            complaint: Some(SuppressionScope::All),
            unsubscribe: Some(SuppressionScope::All),
        }
    }
}

impl EventPolicy {
    /// The suppression `event` calls for under this policy, if any.
    pub fn suppression(&self, event: &ProviderEvent) -> Option<NewSuppression> {
        let (scope, reason) = match event.kind {
            EventKind::HardBounce => (self.hard_bounce.clone()?, SuppressionReason::HardBounce),
            EventKind::Complaint => (self.complaint.clone()?, SuppressionReason::Complaint),
            EventKind::Unsubscribe => (self.unsubscribe.clone()?, SuppressionReason::Unsubscribe),
            _ => return None,
        };
        let source = match &event.outbox_id {
            Some(id) => format!("{} {} of message {id}", event.provider, event.kind),
            None => format!("{} {} {}", event.provider, event.kind, event.id),
        };
        NewSuppression::new(&event.recipient, scope, reason)
            .ok()
            .map(|s| s.source(source))
    }
}

/// Why a provider's request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The signature (or the credentials) did not verify: answer 401 or 403.
    #[error("the request's signature does not verify: {0}")]
    Signature(String),
    /// The request is signed but not acceptable: a wrong topic, a certificate from a host
    /// that is not the provider's, a stale timestamp, a replayed token.
    #[error("the request is refused: {0}")]
    Refused(String),
    /// The body is not what the provider sends: answer 400.
    #[error("the request's body cannot be read: {0}")]
    Body(String),
}

/// How far ahead of our clock a signed timestamp may be (the provider's clock and ours
/// disagree a little).
pub const MAX_CLOCK_AHEAD: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Refuses a signed timestamp `at` older than `max_age` at `now`, or more than
/// [`MAX_CLOCK_AHEAD`] ahead of it: a captured request cannot be replayed later.
pub(crate) fn check_fresh(
    at: SystemTime,
    now: SystemTime,
    max_age: std::time::Duration,
) -> Result<(), WebhookError> {
    match now.duration_since(at) {
        Ok(age) if age > max_age => Err(WebhookError::Refused(format!(
            "the signed timestamp is {} s old (at most {} s are accepted)",
            age.as_secs(),
            max_age.as_secs()
        ))),
        Err(ahead) if ahead.duration() > MAX_CLOCK_AHEAD => Err(WebhookError::Refused(format!(
            "the signed timestamp is {} s ahead of this server's clock (at most {} s)",
            ahead.duration().as_secs(),
            MAX_CLOCK_AHEAD.as_secs()
        ))),
        _ => Ok(()),
    }
}

/// Constant-time equality of two byte strings (for signatures and passwords).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_message_ids_name_the_outbox_message() {
        let id = "01JD5Z3Q4V8W6X7Y8Z9A0B1C2D";
        assert_eq!(
            outbox_id_of(&format!("<{id}@example.com>")).as_deref(),
            Some(id)
        );
        assert_eq!(outbox_id_of("<abc@example.com>"), None);
        assert_eq!(outbox_id_of("no-at-sign"), None);
    }

    #[test]
    fn the_policy_suppresses_bounces_complaints_and_unsubscribes() {
        let policy = EventPolicy::default();
        let event = |kind| ProviderEvent::new("ses", "e1", kind, "Ann@Example.com", None);
        let s = policy.suppression(&event(EventKind::HardBounce)).unwrap();
        assert_eq!(
            (s.address.as_str(), &s.scope),
            ("ann@example.com", &SuppressionScope::All)
        );
        assert_eq!(s.reason, SuppressionReason::HardBounce);
        assert_eq!(s.source.as_deref(), Some("ses hard_bounce e1"));
        assert!(policy.suppression(&event(EventKind::SoftBounce)).is_none());
        assert!(policy.suppression(&event(EventKind::Delivered)).is_none());
        let off = EventPolicy {
            complaint: None,
            ..EventPolicy::default()
        };
        assert!(off.suppression(&event(EventKind::Complaint)).is_none());
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"ab", b"abc"));
    }
}
