-- One site's row, locked until the transaction ends. ? site
SELECT site, per_second, burst, max_concurrent, tokens, updated_at, slow_per_second, slowed_until,
    suspended_until, reason, configured
FROM outbox_sites WHERE site = ?
FOR UPDATE
