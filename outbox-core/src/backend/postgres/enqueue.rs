//! Transactional enqueue on PostgreSQL: one statement per chunk (`jsonb_to_recordset`,
//! `ON CONFLICT DO NOTHING RETURNING`): a duplicate key never raises 23505, so the
//! caller's transaction stays usable. The statements NOTIFY the written types themselves
//! (`pg_notify` on their `RETURNING` rows); PostgreSQL delivers it at commit.

crate::backend::enqueue_batch::batch_enqueue!(
    sqlx::PgConnection,
    "src/backend/postgres/queries",
    batch = returning
);
