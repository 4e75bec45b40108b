-- Forgets rule matches older than any window. $1 now (unix s; NULL: the database's
-- clock), $2 age (s: a year)
DELETE FROM outbox_site_hits
WHERE at < COALESCE($1::float8, extract(epoch FROM now())::float8) - $2::float8
