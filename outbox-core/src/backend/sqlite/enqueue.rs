//! Transactional enqueue on SQLite: one statement per chunk (`json_each`, `RETURNING`),
//! duplicates skipped by the unique `(job_type, idempotency_key)` index and reported back.

crate::backend::enqueue_batch::returning_enqueue!(
    sqlx::SqliteConnection,
    "src/backend/sqlite/queries"
);
