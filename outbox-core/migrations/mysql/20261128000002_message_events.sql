-- What downstreams said about messages after taking them: the receipt (kind `accepted`,
-- the downstream's id of the message) and later events (delivered, bounced, complained).
-- One row per provider's event (a repeat is not written again); found by message (the
-- message's page) and by the provider's id of the message (an event naming only that id).
-- Times are unix milliseconds; rows are pruned by recorded_at.
CREATE TABLE IF NOT EXISTS outbox_message_events (
    provider VARCHAR(255) NOT NULL,
    event_id VARCHAR(255) NOT NULL,
    message_id VARCHAR(255) NOT NULL,  -- the outbox message
    external_id VARCHAR(255) NOT NULL,  -- the provider's id of the message
    kind VARCHAR(255) NOT NULL,  -- accepted | delivered | hard_bounce | ...
    recipient VARCHAR(320),
    detail TEXT NOT NULL,
    at BIGINT NOT NULL,  -- when it happened
    recorded_at BIGINT NOT NULL,  -- when it was written here
    PRIMARY KEY (provider, event_id),
    KEY outbox_message_events_message (message_id, at),
    KEY outbox_message_events_external (provider, external_id),
    KEY outbox_message_events_recorded (recorded_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
