//! Email as an outbox message, delivered fast and safely with lettre.
//!
//! An [`Email`] is an ordinary outbox message (type tag `outbox.email`): build it, enqueue
//! it in the transaction that writes the rows it is about, and register
//! [`Mailer::handler`] for it. The mailer sends through SMTP (lettre 0.11, rustls), into
//! `.eml` files or into the log, as its URL says ([`MailerConfig::from_url`]).
//!
//! ```no_run
//! # async fn demo(pool: sqlx::SqlitePool) -> Result<(), Box<dyn std::error::Error>> {
//! use outbox_core::{Enqueue, Outbox, SqliteBackend};
//! use outbox_smtp::{Email, Mailer};
//!
//! let mailer = Mailer::from_url("smtp://user:password@mail.example.com:587")?;
//! let outbox = Outbox::new(SqliteBackend::new(pool.clone()))
//!     .register::<Email, _>(mailer.handler());
//!
//! let mut tx = pool.begin().await?;
//! // ... the application's rows ...
//! Email::builder()
//!     .from("Shop <shop@example.com>")
//!     .to("ada@example.com")
//!     .subject("Welcome")
//!     .text("Hello Ada")
//!     .idempotency_key("user-1:welcome")
//!     .build()?
//!     .enqueue(&mut *tx)
//!     .await?;
//! tx.commit().await?;
//! # Ok(()) }
//! ```
//!
//! # Speed
//!
//! lettre 0.11.23 never sets `TCP_NODELAY`, so each SMTP command waits ~40 ms for a delayed
//! ACK. The mailer opens its sockets itself with `TCP_NODELAY` and hands them to lettre's
//! protocol code (`AsyncSmtpConnection::connect_with_transport`), keeping a small pool of
//! its own; see `scripts/bench-smtp.sh` for the figures.
//!
//! # Message-ID
//!
//! Every email carries `Message-ID: <{outbox message id}@{domain}>` (the configured
//! `message_id_domain`, else the sender's domain): the same on every attempt, so a
//! duplicate delivery after a crash between the server's `250` and the outbox's ack is
//! recognisable.
//!
//! # Failure handling
//!
//! | what happens | outcome |
//! |---|---|
//! | 4xx reply, connection refused or dropped (also mid-DATA), TLS failure, timeout | retried on the type's schedule, with the reply text |
//! | any failure while connecting: greeting, EHLO, STARTTLS, AUTH (even 5xx) | retried: it concerns the server or the configuration, not this message |
//! | 5xx reply to MAIL FROM, DATA or the message | dead letter now, with the server's reply text |
//! | some recipients refused, others accepted | **sent to the accepted ones and done**; each refusal is logged at WARN with its reply, and is in [`Delivery::refused`] |
//! | every recipient refused | dead letter if all refusals were 5xx, retried if any was 4xx |
//! | invalid email (checked at enqueue and again before sending) | refused at enqueue; dead letter if it reaches a worker |
//!
//! Partial recipients: retrying a message that some recipients already accepted would send
//! it to them again, so a partial delivery is a delivery. A 4xx refusal of one recipient
//! among accepted ones is therefore not retried either; the WARN log line names it.
//!
//! Credentials never appear in logs, errors or `Debug`/`Display` output, and are never
//! sent over an unencrypted connection unless `tls=none` is configured.
//!
//! # Test mode
//!
//! [`TestRedirect`] rewrites every recipient to a test address or domain (optionally only
//! for some tags or message types) and keeps the originals in `X-Outbox-Original-To`,
//! `-Cc` and `-Bcc` headers. It is off unless configured.

#![warn(missing_docs)]

mod config;
mod dev;
mod email;
mod error;
mod mailer;
mod redirect;
mod render;
mod smtp;

pub use config::{Credentials, MailerConfig, Security, SmtpConfig, Transport};
pub use email::{Attachment, Email, EmailBuilder, Header, Mailbox, MAX_ATTACHMENT_BYTES};
pub use error::{ConfigError, RefusedRecipient, SendError, Stage};
pub use mailer::{Delivery, Mailer};
pub use outbox_core::InvalidMessage;
pub use redirect::{RedirectTarget, TestRedirect};
