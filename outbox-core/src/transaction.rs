//! Running the caller's transaction again when the database aborts it.
//!
//! At `REPEATABLE READ` or `SERIALIZABLE` (PostgreSQL), and on a deadlock anywhere, the
//! database aborts the whole transaction, the caller's rows with the message; an enqueue
//! whose lock wait times out loses the transaction too (the outbox makes sure nothing of
//! it commits). Such a transaction cannot be saved, only run again from the start:
//! [`retry_transaction`] does that, a bounded number of times with a randomized pause.

use std::time::Duration;

use sqlx::{Database, Pool};

use crate::error::{BoxError, EnqueueError, Error, Fault};

/// An error that may say "the database aborted the transaction; run it again".
///
/// Implemented for `sqlx::Error`, [`EnqueueError`], [`Error`] and [`BoxError`] (which
/// looks through its source chain); implement it for an application error type to use
/// that type with [`retry_transaction`].
pub trait RetryableError {
    /// True when the whole transaction may simply run again: a serialization failure, a
    /// deadlock or a lock wait that timed out (the lock's holder may be done by then).
    fn is_retryable(&self) -> bool;
}

impl RetryableError for sqlx::Error {
    fn is_retryable(&self) -> bool {
        Fault::of(self).loses_transaction()
    }
}

impl RetryableError for EnqueueError {
    fn is_retryable(&self) -> bool {
        matches!(
            self,
            EnqueueError::TransactionAborted { .. } | EnqueueError::LockTimeout { .. }
        )
    }
}

impl RetryableError for Error {
    fn is_retryable(&self) -> bool {
        matches!(self, Error::Database(e) if e.is_retryable())
    }
}

impl RetryableError for BoxError {
    fn is_retryable(&self) -> bool {
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(self.as_ref());
        while let Some(e) = next {
            if let Some(e) = e.downcast_ref::<sqlx::Error>() {
                return e.is_retryable();
            }
            if let Some(e) = e.downcast_ref::<EnqueueError>() {
                return e.is_retryable();
            }
            if let Some(e) = e.downcast_ref::<Error>() {
                return e.is_retryable();
            }
            next = e.source();
        }
        false
    }
}

/// How many times [`retry_transaction_with`] runs a transaction, and how long it pauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionRetry {
    /// Runs in all, the first included (at least 1).
    pub attempts: u32,
    /// The pause before the second run; it doubles before each further run, and each pause
    /// is a random fraction of it (full jitter), so that colliding callers spread out.
    pub first_pause: Duration,
}

impl Default for TransactionRetry {
    /// 5 runs, pauses up to 10, 20, 40 and 80 ms.
    fn default() -> Self {
        Self {
            attempts: 5,
            first_pause: Duration::from_millis(10),
        }
    }
}

/// Runs `work` in a new transaction of `pool` and commits it; when the database aborts the
/// transaction (serialization failure, deadlock) or a lock wait times out, at `work` or at
/// commit, rolls back and runs `work` again, up to 5 times with a short random pause
/// ([`TransactionRetry::default`]); each run may wait up to the database's lock timeout.
/// Any other error rolls back and is returned at once.
///
/// `work` gets the transaction's connection and must do all of the transaction's work
/// through it, since a retry repeats it; effects outside the database (an HTTP call, a
/// sent email) would repeat too.
///
/// ```no_run
/// # #[cfg(feature = "sqlite")]
/// # async fn demo(pool: sqlx::SqlitePool) -> Result<(), outbox_core::BoxError> {
/// # #[derive(serde::Serialize, serde::Deserialize)] struct OrderMail { order_id: i64 }
/// # impl outbox_core::OutboxMessage for OrderMail { const TYPE: &'static str = "order_mail"; }
/// use outbox_core::{retry_transaction, BoxError, Enqueue};
///
/// retry_transaction(&pool, async |conn| {
///     sqlx::query("INSERT INTO orders (id) VALUES (7)").execute(&mut *conn).await?;
///     OrderMail { order_id: 7 }.enqueue(conn).await?;
///     Ok::<_, BoxError>(())
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub async fn retry_transaction<DB, T, E, F>(pool: &Pool<DB>, work: F) -> Result<T, E>
where
    DB: Database,
    F: AsyncFnMut(&mut DB::Connection) -> Result<T, E>,
    E: From<sqlx::Error> + RetryableError,
{
    retry_transaction_with(pool, TransactionRetry::default(), work).await
}

/// [`retry_transaction`] with an explicit number of runs and pause.
pub async fn retry_transaction_with<DB, T, E, F>(
    pool: &Pool<DB>,
    policy: TransactionRetry,
    mut work: F,
) -> Result<T, E>
where
    DB: Database,
    F: AsyncFnMut(&mut DB::Connection) -> Result<T, E>,
    E: From<sqlx::Error> + RetryableError,
{
    let mut run = 1;
    loop {
        let result = once(pool, &mut work).await;
        match result {
            Err(e) if e.is_retryable() && run < policy.attempts.max(1) => {
                let ceiling = policy.first_pause.saturating_mul(1 << (run - 1).min(16));
                let pause = ceiling.mul_f64(fastrand::f64());
                tracing::debug!(
                    run,
                    ?pause,
                    "transaction aborted by the database; running it again"
                );
                tokio::time::sleep(pause).await;
                run += 1;
            }
            other => return other,
        }
    }
}

/// One run: begin, `work`, commit (a dropped transaction rolls back).
async fn once<DB, T, E, F>(pool: &Pool<DB>, work: &mut F) -> Result<T, E>
where
    DB: Database,
    F: AsyncFnMut(&mut DB::Connection) -> Result<T, E>,
    E: From<sqlx::Error> + RetryableError,
{
    let mut tx = pool.begin().await?;
    let value = work(&mut *tx).await?;
    tx.commit().await?;
    Ok(value)
}
