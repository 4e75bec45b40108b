-- Suppressions: addresses (or whole domains, written `@example.com`) that must not be
-- mailed, in one scope: `*` (all mail), `list:NAME`, `type:TAG` or `group:NAME`. An email to
-- a suppressed address is not sent: its row is kept with status `suppressed` (never
-- claimed), at enqueue or when a worker finds the suppression before sending. Addresses are
-- stored lowercased. Times are unix milliseconds.
CREATE TABLE IF NOT EXISTS outbox_suppressions (
    address VARCHAR(255) NOT NULL,  -- user@example.com, or @example.com
    scope VARCHAR(210) NOT NULL,  -- * | list:NAME | type:TAG | group:NAME
    reason VARCHAR(20) NOT NULL,  -- hard_bounce | complaint | unsubscribe | manual
    source VARCHAR(255),  -- who said so: an event id, an operator, a token
    created_at BIGINT NOT NULL,
    expires_at BIGINT,  -- NULL: for ever
    PRIMARY KEY (address, scope)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Suppressed messages of a group, counted in its row once their rows are pruned.
ALTER TABLE outbox_groups ADD COLUMN IF NOT EXISTS suppressed BIGINT NOT NULL DEFAULT 0;

-- Tokens that may be used once (one-click unsubscribe links, webhook signatures): a second
-- use is refused while the row exists.
CREATE TABLE IF NOT EXISTS outbox_used_tokens (
    kind VARCHAR(20) NOT NULL,  -- unsubscribe | mailgun | ...
    token VARCHAR(100) NOT NULL,  -- a digest of the token, never the token itself
    used_at BIGINT NOT NULL,
    PRIMARY KEY (kind, token)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
