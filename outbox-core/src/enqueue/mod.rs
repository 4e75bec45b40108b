//! Transactional enqueue: messages are written with the caller's business rows, in the
//! caller's transaction, so they exist exactly when the rows they describe exist.
//!
//! ```ignore
//! let mut tx = pool.begin().await?;
//! sqlx::query("INSERT INTO users (email) VALUES (?)").bind(&email).execute(&mut *tx).await?;
//! WelcomeMail { email }.enqueue(&mut *tx).await?;   // rolled back with the user row
//! tx.commit().await?;
//! ```
//!
//! Failure modes: every input check (serialization, key, options) runs before anything is
//! written, so a refused message leaves the transaction untouched. A duplicate idempotency
//! key is not an error: it is reported as [`Enqueued::Duplicate`] and the transaction stays
//! usable on every backend. Only [`EnqueueError::Database`] may leave part of a batch
//! written; roll back then.

mod message_id;
mod options;
mod prepare;

use std::future::Future;

use futures::future::BoxFuture;

pub use message_id::MessageId;
pub use options::EnqueueOptions;
pub use prepare::NewMessage;

use crate::{EnqueueError, OutboxMessage};

/// Rows per insert statement when a batch is written.
pub(crate) const INSERT_CHUNK: usize = 1000;

/// What an enqueue did with one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    /// A new row was written; it is delivered once the transaction commits.
    New(MessageId),
    /// A message of the same type with the same idempotency key already exists (possibly
    /// earlier in the same transaction or batch); nothing was written.
    Duplicate {
        /// The id of the message that holds the key.
        existing: MessageId,
    },
}

impl Enqueued {
    /// The id of the message that will be delivered for this enqueue.
    pub fn id(&self) -> &MessageId {
        match self {
            Enqueued::New(id) => id,
            Enqueued::Duplicate { existing } => existing,
        }
    }

    /// True when the message was skipped as a duplicate.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Enqueued::Duplicate { .. })
    }
}

/// A database connection messages can be written through: the backends implement it for
/// their connection type, so `&mut *tx` of an open `sqlx::Transaction` works.
pub trait EnqueueConnection: Send {
    /// Writes prepared rows, skipping those whose idempotency key is taken, and reports
    /// one [`Enqueued`] per row in input order.
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>>;
}

/// `enqueue` and `enqueue_with` for every [`OutboxMessage`].
pub trait Enqueue: OutboxMessage {
    /// Writes this message in the caller's transaction with the type's defaults.
    fn enqueue<'a, C>(
        &'a self,
        conn: &'a mut C,
    ) -> impl Future<Output = Result<Enqueued, EnqueueError>> + Send + 'a
    where
        C: EnqueueConnection + ?Sized,
    {
        self.enqueue_with(conn, EnqueueOptions::new())
    }

    /// Writes this message in the caller's transaction with explicit options.
    fn enqueue_with<'a, C>(
        &'a self,
        conn: &'a mut C,
        options: EnqueueOptions,
    ) -> impl Future<Output = Result<Enqueued, EnqueueError>> + Send + 'a
    where
        C: EnqueueConnection + ?Sized,
    {
        async move {
            let mut done = enqueue_many_with(conn, std::iter::once(self), options).await?;
            Ok(done.pop().expect("one row in, one result out"))
        }
    }
}

impl<M: OutboxMessage> Enqueue for M {}

/// Writes many messages of one type in the caller's transaction (fan-out), with the
/// type's defaults. Results come back in input order.
pub async fn enqueue_many<'m, M, C, I>(
    conn: &mut C,
    messages: I,
) -> Result<Vec<Enqueued>, EnqueueError>
where
    M: OutboxMessage,
    C: EnqueueConnection + ?Sized,
    I: IntoIterator<Item = &'m M>,
{
    enqueue_many_with(conn, messages, EnqueueOptions::new()).await
}

/// [`enqueue_many`] with options shared by every message of the batch.
///
/// All messages are checked and serialized before the first row is written.
pub async fn enqueue_many_with<'m, M, C, I>(
    conn: &mut C,
    messages: I,
    options: EnqueueOptions,
) -> Result<Vec<Enqueued>, EnqueueError>
where
    M: OutboxMessage,
    C: EnqueueConnection + ?Sized,
    I: IntoIterator<Item = &'m M>,
{
    let now = std::time::SystemTime::now();
    let rows = messages
        .into_iter()
        .map(|m| NewMessage::prepare(m, &options, now))
        .collect::<Result<Vec<_>, _>>()?;
    let mut results = Vec::with_capacity(rows.len());
    for chunk in rows.chunks(INSERT_CHUNK) {
        let done = conn
            .insert_messages(chunk)
            .await
            .map_err(|source| EnqueueError::Database {
                type_tag: M::TYPE,
                source,
            })?;
        results.extend(done);
    }
    Ok(results)
}
