//! Fan-out from an iterator or a stream: messages are prepared and written one insert
//! statement at a time, so memory holds one chunk, whatever the number of messages.

use std::borrow::Borrow;

use futures::{Stream, StreamExt};

use super::{
    insert_chunk, prepare::NewMessage, EnqueueConnection, EnqueueOptions, INSERT_CHUNK,
    INSERT_CHUNK_BYTES,
};
use crate::{error::EnqueueError, message::OutboxMessage};

/// What a fan-out wrote: how many messages are new and how many were skipped because their
/// idempotency key was taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FanOut {
    /// New rows, delivered once the transaction commits.
    pub inserted: u64,
    /// Messages skipped because a message of the type with the same idempotency key
    /// already exists (possibly earlier in the same fan-out).
    pub duplicates: u64,
}

impl FanOut {
    fn add(&mut self, chunk: &[super::Enqueued]) {
        let duplicates = chunk.iter().filter(|r| r.is_duplicate()).count() as u64;
        self.duplicates += duplicates;
        self.inserted += chunk.len() as u64 - duplicates;
    }
}

/// Why a fan-out from a stream stopped.
#[derive(Debug, thiserror::Error)]
pub enum FanOutError<E> {
    /// The stream yielded an error. Messages of earlier chunks may already be written in
    /// the caller's transaction: roll it back (or commit what was written, if that is
    /// what you want; the returned count is in [`FanOutError::Source`]'s `written`).
    #[error("the stream of messages failed after {written:?} were written: {error}")]
    Source {
        /// What the stream yielded.
        error: E,
        /// What was written before it failed.
        written: FanOut,
    },
    /// A message was refused, or the insert failed (see [`EnqueueError`]). Messages of
    /// earlier chunks may already be written in the caller's transaction: roll it back.
    #[error("{error} (after {written:?} were written in this transaction)")]
    Enqueue {
        /// Why.
        error: EnqueueError,
        /// What was written before it failed.
        written: FanOut,
    },
}

impl<E> FanOutError<E> {
    /// What was written in the caller's transaction before the fan-out stopped.
    pub fn written(&self) -> FanOut {
        match self {
            FanOutError::Source { written, .. } | FanOutError::Enqueue { written, .. } => *written,
        }
    }
}

/// A chunk being filled: rows up to [`INSERT_CHUNK`] rows or [`INSERT_CHUNK_BYTES`]
/// payload bytes (a larger single row goes alone).
#[derive(Default)]
struct Chunk {
    rows: Vec<NewMessage>,
    bytes: usize,
}

impl Chunk {
    /// Whether `next` must go into the next chunk.
    fn is_full_before(&self, next: &NewMessage) -> bool {
        !self.rows.is_empty()
            && (self.rows.len() >= INSERT_CHUNK
                || self.bytes + next.payload.len() > INSERT_CHUNK_BYTES)
    }

    fn push(&mut self, row: NewMessage) {
        self.bytes += row.payload.len();
        self.rows.push(row);
    }

    fn take(&mut self) -> Vec<NewMessage> {
        self.bytes = 0;
        std::mem::take(&mut self.rows)
    }
}

/// Writes every message of `messages` (owned or borrowed) in the caller's transaction, one
/// insert statement of up to 1,000 rows at a time: memory holds one chunk, so a fan-out of
/// any size from a lazy iterator runs in constant memory. Returns the counts only (use
/// [`enqueue_many`](super::enqueue_many) to get each message's id).
///
/// Unlike `enqueue_many`, messages are checked chunk by chunk: when one is refused (say a
/// payload over the limit), the chunks before it are already written in the transaction,
/// and the error says how many; roll the transaction back to write none of them.
///
/// ```no_run
/// # #[cfg(feature = "sqlite")]
/// # async fn demo(pool: sqlx::SqlitePool) -> Result<(), Box<dyn std::error::Error>> {
/// # #[derive(serde::Serialize, serde::Deserialize)] struct Newsletter { to: String, issue: u32 }
/// # impl outbox_core::OutboxMessage for Newsletter { const TYPE: &'static str = "newsletter"; }
/// use outbox_core::{enqueue_iter, EnqueueOptions};
///
/// let mut tx = pool.begin().await?;
/// let mails = (0..200_000).map(|i| Newsletter { to: format!("reader{i}@example.com"), issue: 7 });
/// let written = enqueue_iter(&mut *tx, mails, EnqueueOptions::new()).await?;
/// tx.commit().await?;
/// println!("{} queued, {} already there", written.inserted, written.duplicates);
/// # Ok(()) }
/// ```
pub async fn enqueue_iter<M, C, I>(
    mut conn: C,
    messages: I,
    options: EnqueueOptions,
) -> Result<FanOut, EnqueueError>
where
    M: OutboxMessage,
    C: EnqueueConnection,
    I: IntoIterator,
    I::Item: Borrow<M>,
{
    let mut written = FanOut::default();
    let mut chunk = Chunk::default();
    for message in messages {
        let row = NewMessage::prepare(message.borrow(), &options)?;
        if chunk.is_full_before(&row) {
            written.add(&insert_chunk::<M, _>(&mut conn, &chunk.take()).await?);
        }
        chunk.push(row);
    }
    if !chunk.rows.is_empty() {
        written.add(&insert_chunk::<M, _>(&mut conn, &chunk.take()).await?);
    }
    Ok(written)
}

/// [`enqueue_iter`] over a stream of results, such as the rows of a query on another
/// connection (`sqlx::query_as(..).fetch(&pool)` mapped to messages): the stream is read
/// one chunk ahead of the inserts, so memory holds one chunk.
///
/// The stream cannot read through the transaction it writes into (one connection runs one
/// statement at a time): read from the pool. On PostgreSQL and MariaDB another connection
/// sees only committed rows; to fan out from rows written in the same transaction, use a
/// query on the transaction first, or `INSERT … SELECT` (see the messages guide).
///
/// A stream error stops the fan-out with [`FanOutError::Source`]; chunks before it are
/// written in the transaction (roll back to write none).
pub async fn enqueue_stream<M, C, S, E>(
    mut conn: C,
    messages: S,
    options: EnqueueOptions,
) -> Result<FanOut, FanOutError<E>>
where
    M: OutboxMessage,
    C: EnqueueConnection,
    S: Stream<Item = Result<M, E>>,
{
    let mut written = FanOut::default();
    let mut chunk = Chunk::default();
    let mut messages = std::pin::pin!(messages);
    let refused = |error, written| FanOutError::Enqueue { error, written };
    while let Some(message) = messages.next().await {
        let message = message.map_err(|error| FanOutError::Source { error, written })?;
        let row = NewMessage::prepare(&message, &options).map_err(|e| refused(e, written))?;
        if chunk.is_full_before(&row) {
            let done = insert_chunk::<M, _>(&mut conn, &chunk.take())
                .await
                .map_err(|e| refused(e, written))?;
            written.add(&done);
        }
        chunk.push(row);
    }
    if !chunk.rows.is_empty() {
        let done = insert_chunk::<M, _>(&mut conn, &chunk.take())
            .await
            .map_err(|e| refused(e, written))?;
        written.add(&done);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{clock::Due, enqueue::MessageId};

    fn row(bytes: usize) -> NewMessage {
        NewMessage {
            id: MessageId::generate(),
            queue: "t",
            payload: vec![b'x'; bytes],
            due: Due::After(std::time::Duration::ZERO),
            priority: 0,
            max_attempts: 1,
            idempotency_key: None,
            group: None,
            suppression: None,
            order_key: None,
        }
    }

    /// The chunk sizes a fan-out of rows of `sizes` bytes writes.
    fn lens(sizes: &[usize]) -> Vec<usize> {
        let mut chunk = Chunk::default();
        let mut out = Vec::new();
        for &n in sizes {
            let r = row(n);
            if chunk.is_full_before(&r) {
                out.push(chunk.take().len());
            }
            chunk.push(r);
        }
        if !chunk.rows.is_empty() {
            out.push(chunk.take().len());
        }
        out
    }

    #[test]
    fn chunks_end_at_the_row_or_byte_limit_as_a_batch_does() {
        assert_eq!(lens(&[]), Vec::<usize>::new());
        assert_eq!(lens(&[10; 2500]), vec![1000, 1000, 500]);
        let mb = 1024 * 1024;
        assert_eq!(lens(&[mb; 9]), vec![4, 4, 1]);
        assert_eq!(lens(&[10, 5 * mb, 10]), vec![1, 1, 1]);
    }
}
