-- Forgets rule matches older than any window. ? now (unix s; NULL: the database's clock),
-- ? age (s: a year)
DELETE FROM outbox_site_hits WHERE at < COALESCE(?, @@timestamp) - ?
