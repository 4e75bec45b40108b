//! Transactional enqueue on PostgreSQL: one statement per chunk (`jsonb_to_recordset`,
//! `ON CONFLICT DO NOTHING RETURNING`): a duplicate key never raises 23505, so the
//! caller's transaction stays usable. The table's insert trigger NOTIFYs the written
//! types; PostgreSQL delivers it at commit.

use futures::future::BoxFuture;

use crate::enqueue::NewMessage;

crate::backend::enqueue_batch::returning_enqueue!(
    sqlx::PgConnection,
    "src/backend/postgres/queries",
    after = nothing_after
);

/// The trigger already arranged the wake-up.
fn nothing_after<'a>(
    _: &'a mut sqlx::PgConnection,
    _: &'a [NewMessage],
) -> BoxFuture<'a, Result<(), sqlx::Error>> {
    Box::pin(async { Ok(()) })
}
