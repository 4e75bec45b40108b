-- A rule slows a site: its rate until a time. A site not slowed yet starts without a token;
-- one slowed already keeps its tokens and has its slowdown extended. The token columns
-- are set first (MySQL assigns left to right): they read the old slowed_until.
-- ? now, ? now, ? now, ? slow_per_second, ? slowed_until, ? reason, ? site (times in unix s)
UPDATE outbox_sites
SET tokens = CASE WHEN slowed_until > ? THEN tokens ELSE 0 END,
    updated_at = CASE WHEN slowed_until > ? THEN updated_at ELSE ? END,
    slow_per_second = ?, slowed_until = ?, reason = ?
WHERE site = ?
