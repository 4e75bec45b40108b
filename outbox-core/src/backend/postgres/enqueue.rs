//! Transactional enqueue on PostgreSQL: one statement per chunk (`jsonb_to_recordset`,
//! `ON CONFLICT DO NOTHING RETURNING`): a duplicate key never raises 23505, so the
//! caller's transaction stays usable. The table's insert trigger NOTIFYs the written
//! types; PostgreSQL delivers it at commit, so nothing more is needed here.

crate::backend::enqueue_batch::returning_enqueue!(
    sqlx::PgConnection,
    "src/backend/postgres/queries"
);
