-- Frees the slots of a site whose lease ran out (their holder died). ? site, ? now (unix s)
DELETE FROM outbox_site_slots WHERE site = ? AND expires_at <= ?
