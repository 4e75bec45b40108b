-- Every site with its live slots. ? now (unix s; SQLite binds the process clock)
SELECT s.site, s.per_second, s.burst, s.max_concurrent, s.tokens, s.updated_at,
    s.slow_per_second, s.slowed_until, s.suspended_until, s.reason, s.configured,
    (SELECT COUNT(*) FROM outbox_site_slots l WHERE l.site = s.site AND l.expires_at > ?)
FROM outbox_sites s
ORDER BY s.site
