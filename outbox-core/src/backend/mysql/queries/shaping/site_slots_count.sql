-- The messages of a site in flight: slots whose lease has not run out (those of a holder
-- that died are ignored, and deleted at the next release). ? site, ? now (unix s)
SELECT COUNT(*) FROM outbox_site_slots WHERE site = ? AND expires_at > ?
