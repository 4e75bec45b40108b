-- A rule's matches at a site since a time. ? site, ? rule, ? since (unix s)
SELECT COUNT(*) FROM outbox_site_hits WHERE site = $1 AND rule = $2 AND at >= $3
