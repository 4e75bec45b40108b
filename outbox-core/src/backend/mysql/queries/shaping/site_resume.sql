-- Ends a site's slowdown and suspension. ? site
UPDATE outbox_sites
SET slow_per_second = NULL, slowed_until = NULL, suspended_until = NULL, reason = NULL
WHERE site = ?
