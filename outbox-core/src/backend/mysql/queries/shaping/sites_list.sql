-- Every site with its live slots. ? now (unix s; NULL: the database's clock)
SELECT s.site, s.per_second, s.burst, s.max_concurrent, s.tokens, s.updated_at,
    s.slow_per_second, s.slowed_until, s.suspended_until, s.reason, s.configured,
    (SELECT COUNT(*) FROM outbox_site_slots l WHERE l.site = s.site
        AND l.expires_at > COALESCE(?, @@timestamp))
FROM outbox_sites s
ORDER BY s.site
