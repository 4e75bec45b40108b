-- Endpoints: the named downstreams of a message kind (a webhook's customer URLs), with the
-- kind's settings as JSON text, whether they are disabled (and why), and since when every
-- delivery to them has failed. Times are unix milliseconds.
CREATE TABLE IF NOT EXISTS outbox_endpoints (
    kind VARCHAR(100) NOT NULL,
    name VARCHAR(255) NOT NULL,
    settings MEDIUMTEXT NOT NULL,
    disabled_at BIGINT,
    disabled_reason TEXT,
    failing_since BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (kind, name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
