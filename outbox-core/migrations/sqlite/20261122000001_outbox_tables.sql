-- The outbox's own tables beside apalis' Jobs/Workers (never add columns to Jobs).

CREATE TABLE IF NOT EXISTS outbox_dead_letters (
    id TEXT PRIMARY KEY NOT NULL,          -- the message id (kept when requeued)
    type_tag TEXT NOT NULL,
    payload BLOB NOT NULL,
    attempts INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT,
    last_error TEXT NOT NULL,
    enqueued_at INTEGER,                   -- unix ms, from the id
    failed_at INTEGER NOT NULL             -- unix ms
);
CREATE INDEX IF NOT EXISTS outbox_dead_letters_type_failed ON outbox_dead_letters (type_tag, failed_at);
CREATE INDEX IF NOT EXISTS outbox_dead_letters_failed ON outbox_dead_letters (failed_at);

CREATE TABLE IF NOT EXISTS outbox_rate_buckets (
    name TEXT PRIMARY KEY NOT NULL,
    capacity REAL NOT NULL,                -- burst
    refill_per_sec REAL NOT NULL,
    tokens REAL NOT NULL,                  -- as of updated_at
    updated_at REAL NOT NULL               -- unix seconds
);

CREATE TABLE IF NOT EXISTS outbox_paused (
    type_tag TEXT PRIMARY KEY NOT NULL,
    paused_at INTEGER NOT NULL,            -- unix ms
    reason TEXT NOT NULL DEFAULT ''
);
