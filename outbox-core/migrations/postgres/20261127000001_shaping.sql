-- Per-domain traffic shaping. `outbox_sites`: one row per receiving site (a domain, or the
-- domains of one mailbox provider) with its configured limits (a token bucket, a cap on
-- messages in flight) and what the reply rules did to it (a slowdown or a suspension until
-- a time). `outbox_site_slots`: the messages in flight to a capped site, each until it ends
-- or its lease runs out. `outbox_shaping_rules`: regular expressions on the replies of
-- receiving servers and what they do to a site. `outbox_site_hits`: recent matches, for the
-- rules' thresholds. Times are unix seconds.

CREATE TABLE IF NOT EXISTS outbox_sites (
    site TEXT PRIMARY KEY,
    per_second DOUBLE PRECISION,
    burst DOUBLE PRECISION NOT NULL,
    max_concurrent BIGINT,
    tokens DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    slow_per_second DOUBLE PRECISION,
    slowed_until DOUBLE PRECISION,
    suspended_until DOUBLE PRECISION,
    reason TEXT,
    configured BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS outbox_site_slots (
    site TEXT NOT NULL,
    holder TEXT NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (site, holder)
);

CREATE TABLE IF NOT EXISTS outbox_shaping_rules (
    name TEXT PRIMARY KEY,
    site TEXT,
    pattern TEXT NOT NULL,
    action TEXT NOT NULL,
    per_second DOUBLE PRECISION,
    duration_secs DOUBLE PRECISION,
    threshold BIGINT NOT NULL,
    window_secs DOUBLE PRECISION NOT NULL
);

CREATE TABLE IF NOT EXISTS outbox_site_hits (
    site TEXT NOT NULL,
    rule TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_site_hits_by_rule ON outbox_site_hits (site, rule, at);
