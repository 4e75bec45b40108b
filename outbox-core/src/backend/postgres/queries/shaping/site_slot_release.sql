-- The message ended: its slot is free, and so are the site's slots whose lease ran out.
-- $1 site, $2 holder, $3 now (unix s; NULL: the database's clock)
DELETE FROM outbox_site_slots
WHERE site = $1
  AND (holder = $2 OR expires_at <= COALESCE($3::float8, extract(epoch FROM now())::float8))
