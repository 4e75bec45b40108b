-- The outbox's own queue (replaces apalis' schema, which is no longer read). Times are
-- unix milliseconds. Indexes: the primary key, the claim order over queued rows (partial:
-- running and done rows are not in it) and the idempotency key (partial: keyless messages
-- are not in it). Nothing else: every extra index is written by every claim and settlement.

CREATE TABLE IF NOT EXISTS outbox_messages (
    id TEXT PRIMARY KEY,                   -- ULID, increasing per process
    type_tag TEXT NOT NULL,
    payload BYTEA NOT NULL,                -- JSON bytes
    status TEXT NOT NULL DEFAULT 'queued', -- queued | running | done
    attempts INTEGER NOT NULL DEFAULT 0,   -- counted at claim
    max_attempts INTEGER NOT NULL,
    due_at BIGINT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,                      -- the worker holding a running message
    lease_expires_at BIGINT,
    idempotency_key TEXT,
    enqueued_at BIGINT NOT NULL,
    done_at BIGINT,                        -- kept (retention) rows only
    last_error TEXT
);

CREATE INDEX IF NOT EXISTS outbox_messages_claim
    ON outbox_messages (type_tag, priority DESC, due_at, id) WHERE status = 'queued';

CREATE UNIQUE INDEX IF NOT EXISTS outbox_messages_key
    ON outbox_messages (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS outbox_workers (
    name TEXT PRIMARY KEY,
    type_tag TEXT NOT NULL,
    started_at BIGINT NOT NULL,            -- unix ms
    last_seen BIGINT NOT NULL              -- unix ms
);

-- Wakes idle workers at commit: one NOTIFY per type per inserting statement (the payload
-- is the type tag; PostgreSQL folds repeats within a transaction).
CREATE OR REPLACE FUNCTION outbox_messages_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox_messages', t.type_tag) FROM (SELECT DISTINCT type_tag FROM new_rows) AS t;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS outbox_messages_notify ON outbox_messages;
CREATE TRIGGER outbox_messages_notify
    AFTER INSERT ON outbox_messages
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_messages_notify();
