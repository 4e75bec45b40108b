-- A message in flight to a site, until it ends or its lease runs out (a holder that
-- takes its slot again, or renews it, moves its end).
-- ? site, ? holder (message id and claim), ? now (unix s; SQLite binds the process
-- clock), ? lease (s)
INSERT INTO outbox_site_slots (site, holder, expires_at) VALUES (?, ?, ? + ?)
ON CONFLICT (site, holder) DO UPDATE SET expires_at = excluded.expires_at
