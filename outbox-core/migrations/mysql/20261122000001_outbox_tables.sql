-- The queue (columns as in apalis' MySQL schema, times as unix seconds so no session time
-- zone or 2038 limit can shift them) and the outbox's own tables. Collations exist on
-- MariaDB >= 10.6 and MySQL 8 alike.

CREATE TABLE IF NOT EXISTS outbox_workers (
    id VARCHAR(255) NOT NULL PRIMARY KEY,
    worker_type VARCHAR(200) NOT NULL,
    storage_name VARCHAR(100) NOT NULL,
    layers TEXT,
    last_seen BIGINT NOT NULL,             -- unix s
    started_at BIGINT NULL,
    KEY outbox_workers_type_seen (worker_type, last_seen)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS outbox_jobs (
    job LONGBLOB NOT NULL,
    id VARCHAR(36) NOT NULL PRIMARY KEY,
    job_type VARCHAR(200) NOT NULL,
    status VARCHAR(20) NOT NULL DEFAULT 'Pending',
    attempts INT NOT NULL DEFAULT 0,
    max_attempts INT NOT NULL DEFAULT 25,
    run_at BIGINT NOT NULL,                -- unix s
    last_result TEXT NULL,
    lock_at BIGINT NULL,
    lock_by VARCHAR(255) NULL,
    done_at BIGINT NULL,
    priority INT NOT NULL DEFAULT 0,
    metadata TEXT NULL,
    idempotency_key VARCHAR(255) NULL,
    UNIQUE KEY outbox_jobs_idempotency (job_type, idempotency_key),
    KEY outbox_jobs_fetch (job_type, status, run_at),
    KEY outbox_jobs_lock_by (lock_by)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS outbox_dead_letters (
    id VARCHAR(36) NOT NULL PRIMARY KEY,
    type_tag VARCHAR(200) NOT NULL,
    payload LONGBLOB NOT NULL,
    attempts BIGINT NOT NULL,
    max_attempts BIGINT NOT NULL,
    priority BIGINT NOT NULL DEFAULT 0,
    idempotency_key VARCHAR(255) NULL,
    last_error TEXT NOT NULL,
    enqueued_at BIGINT NULL,               -- unix ms
    failed_at BIGINT NOT NULL,             -- unix ms
    KEY outbox_dead_letters_type_failed (type_tag, failed_at),
    KEY outbox_dead_letters_failed (failed_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS outbox_rate_buckets (
    name VARCHAR(200) NOT NULL PRIMARY KEY,
    capacity DOUBLE NOT NULL,
    refill_per_sec DOUBLE NOT NULL,
    tokens DOUBLE NOT NULL,
    updated_at DOUBLE NOT NULL             -- unix s
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS outbox_paused (
    type_tag VARCHAR(200) NOT NULL PRIMARY KEY,
    paused_at BIGINT NOT NULL,             -- unix ms
    reason TEXT NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
