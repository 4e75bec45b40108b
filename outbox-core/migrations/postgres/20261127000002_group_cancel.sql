-- A group's latest cancel (unix ms): messages of the group enqueued before it are never
-- claimed again, and a claimed one not yet started is given back and deleted as cancelled.
ALTER TABLE outbox_groups ADD COLUMN cancelled_at BIGINT;
