-- One site's row, locked until the transaction ends (SQLite: the write transaction holds
-- the database), and the time it is read at. ?1 now (unix s; SQLite binds the process
-- clock), ?2 site
SELECT site, per_second, burst, max_concurrent, tokens, updated_at, slow_per_second, slowed_until,
    suspended_until, reason, configured, ?1
FROM outbox_sites WHERE site = ?2
