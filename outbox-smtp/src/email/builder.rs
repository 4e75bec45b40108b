//! A builder that reads like the email it makes.

use std::collections::BTreeMap;

use outbox_core::{InvalidMessage, OutboxMessage};

use super::{Attachment, Email, Header, Mailbox};

/// Builds an [`Email`]; [`build`](EmailBuilder::build) checks it the way enqueue does.
///
/// Addresses are anything that converts into a [`Mailbox`]: `"ada@example.com"`,
/// `"Ada Lovelace <ada@example.com>"` or `("Ada Lovelace", "ada@example.com")`.
/// `to`, `cc`, `bcc`, `header`, `attach` and `tag` add one more each time they are called.
#[derive(Debug, Clone, Default)]
#[must_use = "an EmailBuilder does nothing until .build() is called"]
pub struct EmailBuilder {
    from: Option<Mailbox>,
    to: Vec<Mailbox>,
    cc: Vec<Mailbox>,
    bcc: Vec<Mailbox>,
    reply_to: Option<Mailbox>,
    subject: String,
    text: Option<String>,
    html: Option<String>,
    headers: Vec<Header>,
    attachments: Vec<Attachment>,
    tags: Vec<String>,
    metadata: BTreeMap<String, String>,
    idempotency_key: Option<String>,
    list: Option<String>,
}

impl EmailBuilder {
    /// Sets the sender.
    pub fn from(mut self, mailbox: impl Into<Mailbox>) -> Self {
        self.from = Some(mailbox.into());
        self
    }

    /// Adds a primary recipient.
    pub fn to(mut self, mailbox: impl Into<Mailbox>) -> Self {
        self.to.push(mailbox.into());
        self
    }

    /// Adds a copy recipient.
    pub fn cc(mut self, mailbox: impl Into<Mailbox>) -> Self {
        self.cc.push(mailbox.into());
        self
    }

    /// Adds a blind copy recipient (envelope only).
    pub fn bcc(mut self, mailbox: impl Into<Mailbox>) -> Self {
        self.bcc.push(mailbox.into());
        self
    }

    /// Sets where replies go.
    pub fn reply_to(mut self, mailbox: impl Into<Mailbox>) -> Self {
        self.reply_to = Some(mailbox.into());
        self
    }

    /// Sets the subject line.
    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = subject.into();
        self
    }

    /// Sets the plain-text body.
    pub fn text(mut self, body: impl Into<String>) -> Self {
        self.text = Some(body.into());
        self
    }

    /// Sets the HTML body.
    pub fn html(mut self, body: impl Into<String>) -> Self {
        self.html = Some(body.into());
        self
    }

    /// Adds an extra header; a second one with the same name (any case) replaces it.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.headers.retain(|h| !h.name.eq_ignore_ascii_case(&name));
        self.headers.push(Header {
            name,
            value: value.into(),
        });
        self
    }

    /// Attaches a file: its name, MIME type and bytes.
    pub fn attach(
        mut self,
        file_name: impl Into<String>,
        content_type: impl Into<String>,
        bytes: impl Into<Vec<u8>>,
    ) -> Self {
        self.attachments
            .push(Attachment::new(file_name, content_type, bytes));
        self
    }

    /// Adds a tag (never sent; see [`Email::tags`]).
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Sets a metadata entry (never sent; see [`Email::metadata`]).
    pub fn meta(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        self.metadata.insert(key.into(), value.to_string());
        self
    }

    /// Sets the idempotency key (`"registration-42:user"`): a second email with the same
    /// key is reported as a duplicate at enqueue and not queued.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Marks the email as bulk mail of mailing list `list` (`newsletter`): it gets one-click
    /// unsubscribe headers (see [`Email::list`]) and must have exactly one recipient.
    pub fn list(mut self, list: impl Into<String>) -> Self {
        self.list = Some(list.into());
        self
    }

    /// The email, checked as enqueue will check it; the error names the field.
    pub fn build(self) -> Result<Email, InvalidMessage> {
        let from = self.from.ok_or_else(|| {
            InvalidMessage::new("from", "the email has no sender; call .from(..)")
        })?;
        let email = Email {
            from,
            to: self.to,
            cc: self.cc,
            bcc: self.bcc,
            reply_to: self.reply_to,
            subject: self.subject,
            text: self.text,
            html: self.html,
            headers: self.headers,
            attachments: self.attachments,
            tags: self.tags,
            metadata: self.metadata,
            idempotency_key: self.idempotency_key,
            list: self.list,
        };
        email.validate()?;
        Ok(email)
    }
}
