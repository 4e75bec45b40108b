-- Forgets a rule's matches at a site older than its window before now. ? site, ? rule,
-- ? now (unix s), ? window (s)
DELETE FROM outbox_site_hits WHERE site = ? AND rule = ? AND at < ? - ?
