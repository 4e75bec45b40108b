-- A message in flight to a site, until it ends or its lease runs out (a holder that
-- takes its slot again, after a release that could not be written, renews it).
-- ? site, ? holder (message id and claim), ? expires_at (unix s)
INSERT INTO outbox_site_slots (site, holder, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (site, holder) DO UPDATE SET expires_at = excluded.expires_at
