//! Transactional enqueue on SQLite: one statement per chunk (`jsonb_each`; its row count
//! tells whether every message was written), duplicates skipped by the unique
//! `(type_tag, idempotency_key)` index and reported back.
//! A commit hook on the caller's connection wakes this process's idle workers of the
//! written types as soon as the transaction commits.

use futures::future::BoxFuture;
use sqlx::SqliteConnection;

use crate::enqueue::NewMessage;

crate::backend::enqueue_batch::batch_enqueue!(
    sqlx::SqliteConnection,
    "src/backend/sqlite/queries",
    batch = counted,
    after = wake_at_commit
);

/// Arranges for the next commit of `conn` to wake this process's workers of the types in
/// `rows` (once; a rolled-back transaction wakes nobody until the connection's next
/// commit). Skipped when no worker of this process waits: it costs a round trip to the
/// connection's thread.
fn wake_at_commit<'a>(
    conn: &'a mut SqliteConnection,
    rows: &'a [NewMessage],
) -> BoxFuture<'a, Result<(), sqlx::Error>> {
    Box::pin(async move {
        if !super::wakeups().has_subscribers() {
            return Ok(());
        }
        let mut types: Vec<&'static str> = rows.iter().map(|m| m.queue).collect();
        types.sort_unstable();
        types.dedup();
        let mut pending = Some(types);
        conn.lock_handle().await?.set_commit_hook(move || {
            if let Some(types) = pending.take() {
                let wakeups = super::wakeups();
                types.iter().for_each(|t| wakeups.notify(t));
            }
            true
        });
        Ok(())
    })
}
