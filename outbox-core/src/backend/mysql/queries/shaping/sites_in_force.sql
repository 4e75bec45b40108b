-- The sites the workers must ask: configured limits, or a rule's action in force; and the
-- time they are read at, in every row (one row of NULL site columns when none is in force).
-- ? now (unix s; NULL: the database's clock)
SELECT s.site, s.per_second, s.burst, s.max_concurrent, s.tokens, s.updated_at,
    s.slow_per_second, s.slowed_until, s.suspended_until, s.reason, s.configured,
    CAST(p.now_s AS DOUBLE)
FROM (SELECT COALESCE(?, @@timestamp) AS now_s) AS p
LEFT JOIN outbox_sites s
    ON s.configured = 1 OR s.slowed_until > p.now_s OR s.suspended_until > p.now_s
ORDER BY s.site
