-- The ordered claim asks, for each candidate, whether an earlier message of its type and key
-- is still queued or running. The index that answers it now holds only such messages (and
-- leads with the type): a finished or delivered-and-kept message leaves it, so the question
-- is one index probe, however many messages the key has had, instead of a scan over the
-- key's whole history (and its dead row versions) for each candidate.
DROP INDEX IF EXISTS outbox_messages_order_key;
CREATE INDEX IF NOT EXISTS outbox_messages_order_open
    ON outbox_messages (type_tag, order_key, id)
    WHERE order_key IS NOT NULL AND status IN ('queued', 'running');
