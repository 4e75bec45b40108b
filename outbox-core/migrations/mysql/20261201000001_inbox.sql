-- The inbox: which messages a consumer has processed, written in the consumer's own
-- transaction with the handler's rows, so a redelivered message is skipped. Times are unix
-- milliseconds; old rows are pruned by processed_at.
CREATE TABLE IF NOT EXISTS outbox_inbox (
    consumer VARCHAR(100) NOT NULL,
    message_id VARCHAR(255) NOT NULL,
    processed_at BIGINT NOT NULL,
    PRIMARY KEY (consumer, message_id),
    KEY outbox_inbox_processed_at (processed_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
