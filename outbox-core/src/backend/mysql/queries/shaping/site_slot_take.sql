-- A message in flight to a site, until it ends or its lease runs out (a holder that
-- takes its slot again, or renews it, moves its end).
-- ? site, ? holder (message id and claim), ? now (unix s; NULL: the database's clock),
-- ? lease (s)
INSERT INTO outbox_site_slots (site, holder, expires_at) VALUES (?, ?, COALESCE(?, @@timestamp) + ?)
ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at)
