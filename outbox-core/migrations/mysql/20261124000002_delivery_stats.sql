-- What the workers did, per minute and type: delivered (orphans included), failed attempts
-- and messages moved to the dead letters, added by each process every 10 s; read by the
-- web admin's chart and kept two days.
CREATE TABLE IF NOT EXISTS outbox_stats (
    minute BIGINT NOT NULL,                -- unix ms of the minute's start
    type_tag VARCHAR(200) NOT NULL,
    delivered BIGINT NOT NULL DEFAULT 0,
    failed BIGINT NOT NULL DEFAULT 0,
    dead BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, type_tag)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
