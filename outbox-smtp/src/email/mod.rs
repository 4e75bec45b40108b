//! The [`Email`] message: what is sent, to whom, checked before it is queued.
//!
//! Failure modes: an email with a malformed address, no recipient, a line break in a
//! header value (subject, display names, extra headers), a reserved or malformed extra
//! header name, a bad attachment or more than [`MAX_ATTACHMENT_BYTES`] of attachments is
//! refused by [`OutboxMessage::validate`] with the offending field (`to[1]`,
//! `headers["X-Foo"]`, `attachments[0]`). The builder runs the same checks, and enqueue
//! runs them again, so nothing invalid is ever written. The worker checks once more before
//! sending (a row written by other code), and gives such a message up as permanent.

mod address;
mod attachment;
mod builder;
mod validate;

use std::collections::BTreeMap;

use outbox_derive::OutboxMessage;
use serde::{Deserialize, Serialize};

pub use address::Mailbox;
pub use attachment::{Attachment, MAX_ATTACHMENT_BYTES};
pub use builder::EmailBuilder;

/// An email as an outbox message: enqueue it in the transaction that creates the rows it is
/// about, and a worker running [`Mailer::handler`](crate::Mailer::handler) sends it.
///
/// ```
/// use outbox_smtp::Email;
///
/// let email = Email::builder()
///     .from("Shop <shop@example.com>")
///     .to("Ada Lovelace <ada@example.com>")
///     .subject("Your order 42")
///     .text("Thanks for your order!")
///     .html("<p>Thanks for your <b>order</b>!</p>")
///     .idempotency_key("order-42:confirmation")
///     .build()?;
/// # Ok::<(), outbox_smtp::InvalidMessage>(())
/// ```
///
/// Its type tag is `outbox.email` ([`Email::TYPE`](outbox_core::OutboxMessage::TYPE)). The fields are
/// public so that an application can read and adjust an email (say, in an orphan check or
/// before enqueue); [`validate`](outbox_core::OutboxMessage::validate) runs at enqueue in any case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, OutboxMessage)]
#[outbox(
    crate = "outbox_core",
    type = "outbox.email",
    key_fn = "Email::key",
    validate = "validate::email",
    recipient = "Email::suppression_recipient",
    destination = "Email::destination_domain"
)]
#[non_exhaustive]
pub struct Email {
    /// The sender (`From`).
    pub from: Mailbox,
    /// Primary recipients (`To`).
    #[serde(default)]
    pub to: Vec<Mailbox>,
    /// Copy recipients (`Cc`).
    #[serde(default)]
    pub cc: Vec<Mailbox>,
    /// Blind copy recipients: in the envelope only, never in the sent headers.
    #[serde(default)]
    pub bcc: Vec<Mailbox>,
    /// Where replies go (`Reply-To`).
    #[serde(default)]
    pub reply_to: Option<Mailbox>,
    /// The subject line.
    #[serde(default)]
    pub subject: String,
    /// The plain-text body.
    #[serde(default)]
    pub text: Option<String>,
    /// The HTML body; with a text body too, both are sent as alternatives.
    #[serde(default)]
    pub html: Option<String>,
    /// Extra headers (`X-Campaign: spring`), in order.
    #[serde(default)]
    pub headers: Vec<Header>,
    /// Small attachments, at most [`MAX_ATTACHMENT_BYTES`] in all.
    #[serde(default)]
    pub attachments: Vec<Attachment>,
    /// Labels for the application and for the test-mode redirect (`registration.user`);
    /// never sent.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Data for the application, e.g. what an orphan check looks up; never sent.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// The idempotency key: a second email with the same key is not queued while the
    /// first one's row exists.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// The mailing list this email is bulk mail of (`newsletter`), or `None` for
    /// transactional mail. A list email goes to one recipient; a mailer with
    /// [`MailerConfig::unsubscribe`](crate::MailerConfig::unsubscribe) gives it one-click
    /// unsubscribe headers (RFC 8058) whose token names the recipient and this list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<String>,
}

/// One extra header of an [`Email`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The header name (`X-Campaign`).
    pub name: String,
    /// The header value, without line breaks (non-ASCII text is encoded when sent).
    pub value: String,
}

impl Email {
    /// Starts an email; see [`EmailBuilder`].
    pub fn builder() -> EmailBuilder {
        EmailBuilder::default()
    }

    /// The value of a [`metadata`](Email::metadata) entry.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).map(String::as_str)
    }

    /// True when the email carries `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    /// Every recipient: `to`, then `cc`, then `bcc`.
    pub fn recipients(&self) -> impl Iterator<Item = &Mailbox> {
        self.to.iter().chain(&self.cc).chain(&self.bcc)
    }

    /// The `Message-ID` header this email is sent with as outbox message `id`
    /// (`<id@domain>`), the same on every attempt: the domain is `message_id_domain`
    /// (the mailer's [`MailerConfig`](crate::MailerConfig) setting) when usable, else the
    /// sender's domain, else `outbox.localhost`.
    pub fn message_id(
        &self,
        id: &outbox_core::MessageId,
        message_id_domain: Option<&str>,
    ) -> String {
        crate::render::message_id(id, self, message_id_domain)
    }
}

impl Email {
    /// The idempotency key given to the builder, if any (the derive's `key_fn`).
    fn key(&self) -> Option<String> {
        self.idempotency_key.clone()
    }

    /// The recipient the suppression list checks: the one address of an email to one
    /// recipient (`to`, `cc` and `bcc` together), bulk mail of its `list` if it has one,
    /// transactional otherwise. An email to several recipients is not checked.
    fn suppression_recipient(&self) -> Option<outbox_core::Recipient> {
        let mut all = self.recipients();
        let (Some(one), None) = (all.next(), all.next()) else {
            return None;
        };
        Some(match &self.list {
            Some(list) => outbox_core::Recipient::bulk(one.address.clone(), Some(list.clone())),
            None => outbox_core::Recipient::transactional(one.address.clone()),
        })
    }

    /// The destination traffic shaping groups by: the recipient's domain, for an email to
    /// one recipient (an email to several is not shaped).
    fn destination_domain(&self) -> Option<String> {
        self.suppression_recipient()
            .and_then(|r| crate::shaping::domain_of(&r.address))
    }
}
