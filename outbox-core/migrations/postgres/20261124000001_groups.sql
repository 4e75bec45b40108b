-- Groups (campaigns): a message may carry a group name, kept with its dead letter, so a
-- group is paused, counted and cancelled as one. The index holds grouped rows only (the
-- rest of the queue pays nothing for it) and only the name, which never changes.
ALTER TABLE outbox_messages ADD COLUMN IF NOT EXISTS group_name TEXT;
ALTER TABLE outbox_dead_letters ADD COLUMN IF NOT EXISTS group_name TEXT;
CREATE INDEX IF NOT EXISTS outbox_messages_group
    ON outbox_messages (group_name) WHERE group_name IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_dead_letters_group
    ON outbox_dead_letters (group_name) WHERE group_name IS NOT NULL;

-- One row per group something was recorded for: its pause, the counts that outlive the
-- rows (delivered, cancelled), the delivery rate, and the completion hook. A group with
-- messages but no row yet has none of those. Times are unix milliseconds.
CREATE TABLE IF NOT EXISTS outbox_groups (
    name TEXT PRIMARY KEY,
    paused_at BIGINT,                      -- set while paused
    pause_reason TEXT,
    delivered BIGINT NOT NULL DEFAULT 0,   -- delivered (or dropped as orphans), ever
    cancelled BIGINT NOT NULL DEFAULT 0,   -- removed by a cancel before they started
    first_delivered_at BIGINT,
    last_delivered_at BIGINT,
    window_at BIGINT,                      -- start of the current rate window
    window_delivered BIGINT NOT NULL DEFAULT 0,
    previous_rate DOUBLE PRECISION,        -- deliveries per second in the window before
    hook_type TEXT,                        -- the completion hook: the message enqueued
    hook_payload BYTEA,                    -- once nothing of the group is left
    hook_max_attempts INTEGER,
    hook_priority INTEGER,
    completed_at BIGINT                    -- when the hook's message was enqueued
);
