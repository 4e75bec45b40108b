//! Stand-ins for `enqueue_blocking` while no sync diesel feature is on: an application
//! that calls it gets one compile error naming the features to turn on, instead of
//! "unresolved import `outbox::EnqueueBlocking`".

use super::{EnqueueOptions, Enqueued};
use crate::{error::EnqueueError, message::OutboxMessage};

mod sealed {
    /// Implemented by nothing: no connection enqueues without async in this build.
    pub trait Off {
        /// Never called (nothing implements the trait).
        fn off<T>(&self) -> T;
    }
}

/// Off: sync diesel connections enqueue with the `diesel-postgres`, `diesel-mysql` or
/// `diesel-sqlite` feature of outbox.
#[diagnostic::on_unimplemented(
    message = "`enqueue_blocking` needs the sync diesel feature of outbox for your database, and none is on",
    label = "`{Self}` cannot enqueue without async in this build",
    note = "turn on outbox's `diesel-sqlite`, `diesel-postgres` or `diesel-mysql` feature, \
            e.g. `features = [\"diesel-sqlite\"]` on the outbox dependency for diesel's `SqliteConnection`"
)]
pub trait BlockingConnection: sealed::Off {}

/// Off: `enqueue_blocking` needs a sync diesel feature of outbox.
pub trait EnqueueBlocking: OutboxMessage {
    /// Off: needs a sync diesel feature of outbox.
    fn enqueue_blocking<C>(&self, conn: &mut C) -> Result<Enqueued, EnqueueError>
    where
        C: BlockingConnection + ?Sized,
    {
        conn.off()
    }

    /// Off: needs a sync diesel feature of outbox.
    fn enqueue_blocking_with<C>(
        &self,
        conn: &mut C,
        _options: EnqueueOptions,
    ) -> Result<Enqueued, EnqueueError>
    where
        C: BlockingConnection + ?Sized,
    {
        conn.off()
    }
}

impl<M: OutboxMessage> EnqueueBlocking for M {}

/// Off: needs a sync diesel feature of outbox.
pub fn enqueue_many_blocking<'m, M, C, I>(
    conn: &mut C,
    _messages: I,
    _options: EnqueueOptions,
) -> Result<Vec<Enqueued>, EnqueueError>
where
    M: OutboxMessage,
    C: BlockingConnection + ?Sized,
    I: IntoIterator<Item = &'m M>,
{
    conn.off()
}
