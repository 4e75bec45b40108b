-- The sites the workers must ask: configured limits, or a rule's action in force.
-- ? now, ? now (unix s)
SELECT site, per_second, burst, max_concurrent, tokens, updated_at, slow_per_second, slowed_until,
    suspended_until, reason, configured
FROM outbox_sites
WHERE configured = 1 OR slowed_until > ? OR suspended_until > ?
ORDER BY site
