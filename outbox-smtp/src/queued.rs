//! A drop-in for code that sends with lettre: [`QueuedTransport`] implements lettre's
//! `AsyncTransport`, and its `send` enqueues the built message (its RFC 5322 bytes and its
//! envelope) as a [`RawEmail`] instead of sending it. A worker delivers it through the
//! [`Mailer`](crate::Mailer) ([`Mailer::raw_handler`](crate::Mailer::raw_handler)), with
//! the mailer's failure classification, its test-mode redirect and its circuit breaker,
//! keeping the message's own `Message-ID` (one is assigned when it has none).
//!
//! Switching an application is one line, where the transport is built:
//!
//! ```no_run
//! # async fn demo(pool: sqlx::SqlitePool) -> Result<(), Box<dyn std::error::Error>> {
//! use lettre::{AsyncTransport, Message};
//! use outbox_smtp::{QueuedTransport, TxTransport};
//!
//! // was: let mailer = AsyncSmtpTransport::<Tokio1Executor>::relay("smtp.example.com")?.build();
//! let mailer = QueuedTransport::new(pool.clone());
//!
//! let email = Message::builder()
//!     .from("Shop <shop@example.com>".parse()?)
//!     .to("ada@example.com".parse()?)
//!     .subject("Your order")
//!     .body(String::from("Thanks!"))?;
//! mailer.send(email).await?; // enqueued; a worker sends it
//!
//! // In the application's transaction, with the rows it writes:
//! let mut tx = pool.begin().await?;
//! # let email = Message::builder().from("a@example.com".parse()?).to("b@example.com".parse()?).body(String::new())?;
//! TxTransport::new(&mut *tx).send(email).await?;
//! tx.commit().await?;
//! # Ok(()) }
//! ```
//!
//! Failure modes: `send` fails with the enqueue's error (the database, a payload larger
//! than [`RAW_EMAIL_MAX_BYTES`]); nothing is sent then. A message without sender or
//! recipients is refused by lettre's own envelope check before it gets here.

use async_trait::async_trait;
use lettre::address::Envelope;
use outbox_core::{
    sqlx, Enqueue, EnqueueConnection, EnqueueError, EnqueueOptions, InsertMessages, InvalidMessage,
    MessageDefaults, MessageId, OutboxMessage,
};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

/// The largest raw email accepted, in bytes of the message (its JSON payload is a third
/// larger, base64): 10 MiB. Large attachments belong in storage, with a link in the mail.
pub const RAW_EMAIL_MAX_BYTES: usize = 10 * 1024 * 1024;

/// A built email as lettre formats it, with its envelope: what [`QueuedTransport`]
/// enqueues. Type tag `outbox.raw_email`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawEmail {
    /// The envelope sender (`MAIL FROM`); `None` for the null sender `<>`.
    pub from: Option<String>,
    /// The envelope recipients (`RCPT TO`).
    pub to: Vec<String>,
    /// The message, RFC 5322 bytes (CRLF line ends).
    #[serde(with = "base64_bytes")]
    pub data: Vec<u8>,
}

impl OutboxMessage for RawEmail {
    const TYPE: &'static str = "outbox.raw_email";
    const DEFAULTS: MessageDefaults = MessageDefaults {
        max_payload: RAW_EMAIL_MAX_BYTES / 3 * 4 + 64 * 1024,
        ..MessageDefaults::DEFAULT
    };
    const HAS_RECIPIENT: bool = true;

    /// An envelope with one recipient is checked against the suppression list as
    /// transactional mail (the outbox does not read the message's headers for a list).
    fn recipient(&self) -> Option<outbox_core::Recipient> {
        match self.to.as_slice() {
            [one] => Some(outbox_core::Recipient::transactional(one.clone())),
            _ => None,
        }
    }

    const HAS_DESTINATION: bool = true;

    /// The envelope's one recipient's domain, for traffic shaping (several: not shaped).
    fn destination(&self) -> Option<String> {
        self.recipient()
            .and_then(|r| crate::shaping::domain_of(&r.address))
    }

    fn validate(&self) -> Result<(), InvalidMessage> {
        if self.to.is_empty() {
            return Err(InvalidMessage::new(
                "to",
                "the envelope has no recipient; add one to the message",
            ));
        }
        for (i, a) in self.to.iter().enumerate() {
            a.parse::<lettre::Address>().map_err(|e| {
                InvalidMessage::new(format!("to[{i}]"), format!("{a:?} is not an address: {e}"))
            })?;
        }
        match &self.from {
            Some(a) => {
                a.parse::<lettre::Address>().map_err(|e| {
                    InvalidMessage::new("from", format!("{a:?} is not an address: {e}"))
                })?;
            }
            None => {
                return Err(InvalidMessage::new(
                    "from",
                    "the envelope has no sender (the null sender `<>` of bounces is not sent \
                     by the outbox); give the message a From address",
                ))
            }
        }
        let bare_lf = self
            .data
            .iter()
            .enumerate()
            .any(|(i, b)| *b == b'\n' && (i == 0 || self.data[i - 1] != b'\r'));
        if bare_lf {
            return Err(InvalidMessage::new(
                "data",
                "the message has a line that ends in LF alone; SMTP needs CRLF: send a lettre \
                 `Message` (its `formatted()` bytes end lines in CRLF) or convert the line ends",
            ));
        }
        if self.data.len() > RAW_EMAIL_MAX_BYTES {
            return Err(InvalidMessage::new(
                "data",
                format!(
                    "the message is {} bytes; the limit is {RAW_EMAIL_MAX_BYTES}: link large files instead of attaching them",
                    self.data.len()
                ),
            ));
        }
        Ok(())
    }
}

impl RawEmail {
    /// The raw email of a lettre envelope and message bytes.
    pub fn new(envelope: &Envelope, data: &[u8]) -> Self {
        Self {
            from: envelope.from().map(|a| a.to_string()),
            to: envelope.to().iter().map(|a| a.to_string()).collect(),
            data: data.to_vec(),
        }
    }
}

mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

/// A lettre `AsyncTransport` that enqueues each message on its own connection from
/// `pool` (committed at once) instead of sending it; `Ok` is the outbox message's id.
/// For the application's transaction, use [`TxTransport`].
pub struct QueuedTransport<DB: sqlx::Database> {
    pool: sqlx::Pool<DB>,
    options: EnqueueOptions,
}

impl<DB: sqlx::Database> Clone for QueuedTransport<DB> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            options: self.options.clone(),
        }
    }
}

impl<DB: sqlx::Database> QueuedTransport<DB> {
    /// Enqueues through connections of `pool`.
    pub fn new(pool: sqlx::Pool<DB>) -> Self {
        Self {
            pool,
            options: EnqueueOptions::new(),
        }
    }

    /// Enqueues with `options` (a group, a delay, a priority, attempts).
    pub fn with_options(mut self, options: EnqueueOptions) -> Self {
        self.options = options;
        self
    }
}

#[async_trait]
impl<DB> lettre::AsyncTransport for QueuedTransport<DB>
where
    DB: sqlx::Database,
    DB::Connection: InsertMessages,
{
    type Ok = MessageId;
    type Error = EnqueueError;

    async fn send_raw(&self, envelope: &Envelope, email: &[u8]) -> Result<MessageId, EnqueueError> {
        let mut conn = self.pool.acquire().await.map_err(pool_error)?;
        enqueue(&mut *conn, envelope, email, self.options.clone()).await
    }
}

/// A lettre `AsyncTransport` over the application's open transaction: each `send`
/// enqueues in that transaction, so the email goes out only if it commits.
pub struct TxTransport<'c, C: ?Sized> {
    conn: Mutex<&'c mut C>,
    options: EnqueueOptions,
}

impl<'c, C: InsertMessages + ?Sized> TxTransport<'c, C> {
    /// A transport that enqueues through `conn` — the application's open transaction
    /// (`&mut *tx`) — so the email is sent only if the transaction commits.
    pub fn new(conn: &'c mut C) -> Self {
        Self {
            conn: Mutex::new(conn),
            options: EnqueueOptions::new(),
        }
    }

    /// Enqueues with `options` (a group, a delay, a priority, attempts).
    pub fn with_options(mut self, options: EnqueueOptions) -> Self {
        self.options = options;
        self
    }
}

#[async_trait]
impl<C> lettre::AsyncTransport for TxTransport<'_, C>
where
    C: InsertMessages + ?Sized,
{
    type Ok = MessageId;
    type Error = EnqueueError;

    async fn send_raw(&self, envelope: &Envelope, email: &[u8]) -> Result<MessageId, EnqueueError> {
        let mut conn = self.conn.lock().await;
        enqueue(&mut **conn, envelope, email, self.options.clone()).await
    }
}

/// Enqueues one raw email through `conn`. Raw emails carry no idempotency key: each send is
/// a new message, as it was a new delivery with lettre.
async fn enqueue<C: EnqueueConnection>(
    conn: C,
    envelope: &Envelope,
    email: &[u8],
    options: EnqueueOptions,
) -> Result<MessageId, EnqueueError> {
    let raw = RawEmail::new(envelope, email);
    let enqueued = raw.enqueue_with(conn, options).await?;
    Ok(enqueued.id().clone())
}

/// A connection that could not be had from the pool, as an enqueue error.
fn pool_error(source: sqlx::Error) -> EnqueueError {
    EnqueueError::Database {
        type_tag: RawEmail::TYPE,
        source,
    }
}
