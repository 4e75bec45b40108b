-- A message in flight to a site, until it ends or its lease runs out (a holder that
-- takes its slot again, or renews it, moves its end).
-- $1 site, $2 holder (message id and claim), $3 now (unix s; NULL: the database's
-- clock), $4 lease (s)
INSERT INTO outbox_site_slots (site, holder, expires_at)
VALUES ($1, $2, COALESCE($3::float8, extract(epoch FROM now())::float8) + $4::float8)
ON CONFLICT (site, holder) DO UPDATE SET expires_at = excluded.expires_at
