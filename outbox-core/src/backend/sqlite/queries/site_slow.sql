-- A rule slows a site: its rate until a time, starting without a token.
-- ? slow_per_second, ? slowed_until, ? reason, ? now, ? site (times in unix s)
UPDATE outbox_sites
SET slow_per_second = ?, slowed_until = ?, reason = ?, tokens = 0, updated_at = ?
WHERE site = ?
