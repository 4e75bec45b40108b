-- Endpoints: the named downstreams of a message kind (a webhook's customer URLs), with the
-- kind's settings as JSON text, whether they are disabled (and why), and since when every
-- delivery to them has failed. Times are unix milliseconds.
CREATE TABLE IF NOT EXISTS outbox_endpoints (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    settings TEXT NOT NULL,
    disabled_at INTEGER,
    disabled_reason TEXT,
    failing_since INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;
