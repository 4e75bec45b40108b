//! The consuming side: runs the application's handler for a received event inside the
//! application's database transaction, together with the inbox row that records its id
//! ([`outbox_core::inbox`]). A redelivered event (the broker lost an ack, the relay
//! re-published after a lost confirm) finds its id and is skipped: the handler's effects
//! happen once, end to end. The broker adapters (`nats::consume`, `rabbitmq::consume`)
//! turn their messages into [`Received`] and acknowledge after [`Inbox::handle`] returns.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use outbox_core::{inbox::first_delivery, sqlx, InsertMessages};

/// An event as a consumer received it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Received {
    /// Its id: the outbox message id it was published with (`Nats-Msg-Id`, AMQP
    /// `message_id`).
    pub id: String,
    /// The subject (NATS) or routing key (RabbitMQ) it was published on.
    pub subject: String,
    /// Its headers.
    pub headers: BTreeMap<String, String>,
    /// Its payload.
    pub payload: Vec<u8>,
    /// Whether the broker says it delivered it before.
    pub redelivered: bool,
}

impl Received {
    /// An event received with `id` on `subject`.
    pub fn new(id: impl Into<String>, subject: impl Into<String>, payload: Vec<u8>) -> Self {
        Self {
            id: id.into(),
            subject: subject.into(),
            headers: BTreeMap::new(),
            payload,
            redelivered: false,
        }
    }

    /// With header `name: value`.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Marked as delivered before.
    pub fn redelivered(mut self, yes: bool) -> Self {
        self.redelivered = yes;
        self
    }

    /// The payload parsed as JSON into `T`.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.payload)
    }
}

/// What [`Inbox::handle`] did with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// First delivery: the handler ran and its transaction committed with the id.
    Processed,
    /// The id was processed before: the handler did not run.
    Skipped,
}

/// Why [`Inbox::handle`] did not process an event: nothing of its transaction committed,
/// and the event should be redelivered (not acknowledged).
#[derive(Debug, thiserror::Error)]
pub enum InboxError<E> {
    /// The handler failed.
    #[error("the handler failed: {0}")]
    Handler(E),
    /// The database failed (beginning, recording the id, committing).
    #[error("the inbox's database failed: {0}")]
    Database(#[from] outbox_core::Error),
    /// The event carries no id to recognise a redelivery by.
    #[error(
        "the event has no id (no Nats-Msg-Id header / AMQP message_id): publish it through \
         the outbox relay, or set the id yourself"
    )]
    NoId,
}

/// A consumer's inbox: its name (ids are recorded per consumer, so two services reading
/// the same events each process them once) and the application's pool.
pub struct Inbox<DB: sqlx::Database> {
    pool: sqlx::Pool<DB>,
    consumer: String,
}

impl<DB: sqlx::Database> Clone for Inbox<DB> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            consumer: self.consumer.clone(),
        }
    }
}

impl<DB> Inbox<DB>
where
    DB: sqlx::Database,
    DB::Connection: InsertMessages,
{
    /// The inbox of consumer `consumer` (1 to 100 bytes, e.g. `billing`) in the database of
    /// `pool` (migrated by the outbox: it holds `outbox_inbox`).
    pub fn new(pool: sqlx::Pool<DB>, consumer: impl Into<String>) -> Self {
        Self {
            pool,
            consumer: consumer.into(),
        }
    }

    /// The consumer's name.
    pub fn consumer(&self) -> &str {
        &self.consumer
    }

    /// Runs `handler` for `event` in a new transaction that also records the event's id;
    /// commits both, or neither. A redelivered event is [`Handled::Skipped`] without
    /// running the handler. Acknowledge the event to the broker after an `Ok`, and let it be
    /// redelivered after an `Err`.
    pub async fn handle<E, F>(&self, event: &Received, handler: F) -> Result<Handled, InboxError<E>>
    where
        F: for<'t> FnOnce(
            &'t mut sqlx::Transaction<'static, DB>,
            &'t Received,
        ) -> BoxFuture<'t, Result<(), E>>,
    {
        if event.id.is_empty() {
            return Err(InboxError::NoId);
        }
        let mut tx = self.pool.begin().await.map_err(outbox_core::Error::from)?;
        if !first_delivery(&mut *tx, &self.consumer, &event.id).await? {
            // Nothing written: ending the transaction either way is the same.
            tx.rollback().await.map_err(outbox_core::Error::from)?;
            return Ok(Handled::Skipped);
        }
        handler(&mut tx, event).await.map_err(InboxError::Handler)?;
        tx.commit().await.map_err(outbox_core::Error::from)?;
        Ok(Handled::Processed)
    }
}
