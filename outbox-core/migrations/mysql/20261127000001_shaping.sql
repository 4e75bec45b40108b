-- Per-domain traffic shaping. `outbox_sites`: one row per receiving site (a domain, or the
-- domains of one mailbox provider) with its configured limits (a token bucket, a cap on
-- messages in flight) and what the reply rules did to it (a slowdown or a suspension until
-- a time). `outbox_site_slots`: the messages in flight to a capped site, each until it ends
-- or its lease runs out. `outbox_shaping_rules`: regular expressions on the replies of
-- receiving servers and what they do to a site. `outbox_site_hits`: recent matches, for the
-- rules' thresholds. Times are unix seconds.

CREATE TABLE IF NOT EXISTS outbox_sites (
    site VARCHAR(255) NOT NULL PRIMARY KEY,
    per_second DOUBLE,
    burst DOUBLE NOT NULL,
    max_concurrent BIGINT,
    tokens DOUBLE NOT NULL,
    updated_at DOUBLE NOT NULL,
    slow_per_second DOUBLE,
    slowed_until DOUBLE,
    suspended_until DOUBLE,
    reason TEXT,
    configured BIGINT NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS outbox_site_slots (
    site VARCHAR(255) NOT NULL,
    holder VARCHAR(255) NOT NULL,
    expires_at DOUBLE NOT NULL,
    PRIMARY KEY (site, holder)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS outbox_shaping_rules (
    name VARCHAR(200) NOT NULL PRIMARY KEY,
    site VARCHAR(255),
    pattern TEXT NOT NULL,
    action VARCHAR(16) NOT NULL,
    per_second DOUBLE,
    duration_secs DOUBLE,
    threshold BIGINT NOT NULL,
    window_secs DOUBLE NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS outbox_site_hits (
    site VARCHAR(255) NOT NULL,
    rule VARCHAR(200) NOT NULL,
    at DOUBLE NOT NULL,
    KEY outbox_site_hits_by_rule (site, rule, at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
