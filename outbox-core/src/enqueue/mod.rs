//! Transactional enqueue: messages are written with the caller's business rows, in the
//! caller's transaction, so they exist exactly when the rows they describe exist.
//!
//! ```no_run
//! # #[cfg(feature = "sqlite")]
//! # async fn demo(pool: sqlx::SqlitePool, email: String) -> Result<(), Box<dyn std::error::Error>> {
//! # use outbox_core::Enqueue;
//! # #[derive(serde::Serialize, serde::Deserialize)] struct WelcomeMail { email: String }
//! # impl outbox_core::OutboxMessage for WelcomeMail { const TYPE: &'static str = "welcome_mail"; }
//! let mut tx = pool.begin().await?;
//! sqlx::query("INSERT INTO users (email) VALUES (?)").bind(&email).execute(&mut *tx).await?;
//! WelcomeMail { email }.enqueue(&mut *tx).await?;   // rolled back with the user row
//! tx.commit().await?;
//! # Ok(()) }
//! ```
//!
//! Failure modes: every input check (serialization, key, options) runs before anything is
//! written, so a refused message leaves the transaction untouched. A duplicate idempotency
//! key is not an error: it is reported as [`Enqueued::Duplicate`] and the transaction stays
//! usable on every backend. Only [`EnqueueError::Database`] may leave part of a batch
//! written; roll back then. After [`EnqueueError::TransactionAborted`] and
//! [`EnqueueError::LockTimeout`] the whole transaction is lost and nothing of it commits
//! afterwards, on every backend (MariaDB/MySQL: the connection is left in a read-only
//! transaction; SQLite: its commit fails): run it again, e.g. with
//! [`retry_transaction`](crate::retry_transaction).

#[cfg(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
mod blocking;
#[cfg(not(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
)))]
mod blocking_off;
mod fan_out;
mod message_id;
mod options;
mod prepare;
mod select;

use futures::future::BoxFuture;

#[cfg(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
pub use blocking::{enqueue_many_blocking, BlockingConnection, EnqueueBlocking};
#[cfg(not(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
)))]
pub use blocking_off::{enqueue_many_blocking, BlockingConnection, EnqueueBlocking};
pub use fan_out::{enqueue_iter, enqueue_stream, FanOut, FanOutError};
pub use message_id::MessageId;
pub use options::EnqueueOptions;
pub(crate) use prepare::check_group;
pub use prepare::{NewMessage, MAX_GROUP_NAME_LEN};
pub use select::{enqueue_select, Select, SelectArg, SelectInsert, SelectWritten};

use crate::{error::EnqueueError, message::OutboxMessage};

/// Rows per insert statement when a batch is written.
pub(crate) const INSERT_CHUNK: usize = 1000;

/// Payload bytes per insert statement when a batch is written (a statement ends at
/// whichever limit comes first), well below MariaDB's default 16 MiB `max_allowed_packet`.
pub(crate) const INSERT_CHUNK_BYTES: usize = 4 * 1024 * 1024;

/// What an enqueue did with one message: written, or skipped as a duplicate of a message
/// that holds the same idempotency key.
///
/// Look at it: a duplicate wrote nothing, so a key built from something reused (a recycled
/// id, a day that repeats) silently drops the new message. Choose keys that name the event
/// itself (`signup:{user_id}`, `order-shipped:{order_id}`); each duplicate is also logged at
/// DEBUG with the existing message's id.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a duplicate wrote nothing: check `is_duplicate()` (or match) when the idempotency key could repeat"]
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

/// What `enqueue` takes: a mutable borrow of a connection messages can be written through
/// (`&mut *tx` or `&mut tx` of an open `sqlx::Transaction`, or a pooled connection).
///
/// A `Pool` is deliberately not one: a message belongs in the transaction that writes the
/// rows it describes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a connection the outbox can enqueue through",
    label = "not a transaction or connection of an enabled layer and database",
    note = "enqueue inside the transaction that writes your rows: \
            `let mut tx = pool.begin().await?; msg.enqueue(&mut *tx).await?; tx.commit().await?;` \
            (a pool cannot; to enqueue on its own, pass `&mut *pool.acquire().await?`)",
    note = "a transaction of another version (sqlx 0.7, SeaORM 1) is another type with the same \
            name: `cargo tree -i sqlx` shows the versions in the build; sqlx 0.8 cannot enqueue \
            on SQLite (it links another version of the SQLite C library than sqlx 0.9)"
)]
#[cfg_attr(
    not(feature = "sqlx08"),
    diagnostic::on_unimplemented(
        note = "sqlx 0.8 (PostgreSQL, MySQL) is the `sqlx08` feature of outbox, off in this \
                build: add `features = [\"sqlx08\"]` to the outbox dependency"
    )
)]
#[cfg_attr(
    not(feature = "sea-orm"),
    diagnostic::on_unimplemented(
        note = "SeaORM 2 is the `sea-orm` feature of outbox, off in this build: add \
                `features = [\"sea-orm\"]` to the outbox dependency"
    )
)]
#[cfg_attr(
    not(feature = "diesel-async"),
    diagnostic::on_unimplemented(
        note = "diesel-async is the `diesel-async` feature of outbox, off in this build: add \
                `features = [\"diesel-async\"]` to the outbox dependency"
    )
)]
#[cfg_attr(
    not(all(
        feature = "diesel-postgres",
        feature = "diesel-mysql",
        feature = "diesel-sqlite"
    )),
    diagnostic::on_unimplemented(
        note = "sync diesel is one feature of outbox per database: `diesel-postgres`, \
                `diesel-mysql`, `diesel-sqlite`"
    )
)]
#[cfg_attr(
    not(all(feature = "sqlite", feature = "postgres", feature = "mysql")),
    diagnostic::on_unimplemented(
        note = "the connection's database is a feature of outbox too: `sqlite`, `postgres`, \
                `mysql`"
    )
)]
pub trait EnqueueConnection: Send {
    /// The connection the rows are written through.
    type Connection: InsertMessages + ?Sized;

    /// The connection, borrowed for one statement.
    fn connection(&mut self) -> &mut Self::Connection;
}

// Not recommended: a type that is no connection is reported as itself, with the notes
// above, instead of as a list of every connection type the outbox knows.
#[diagnostic::do_not_recommend]
impl<T: InsertMessages + ?Sized> EnqueueConnection for &mut T {
    type Connection = T;

    fn connection(&mut self) -> &mut T {
        self
    }
}

/// A connection type the backends can write message rows through: sqlx 0.9's
/// `SqliteConnection`, `PgConnection`, `MySqlConnection`, and a `sqlx::Transaction` or
/// `sqlx::pool::PoolConnection` over one of them; with the connection-layer features, sqlx
/// 0.8's (`sqlx08`), SeaORM 2's `DatabaseTransaction` (`sea-orm`), diesel-async's
/// connections (`diesel-async`) and sync diesel's (`diesel-postgres`, `diesel-mysql`,
/// `diesel-sqlite`). Applications pass `&mut` of one of these
/// to `enqueue` ([`EnqueueConnection`]); they do not call it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a connection the outbox can enqueue through",
    label = "not a transaction or connection of an enabled layer and database",
    note = "enqueue inside the transaction that writes your rows: \
            `let mut tx = pool.begin().await?; msg.enqueue(&mut *tx).await?; tx.commit().await?;` \
            (a pool cannot; to enqueue on its own, pass `&mut *pool.acquire().await?`)",
    note = "a transaction of another version (sqlx 0.7, SeaORM 1) is another type with the same \
            name: `cargo tree -i sqlx` shows the versions in the build; sqlx 0.8 cannot enqueue \
            on SQLite (it links another version of the SQLite C library than sqlx 0.9)"
)]
#[cfg_attr(
    not(feature = "sqlx08"),
    diagnostic::on_unimplemented(
        note = "sqlx 0.8 (PostgreSQL, MySQL) is the `sqlx08` feature of outbox, off in this \
                build: add `features = [\"sqlx08\"]` to the outbox dependency"
    )
)]
#[cfg_attr(
    not(feature = "sea-orm"),
    diagnostic::on_unimplemented(
        note = "SeaORM 2 is the `sea-orm` feature of outbox, off in this build: add \
                `features = [\"sea-orm\"]` to the outbox dependency"
    )
)]
#[cfg_attr(
    not(feature = "diesel-async"),
    diagnostic::on_unimplemented(
        note = "diesel-async is the `diesel-async` feature of outbox, off in this build: add \
                `features = [\"diesel-async\"]` to the outbox dependency"
    )
)]
#[cfg_attr(
    not(all(
        feature = "diesel-postgres",
        feature = "diesel-mysql",
        feature = "diesel-sqlite"
    )),
    diagnostic::on_unimplemented(
        note = "sync diesel is one feature of outbox per database: `diesel-postgres`, \
                `diesel-mysql`, `diesel-sqlite`"
    )
)]
#[cfg_attr(
    not(all(feature = "sqlite", feature = "postgres", feature = "mysql")),
    diagnostic::on_unimplemented(
        note = "the connection's database is a feature of outbox too: `sqlite`, `postgres`, \
                `mysql`"
    )
)]
pub trait InsertMessages: Send {
    /// Writes prepared rows, skipping those whose idempotency key is taken, and reports
    /// one [`Enqueued`] per row in input order.
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>>;

    /// Writes one message per row of `insert`'s query in one `INSERT … SELECT`, skipping
    /// rows whose idempotency key is taken; says how many it wrote and the first one's
    /// payload ([`enqueue_select`]).
    fn insert_select<'a>(
        &'a mut self,
        insert: &'a SelectInsert<'a>,
    ) -> BoxFuture<'a, Result<SelectWritten, sqlx::Error>>;

    /// The unfinished (queued or running) messages of `type_tag` this connection sees —
    /// its own transaction's uncommitted ones included — oldest first. What the test
    /// helpers read back.
    fn queued_rows<'a>(
        &'a mut self,
        type_tag: &'a str,
    ) -> BoxFuture<'a, Result<Vec<QueuedRow>, sqlx::Error>>;

    /// Records in the inbox that `consumer` processed message `id` at `at_ms` (unix ms):
    /// true when the row is new, false when the pair was recorded before (a concurrent
    /// record of the pair waits for the other transaction). What
    /// [`crate::inbox::first_delivery`] runs; lengths are checked there.
    fn record_processed<'a>(
        &'a mut self,
        consumer: &'a str,
        id: &'a str,
        at_ms: i64,
    ) -> BoxFuture<'a, Result<bool, sqlx::Error>>;
}

/// One unfinished message as written ([`InsertMessages::queued_rows`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedRow {
    /// Its id.
    pub id: MessageId,
    /// Its JSON payload.
    pub payload: Vec<u8>,
    /// Its group, if any.
    pub group: Option<String>,
    /// When it is due.
    pub due_at: std::time::SystemTime,
    /// Its priority.
    pub priority: i64,
    /// Attempts counted so far.
    pub attempts: u32,
    /// Attempts it may use.
    pub max_attempts: u32,
    /// Its idempotency key, if any.
    pub idempotency_key: Option<String>,
    /// Claimed by a worker now.
    pub running: bool,
}

impl<DB> InsertMessages for sqlx::Transaction<'_, DB>
where
    DB: sqlx::Database,
    DB::Connection: InsertMessages,
{
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>> {
        (**self).insert_messages(rows)
    }

    fn insert_select<'a>(
        &'a mut self,
        insert: &'a SelectInsert<'a>,
    ) -> BoxFuture<'a, Result<SelectWritten, sqlx::Error>> {
        (**self).insert_select(insert)
    }

    fn queued_rows<'a>(
        &'a mut self,
        type_tag: &'a str,
    ) -> BoxFuture<'a, Result<Vec<QueuedRow>, sqlx::Error>> {
        (**self).queued_rows(type_tag)
    }

    fn record_processed<'a>(
        &'a mut self,
        consumer: &'a str,
        id: &'a str,
        at_ms: i64,
    ) -> BoxFuture<'a, Result<bool, sqlx::Error>> {
        (**self).record_processed(consumer, id, at_ms)
    }
}

impl<DB> InsertMessages for sqlx::pool::PoolConnection<DB>
where
    DB: sqlx::Database,
    DB::Connection: InsertMessages,
{
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>> {
        (**self).insert_messages(rows)
    }

    fn insert_select<'a>(
        &'a mut self,
        insert: &'a SelectInsert<'a>,
    ) -> BoxFuture<'a, Result<SelectWritten, sqlx::Error>> {
        (**self).insert_select(insert)
    }

    fn queued_rows<'a>(
        &'a mut self,
        type_tag: &'a str,
    ) -> BoxFuture<'a, Result<Vec<QueuedRow>, sqlx::Error>> {
        (**self).queued_rows(type_tag)
    }

    fn record_processed<'a>(
        &'a mut self,
        consumer: &'a str,
        id: &'a str,
        at_ms: i64,
    ) -> BoxFuture<'a, Result<bool, sqlx::Error>> {
        (**self).record_processed(consumer, id, at_ms)
    }
}

/// `enqueue` and `enqueue_with` for every [`OutboxMessage`].
///
/// They return a boxed future (one allocation beside a database round trip): a connection
/// the outbox cannot enqueue through is then one compile error at the call, not one per
/// place the future's type is checked.
pub trait Enqueue: OutboxMessage {
    /// Writes this message in the caller's transaction with the type's defaults.
    fn enqueue<'a, C>(&'a self, conn: C) -> BoxFuture<'a, Result<Enqueued, EnqueueError>>
    where
        C: EnqueueConnection + 'a,
    {
        self.enqueue_with(conn, EnqueueOptions::new())
    }

    /// Writes this message in the caller's transaction with explicit options.
    fn enqueue_with<'a, C>(
        &'a self,
        conn: C,
        options: EnqueueOptions,
    ) -> BoxFuture<'a, Result<Enqueued, EnqueueError>>
    where
        C: EnqueueConnection + 'a,
    {
        Box::pin(async move {
            let mut done = enqueue_many_with(conn, std::iter::once(self), options).await?;
            Ok(done.pop().expect("one row in, one result out"))
        })
    }
}

impl<M: OutboxMessage> Enqueue for M {}

/// Writes many messages of one type in the caller's transaction (fan-out), with the
/// type's defaults. Results come back in input order.
pub async fn enqueue_many<'m, M, C, I>(conn: C, messages: I) -> Result<Vec<Enqueued>, EnqueueError>
where
    M: OutboxMessage,
    C: EnqueueConnection,
    I: IntoIterator<Item = &'m M>,
{
    enqueue_many_with(conn, messages, EnqueueOptions::new()).await
}

/// [`enqueue_many`] with options shared by every message of the batch.
///
/// All messages are checked and serialized before the first row is written.
pub async fn enqueue_many_with<'m, M, C, I>(
    mut conn: C,
    messages: I,
    options: EnqueueOptions,
) -> Result<Vec<Enqueued>, EnqueueError>
where
    M: OutboxMessage,
    C: EnqueueConnection,
    I: IntoIterator<Item = &'m M>,
{
    let rows = messages
        .into_iter()
        .map(|m| NewMessage::prepare(m, &options))
        .collect::<Result<Vec<_>, _>>()?;
    let mut results = Vec::with_capacity(rows.len());
    for chunk in chunks(&rows) {
        results.extend(insert_chunk::<M, _>(&mut conn, chunk).await?);
    }
    Ok(results)
}

/// Writes one chunk of prepared `M` rows (one insert statement) and counts the new ones.
async fn insert_chunk<M, C>(
    conn: &mut C,
    chunk: &[NewMessage],
) -> Result<Vec<Enqueued>, EnqueueError>
where
    M: OutboxMessage,
    C: EnqueueConnection,
{
    let done = conn
        .connection()
        .insert_messages(chunk)
        .await
        .map_err(|source| {
            let bytes = chunk.iter().map(|m| m.payload.len()).sum();
            EnqueueError::from_insert(M::TYPE, bytes, source)
        })?;
    for (row, result) in chunk.iter().zip(&done) {
        if let Enqueued::Duplicate { existing } = result {
            tracing::debug!(
                message.type = M::TYPE, existing = %existing,
                idempotency_key = row.idempotency_key.as_deref().unwrap_or_default(),
                "not enqueued: a message of this type with this idempotency key exists"
            );
        }
    }
    let new = done.iter().filter(|r| !r.is_duplicate()).count();
    metrics::counter!(crate::counters::names::ENQUEUED, "type" => M::TYPE).increment(new as u64);
    Ok(done)
}

/// Splits `rows` into insert statements of at most [`INSERT_CHUNK`] rows and, unless one
/// row alone is larger, [`INSERT_CHUNK_BYTES`] payload bytes.
fn chunks(rows: &[NewMessage]) -> impl Iterator<Item = &[NewMessage]> {
    let mut rest = rows;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut bytes = 0;
        let mut end = 0;
        while end < rest.len().min(INSERT_CHUNK) {
            bytes += rest[end].payload.len();
            if end > 0 && bytes > INSERT_CHUNK_BYTES {
                break;
            }
            end += 1;
        }
        let (chunk, tail) = rest.split_at(end);
        rest = tail;
        Some(chunk)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(sizes: &[usize]) -> Vec<NewMessage> {
        sizes
            .iter()
            .map(|&n| NewMessage {
                id: MessageId::generate(),
                queue: "t",
                payload: vec![b'x'; n],
                due: crate::clock::Due::After(std::time::Duration::ZERO),
                priority: 0,
                max_attempts: 1,
                idempotency_key: None,
                group: None,
                suppression: None,
                order_key: None,
            })
            .collect()
    }

    fn lens(sizes: &[usize]) -> Vec<usize> {
        chunks(&rows(sizes)).map(<[NewMessage]>::len).collect()
    }

    #[test]
    fn statements_end_at_the_row_or_byte_limit() {
        assert_eq!(lens(&[]), Vec::<usize>::new());
        assert_eq!(lens(&[10; 2500]), vec![1000, 1000, 500]);
        let mb = 1024 * 1024;
        assert_eq!(lens(&[mb; 9]), vec![4, 4, 1]);
        // A row larger than the byte budget still goes, alone.
        assert_eq!(lens(&[10, 5 * mb, 10]), vec![1, 1, 1]);
    }
}
