-- How many times each message was claimed: the fencing token a settlement must name.
-- Unlike the attempt count it is never given back (a snooze, a deferral or a release gives
-- the attempt back), so a settlement written twice — say after its COMMIT's reply was lost
-- — can never apply to a later claim of the same message by the same worker. A dead
-- letter keeps it, so a requeued message goes on counting.
ALTER TABLE outbox_messages ADD COLUMN claims INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox_dead_letters ADD COLUMN claims INTEGER NOT NULL DEFAULT 0;
