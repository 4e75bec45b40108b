-- The message ended: its slot is free, and so are the site's slots whose lease ran out.
-- ? site, ? holder, ? now (unix s; NULL: the database's clock)
DELETE FROM outbox_site_slots
WHERE site = ? AND (holder = ? OR expires_at <= COALESCE(?, @@timestamp))
