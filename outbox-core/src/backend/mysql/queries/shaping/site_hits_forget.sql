-- Forgets a rule's matches at a site older than its window. ? site, ? rule, ? before
DELETE FROM outbox_site_hits WHERE site = ? AND rule = ? AND at < ?
