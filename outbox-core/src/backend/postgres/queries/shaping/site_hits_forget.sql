-- Forgets a rule's matches at a site older than its window before now. $1 site, $2 rule,
-- $3 now (unix s; NULL: the database's clock), $4 window (s)
DELETE FROM outbox_site_hits
WHERE site = $1 AND rule = $2
  AND at < COALESCE($3::float8, extract(epoch FROM now())::float8) - $4::float8
