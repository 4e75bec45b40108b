-- One site's row, locked until the transaction ends, and the time it is read at.
-- ? now (unix s; NULL: the database's clock), ? site
SELECT site, per_second, burst, max_concurrent, tokens, updated_at, slow_per_second, slowed_until,
    suspended_until, reason, configured, CAST(COALESCE(?, @@timestamp) AS DOUBLE)
FROM outbox_sites WHERE site = ?
FOR UPDATE
