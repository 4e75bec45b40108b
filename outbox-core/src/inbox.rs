//! The inbox: effectively-once processing of messages that arrive more than once (a broker
//! redelivers after a lost ack, a relay re-publishes after a lost confirm).
//!
//! A consumer runs its handler inside its own database transaction and, in that same
//! transaction, records the message's id with [`first_delivery`]. The record and the
//! handler's rows commit together or not at all: a redelivered message finds its id and
//! is skipped, a handler that failed left no id behind and runs again. Two consumers
//! racing on the same id cannot both record it: the second waits for the first
//! transaction and then learns it was processed (or records it, if the first rolled back).
//!
//! ```no_run
//! # async fn f(pool: sqlx::SqlitePool, id: &str) -> Result<(), Box<dyn std::error::Error>> {
//! let mut tx = pool.begin().await?;
//! if outbox_core::inbox::first_delivery(&mut *tx, "billing", id).await? {
//!     // ... the handler's writes, in `tx` ...
//! }
//! tx.commit().await?;
//! // ... then acknowledge the message to the broker.
//! # Ok(()) }
//! ```
//!
//! Ids are kept per consumer name for [`DEFAULT_KEEP`] (the outbox's retention pruner
//! deletes older ones; [`Admin::inbox`](crate::Admin::inbox) prunes and counts them from
//! any process): a message redelivered after its id was pruned runs again, so keep ids
//! longer than the longest redelivery a broker can make.

use std::time::Duration;

use crate::{
    clock::{system_now, unix_millis},
    enqueue::{EnqueueConnection, InsertMessages},
    error::Error,
};

/// Longest consumer name, in bytes.
pub const MAX_CONSUMER_LEN: usize = 100;

/// Longest message id the inbox records, in bytes.
pub const MAX_PROCESSED_ID_LEN: usize = 255;

/// How long processed ids are kept by default: 7 days.
pub const DEFAULT_KEEP: Duration = Duration::from_secs(7 * 24 * 3600);

/// Records, in the caller's transaction, that `consumer` processed message `id`: true the
/// first time, false when the id was recorded before (a redelivery: skip the handler,
/// commit or roll back, and acknowledge). A consumer name or id that is empty, too long or
/// holds control characters is refused with the reason.
pub async fn first_delivery<C: EnqueueConnection>(
    mut conn: C,
    consumer: &str,
    id: &str,
) -> Result<bool, Error> {
    check("consumer name", consumer, MAX_CONSUMER_LEN)?;
    check("message id", id, MAX_PROCESSED_ID_LEN)?;
    let at = unix_millis(system_now());
    conn.connection()
        .record_processed(consumer, id, at)
        .await
        .map_err(Error::from)
}

fn check(what: &str, value: &str, max: usize) -> Result<(), Error> {
    if value.is_empty() || value.len() > max || value.chars().any(char::is_control) {
        return Err(Error::Config(format!(
            "inbox {what} `{}`: use 1 to {max} bytes without control characters",
            value.chars().take(60).collect::<String>()
        )));
    }
    Ok(())
}
