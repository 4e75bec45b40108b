-- Groups (campaigns): a message may carry a group name, kept with its dead letter, so a
-- group is paused, counted and cancelled as one. The index holds only the name, which
-- never changes, so no claim or settlement rewrites it.
ALTER TABLE outbox_messages ADD COLUMN IF NOT EXISTS group_name VARCHAR(200) NULL,
    ADD INDEX IF NOT EXISTS outbox_messages_group (group_name);
ALTER TABLE outbox_dead_letters ADD COLUMN IF NOT EXISTS group_name VARCHAR(200) NULL,
    ADD INDEX IF NOT EXISTS outbox_dead_letters_group (group_name);

-- One row per group something was recorded for: its pause, the counts that outlive the
-- rows (delivered, cancelled), the delivery rate, and the completion hook. A group with
-- messages but no row yet has none of those. Times are unix milliseconds.
CREATE TABLE IF NOT EXISTS outbox_groups (
    name VARCHAR(200) NOT NULL PRIMARY KEY,
    paused_at BIGINT NULL,                 -- set while paused
    pause_reason TEXT NULL,
    delivered BIGINT NOT NULL DEFAULT 0,   -- delivered (or dropped as orphans), ever
    cancelled BIGINT NOT NULL DEFAULT 0,   -- removed by a cancel before they started
    first_delivered_at BIGINT NULL,
    last_delivered_at BIGINT NULL,
    window_at BIGINT NULL,                 -- start of the current rate window
    window_delivered BIGINT NOT NULL DEFAULT 0,
    previous_rate DOUBLE NULL,             -- deliveries per second in the window before
    hook_type VARCHAR(200) NULL,           -- the completion hook: the message enqueued
    hook_payload LONGBLOB NULL,            -- once nothing of the group is left
    hook_max_attempts INT NULL,
    hook_priority INT NULL,
    completed_at BIGINT NULL               -- when the hook's message was enqueued
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
