-- Idle workers are woken by the enqueue statements themselves (`pg_notify` in
-- enqueue.sql, enqueue_one.sql and requeue_copy.sql; delivered at commit like any NOTIFY):
-- the statement trigger with its transition table cost more per insert (BENCHMARKS.md).
DROP TRIGGER IF EXISTS outbox_messages_notify ON outbox_messages;
DROP FUNCTION IF EXISTS outbox_messages_notify();
