-- The messages of a site in flight. ? site
SELECT COUNT(*) FROM outbox_site_slots WHERE site = ?
