-- Forgets rule matches older than any window (a year). ? before (unix s)
DELETE FROM outbox_site_hits WHERE at < ?
