-- A message in flight to a site, until it ends or its lease runs out.
-- ? site, ? holder (message id and claim), ? expires_at (unix s)
INSERT INTO outbox_site_slots (site, holder, expires_at) VALUES (?, ?, ?)
