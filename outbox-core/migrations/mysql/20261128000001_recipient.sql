-- Recipients: a message whose type names one recipient (an email's address) carries it,
-- lowercased, written at enqueue and kept with its dead letter, so an operator finds a
-- person's messages by address without decoding payloads. NULL for every other message
-- (MariaDB has no partial indexes: those rows have a NULL entry, as for groups).
ALTER TABLE outbox_messages ADD COLUMN IF NOT EXISTS recipient VARCHAR(255) NULL,
    ADD INDEX IF NOT EXISTS outbox_messages_recipient (recipient);
ALTER TABLE outbox_dead_letters ADD COLUMN IF NOT EXISTS recipient VARCHAR(255) NULL,
    ADD INDEX IF NOT EXISTS outbox_dead_letters_recipient (recipient);
