-- Circuit breakers: one row per downstream (an SMTP relay, an API) a handler reported
-- down, shared by every process. While `opened_at` is set the types it guards start
-- nothing but one probe at a time (held by `probe_owner` until `probe_until`), due at
-- `probe_at`. Times are unix milliseconds.
CREATE TABLE IF NOT EXISTS outbox_breakers (
    name TEXT PRIMARY KEY,
    opened_at INTEGER,  -- set while open
    reason TEXT,  -- what opened it, or the last failed probe
    probes_failed INTEGER NOT NULL DEFAULT 0,
    probe_at INTEGER,  -- the next probe may start then
    probe_owner TEXT,  -- the process running the probe
    probe_until INTEGER,  -- its lease
    warned_at INTEGER,  -- the last WARN about it (one a minute at most)
    closed_at INTEGER,
    times_opened INTEGER NOT NULL DEFAULT 0
);
