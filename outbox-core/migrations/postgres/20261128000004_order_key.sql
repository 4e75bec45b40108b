-- Order per key: messages enqueued with the same ordering key (an aggregate's id) start one
-- at a time, in enqueue order; a message holds the later ones of its key while it is queued,
-- running or retrying, and while it is a dead letter (until it is requeued or purged).
-- NULL for every other message; the indexes hold keyed rows only.
ALTER TABLE outbox_messages ADD COLUMN IF NOT EXISTS order_key TEXT;
ALTER TABLE outbox_dead_letters ADD COLUMN IF NOT EXISTS order_key TEXT;
CREATE INDEX IF NOT EXISTS outbox_messages_order_key
    ON outbox_messages (order_key, id) WHERE order_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_dead_letters_order_key
    ON outbox_dead_letters (order_key) WHERE order_key IS NOT NULL;
