-- Order per key: messages enqueued with the same ordering key (an aggregate's id) start one
-- at a time, in enqueue order; a message holds the later ones of its key while it is queued,
-- running or retrying, and while it is a dead letter (until it is requeued or purged).
-- NULL for every other message (MariaDB has no partial indexes: those rows have a NULL
-- entry, as for groups).
ALTER TABLE outbox_messages ADD COLUMN IF NOT EXISTS order_key VARCHAR(255) NULL,
    ADD INDEX IF NOT EXISTS outbox_messages_order_key (order_key, id);
ALTER TABLE outbox_dead_letters ADD COLUMN IF NOT EXISTS order_key VARCHAR(255) NULL,
    ADD INDEX IF NOT EXISTS outbox_dead_letters_order_key (order_key);
