-- Forgets rule matches older than any window. ? now (unix s), ? age (s: a year)
DELETE FROM outbox_site_hits WHERE at < ? - ?
