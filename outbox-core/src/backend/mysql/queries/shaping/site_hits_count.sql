-- A rule's matches at a site within its window before now. ? site, ? rule, ? now (unix s;
-- NULL: the database's clock), ? window (s)
SELECT COUNT(*) FROM outbox_site_hits
WHERE site = ? AND rule = ? AND at >= COALESCE(?, @@timestamp) - ?
