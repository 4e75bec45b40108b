-- One site's row, locked until the transaction ends, and the time it is read at.
-- $1 now (unix s; NULL: the database's clock), $2 site
SELECT site, per_second, burst, max_concurrent, tokens, updated_at, slow_per_second, slowed_until,
    suspended_until, reason, configured, COALESCE($1::float8, extract(epoch FROM now())::float8)
FROM outbox_sites WHERE site = $2
FOR UPDATE
