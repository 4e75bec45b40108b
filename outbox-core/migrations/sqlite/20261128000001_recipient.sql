-- Recipients: a message whose type names one recipient (an email's address) carries it,
-- lowercased, written at enqueue and kept with its dead letter, so an operator finds a
-- person's messages by address without decoding payloads. NULL for every other message;
-- the indexes hold the rows that have one only, so the rest of the queue pays nothing.
ALTER TABLE outbox_messages ADD COLUMN recipient TEXT;
ALTER TABLE outbox_dead_letters ADD COLUMN recipient TEXT;
CREATE INDEX IF NOT EXISTS outbox_messages_recipient
    ON outbox_messages (recipient) WHERE recipient IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_dead_letters_recipient
    ON outbox_dead_letters (recipient) WHERE recipient IS NOT NULL;
