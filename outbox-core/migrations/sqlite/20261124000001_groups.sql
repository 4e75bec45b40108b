-- Groups (campaigns): a message may carry a group name, kept with its dead letter, so a
-- group is paused, counted and cancelled as one. The index holds grouped rows only (the
-- rest of the queue pays nothing for it) and only the name, which never changes, so no
-- claim or settlement rewrites it.
ALTER TABLE outbox_messages ADD COLUMN group_name TEXT;
ALTER TABLE outbox_dead_letters ADD COLUMN group_name TEXT;
CREATE INDEX IF NOT EXISTS outbox_messages_group
    ON outbox_messages (group_name) WHERE group_name IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_dead_letters_group
    ON outbox_dead_letters (group_name) WHERE group_name IS NOT NULL;

-- One row per group something was recorded for: its pause, the counts that outlive the
-- rows (delivered, cancelled), the delivery rate, and the completion hook. A group with
-- messages but no row yet has none of those. Times are unix milliseconds.
CREATE TABLE IF NOT EXISTS outbox_groups (
    name TEXT PRIMARY KEY NOT NULL,
    paused_at INTEGER,                     -- set while paused
    pause_reason TEXT,
    delivered INTEGER NOT NULL DEFAULT 0,  -- delivered (or dropped as orphans), ever
    cancelled INTEGER NOT NULL DEFAULT 0,  -- removed by a cancel before they started
    first_delivered_at INTEGER,
    last_delivered_at INTEGER,
    window_at INTEGER,                     -- start of the current rate window
    window_delivered INTEGER NOT NULL DEFAULT 0,
    previous_rate REAL,                    -- deliveries per second in the window before
    hook_type TEXT,                        -- the completion hook: the message enqueued
    hook_payload BLOB,                     -- once nothing of the group is left
    hook_max_attempts INTEGER,
    hook_priority INTEGER,
    completed_at INTEGER                   -- when the hook's message was enqueued
) WITHOUT ROWID;
