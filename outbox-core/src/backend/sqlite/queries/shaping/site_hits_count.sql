-- A rule's matches at a site since a time. ? site, ? rule, ? since (unix s)
SELECT COUNT(*) FROM outbox_site_hits WHERE site = ? AND rule = ? AND at >= ?
