-- The inbox: which messages a consumer has processed, written in the consumer's own
-- transaction with the handler's rows, so a redelivered message is skipped. Times are unix
-- milliseconds; old rows are pruned by processed_at.
CREATE TABLE IF NOT EXISTS outbox_inbox (
    consumer TEXT NOT NULL,
    message_id TEXT NOT NULL,
    processed_at BIGINT NOT NULL,
    PRIMARY KEY (consumer, message_id)
);
CREATE INDEX IF NOT EXISTS outbox_inbox_processed_at ON outbox_inbox (processed_at);
