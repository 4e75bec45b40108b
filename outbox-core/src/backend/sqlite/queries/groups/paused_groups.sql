-- The paused groups (the table holds one row per group that ever recorded something; few
-- are paused).
SELECT name FROM outbox_groups WHERE paused_at IS NOT NULL
