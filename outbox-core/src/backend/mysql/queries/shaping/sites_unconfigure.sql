-- Drops the configured limits of every site (before the configuration is written again,
-- in the same transaction): a site no longer configured keeps only what rules did to it.
UPDATE outbox_sites SET per_second = NULL, max_concurrent = NULL, configured = 0 WHERE configured = 1
