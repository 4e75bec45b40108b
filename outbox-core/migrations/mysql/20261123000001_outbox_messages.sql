-- The outbox's own queue (replaces outbox_jobs, which is no longer read). Times are unix
-- milliseconds. MySQL has no partial indexes: the claim index leads with (type, status),
-- so claims read queued rows in claim order and rescues read a type's running rows; the
-- idempotency key is unique per type (NULL keys never conflict).

CREATE TABLE IF NOT EXISTS outbox_messages (
    id VARCHAR(36) NOT NULL PRIMARY KEY,       -- ULID, increasing per process
    type_tag VARCHAR(200) NOT NULL,
    payload LONGBLOB NOT NULL,                 -- JSON bytes
    status VARCHAR(10) NOT NULL DEFAULT 'queued', -- queued | running | done
    attempts INT NOT NULL DEFAULT 0,           -- counted at claim
    max_attempts INT NOT NULL,
    due_at BIGINT NOT NULL,
    priority INT NOT NULL DEFAULT 0,
    lease_owner VARCHAR(255) NULL,             -- the worker holding a running message
    lease_expires_at BIGINT NULL,
    idempotency_key VARCHAR(255) NULL,
    enqueued_at BIGINT NOT NULL,
    done_at BIGINT NULL,                       -- kept (retention) rows only
    last_error TEXT NULL,
    UNIQUE KEY outbox_messages_key (type_tag, idempotency_key),
    KEY outbox_messages_claim (type_tag, status, priority DESC, due_at, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The pre-release worker table had apalis' layout; the registry is rebuilt by heartbeats.
DROP TABLE IF EXISTS outbox_workers;
CREATE TABLE outbox_workers (
    name VARCHAR(255) NOT NULL PRIMARY KEY,
    type_tag VARCHAR(200) NOT NULL,
    started_at BIGINT NOT NULL,                -- unix ms
    last_seen BIGINT NOT NULL                  -- unix ms
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
