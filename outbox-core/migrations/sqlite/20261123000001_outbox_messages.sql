-- The outbox's own queue (replaces apalis' Jobs/Workers, which are no longer read).
-- Times are unix milliseconds. Indexes: the primary key, the claim order over queued rows
-- (partial: running and done rows are not in it) and the idempotency key (partial: keyless
-- messages are not in it). Nothing else is indexed: every extra index is written by every
-- claim and every settlement.

CREATE TABLE IF NOT EXISTS outbox_messages (
    id TEXT PRIMARY KEY NOT NULL,          -- ULID, increasing per process
    type_tag TEXT NOT NULL,
    payload BLOB NOT NULL,                 -- JSON bytes
    status TEXT NOT NULL DEFAULT 'queued', -- queued | running | done
    attempts INTEGER NOT NULL DEFAULT 0,   -- counted at claim
    max_attempts INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,                      -- the worker holding a running message
    lease_expires_at INTEGER,
    idempotency_key TEXT,
    enqueued_at INTEGER NOT NULL,
    done_at INTEGER,                       -- kept (retention) rows only
    last_error TEXT
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS outbox_messages_claim
    ON outbox_messages (type_tag, priority DESC, due_at, id) WHERE status = 'queued';

CREATE UNIQUE INDEX IF NOT EXISTS outbox_messages_key
    ON outbox_messages (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS outbox_workers (
    name TEXT PRIMARY KEY NOT NULL,
    type_tag TEXT NOT NULL,
    started_at INTEGER NOT NULL,           -- unix ms
    last_seen INTEGER NOT NULL             -- unix ms
);
