-- The outbox's own tables beside apalis' schema (never add columns to apalis.jobs).

CREATE TABLE IF NOT EXISTS outbox_dead_letters (
    id TEXT PRIMARY KEY,                   -- the message id (kept when requeued)
    type_tag TEXT NOT NULL,
    payload BYTEA NOT NULL,
    attempts BIGINT NOT NULL,
    max_attempts BIGINT NOT NULL,
    priority BIGINT NOT NULL DEFAULT 0,
    idempotency_key TEXT,
    last_error TEXT NOT NULL,
    enqueued_at BIGINT,                    -- unix ms, from the id
    failed_at BIGINT NOT NULL              -- unix ms
);
CREATE INDEX IF NOT EXISTS outbox_dead_letters_type_failed ON outbox_dead_letters (type_tag, failed_at);
CREATE INDEX IF NOT EXISTS outbox_dead_letters_failed ON outbox_dead_letters (failed_at);

CREATE TABLE IF NOT EXISTS outbox_rate_buckets (
    name TEXT PRIMARY KEY,
    capacity DOUBLE PRECISION NOT NULL,    -- burst
    refill_per_sec DOUBLE PRECISION NOT NULL,
    tokens DOUBLE PRECISION NOT NULL,      -- as of updated_at
    updated_at DOUBLE PRECISION NOT NULL   -- unix seconds
);

CREATE TABLE IF NOT EXISTS outbox_paused (
    type_tag TEXT PRIMARY KEY,
    paused_at BIGINT NOT NULL,             -- unix ms
    reason TEXT NOT NULL DEFAULT ''
);
