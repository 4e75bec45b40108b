-- Per-domain traffic shaping. `outbox_sites`: one row per receiving site (a domain, or the
-- domains of one mailbox provider) with its configured limits (a token bucket, a cap on
-- messages in flight) and what the reply rules did to it (a slowdown or a suspension until
-- a time). `outbox_site_slots`: the messages in flight to a capped site, each until it ends
-- or its lease runs out. `outbox_shaping_rules`: regular expressions on the replies of
-- receiving servers and what they do to a site. `outbox_site_hits`: recent matches, for the
-- rules' thresholds. Times are unix seconds.

CREATE TABLE IF NOT EXISTS outbox_sites (
    site TEXT PRIMARY KEY NOT NULL,
    per_second REAL,            -- configured rate; NULL: none
    burst REAL NOT NULL,
    max_concurrent INTEGER,     -- configured cap; NULL: none
    tokens REAL NOT NULL,       -- as of updated_at
    updated_at REAL NOT NULL,
    slow_per_second REAL,       -- a rule's rate, until slowed_until
    slowed_until REAL,
    suspended_until REAL,
    reason TEXT,                -- the rule and reply behind the slowdown or suspension
    configured INTEGER NOT NULL -- 1: limits from configuration; 0: a rule's site
);

CREATE TABLE IF NOT EXISTS outbox_site_slots (
    site TEXT NOT NULL,
    holder TEXT NOT NULL,       -- message id and claim
    expires_at REAL NOT NULL,
    PRIMARY KEY (site, holder)
);

CREATE TABLE IF NOT EXISTS outbox_shaping_rules (
    name TEXT PRIMARY KEY NOT NULL,
    site TEXT,                  -- NULL: every site
    pattern TEXT NOT NULL,
    action TEXT NOT NULL,       -- slow | suspend | bounce
    per_second REAL,            -- slow
    duration_secs REAL,         -- slow, suspend
    threshold INTEGER NOT NULL,
    window_secs REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS outbox_site_hits (
    site TEXT NOT NULL,
    rule TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_site_hits_by_rule ON outbox_site_hits (site, rule, at);
