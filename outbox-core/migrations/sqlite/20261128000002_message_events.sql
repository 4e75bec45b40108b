-- What downstreams said about messages after taking them: the receipt (kind `accepted`,
-- the downstream's id of the message) and later events (delivered, bounced, complained).
-- One row per provider's event (a repeat is not written again); found by message (the
-- message's page) and by the provider's id of the message (an event naming only that id).
-- Times are unix milliseconds; rows are pruned by recorded_at.
CREATE TABLE IF NOT EXISTS outbox_message_events (
    provider TEXT NOT NULL,
    event_id TEXT NOT NULL,
    message_id TEXT NOT NULL,              -- the outbox message
    external_id TEXT NOT NULL,             -- the provider's id of the message
    kind TEXT NOT NULL,                    -- accepted | delivered | hard_bounce | ...
    recipient TEXT,
    detail TEXT NOT NULL DEFAULT '',
    at INTEGER NOT NULL,                   -- when it happened
    recorded_at INTEGER NOT NULL,          -- when it was written here
    PRIMARY KEY (provider, event_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS outbox_message_events_message ON outbox_message_events (message_id, at);
CREATE INDEX IF NOT EXISTS outbox_message_events_external ON outbox_message_events (provider, external_id);
CREATE INDEX IF NOT EXISTS outbox_message_events_recorded ON outbox_message_events (recorded_at);
