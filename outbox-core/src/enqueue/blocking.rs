//! Enqueue from code that does not run in async: a sync diesel connection inside
//! `conn.transaction(|conn| …)`.
//!
//! ```no_run
//! # #[cfg(feature = "diesel-postgres")]
//! # fn demo(conn: &mut diesel::PgConnection) -> Result<(), Box<dyn std::error::Error>> {
//! use diesel::{Connection, RunQueryDsl};
//! use outbox_core::EnqueueBlocking;
//! # #[derive(serde::Serialize, serde::Deserialize)] struct WelcomeMail { email: String }
//! # impl outbox_core::OutboxMessage for WelcomeMail { const TYPE: &'static str = "welcome_mail"; }
//!
//! conn.transaction(|conn| {
//!     diesel::sql_query("INSERT INTO users (email) VALUES ('ada@example.com')").execute(conn)?;
//!     WelcomeMail { email: "ada@example.com".into() }.enqueue_blocking(conn)?; // rolled back with the user
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok(()) }
//! ```

use super::{enqueue_many_with, Enqueue, EnqueueOptions, Enqueued, InsertMessages};
use crate::{error::EnqueueError, message::OutboxMessage};

/// A connection whose statements run on the calling thread, so that an enqueue through it
/// can be waited for without an async runtime: diesel's sync `PgConnection`,
/// `MysqlConnection` and `SqliteConnection` (features `diesel-postgres`, `diesel-mysql`,
/// `diesel-sqlite`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a connection the outbox can enqueue through without async",
    note = "`enqueue_blocking` takes a sync diesel connection (`PgConnection`, `MysqlConnection`, \
            `SqliteConnection`, with outbox's `diesel-postgres`, `diesel-mysql` or \
            `diesel-sqlite` feature); an async connection enqueues with `.enqueue(..).await`"
)]
pub trait BlockingConnection: InsertMessages {}

/// `enqueue_blocking` for every message: [`Enqueue::enqueue`] through a
/// [`BlockingConnection`], on the calling thread.
pub trait EnqueueBlocking: OutboxMessage {
    /// Writes this message in the caller's transaction with the type's defaults.
    fn enqueue_blocking<C>(&self, conn: &mut C) -> Result<Enqueued, EnqueueError>
    where
        C: BlockingConnection + ?Sized,
    {
        self.enqueue_blocking_with(conn, EnqueueOptions::new())
    }

    /// Writes this message in the caller's transaction with explicit options.
    fn enqueue_blocking_with<C>(
        &self,
        conn: &mut C,
        options: EnqueueOptions,
    ) -> Result<Enqueued, EnqueueError>
    where
        C: BlockingConnection + ?Sized,
    {
        futures::executor::block_on(self.enqueue_with(conn, options))
    }
}

impl<M: OutboxMessage> EnqueueBlocking for M {}

/// [`enqueue_many_with`] through a [`BlockingConnection`], on the calling thread.
pub fn enqueue_many_blocking<'m, M, C, I>(
    conn: &mut C,
    messages: I,
    options: EnqueueOptions,
) -> Result<Vec<Enqueued>, EnqueueError>
where
    M: OutboxMessage,
    C: BlockingConnection + ?Sized,
    I: IntoIterator<Item = &'m M>,
{
    futures::executor::block_on(enqueue_many_with(conn, messages, options))
}
