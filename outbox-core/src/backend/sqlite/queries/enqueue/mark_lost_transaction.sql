-- After an enqueue lost the caller's transaction (SQLITE_BUSY: the busy timeout ran out
-- waiting for the write lock, or another connection wrote since this transaction read),
-- SQLite keeps the transaction open, and the caller's later writes could commit without
-- the message. This marks it: a row in a temporary table (written without the database's
-- write lock) that breaks a deferred foreign key, so the transaction's COMMIT fails
-- ("FOREIGN KEY constraint failed") and leaves it open until the caller rolls it back,
-- which removes the row and the tables. Works with foreign_keys on (sqlx's default and
-- outbox::sqlite::connect's): the last statement says whether it is.
CREATE TEMP TABLE IF NOT EXISTS outbox_lost_transaction_anchor (id INTEGER PRIMARY KEY);
CREATE TEMP TABLE IF NOT EXISTS outbox_lost_transaction (
    anchor INTEGER NOT NULL
        REFERENCES outbox_lost_transaction_anchor (id) DEFERRABLE INITIALLY DEFERRED
);
INSERT INTO temp.outbox_lost_transaction (anchor) VALUES (1);
SELECT foreign_keys FROM pragma_foreign_keys;
