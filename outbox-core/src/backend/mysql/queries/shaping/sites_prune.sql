-- Forgets the sites a rule created whose actions ended more than an age before now.
-- ? now (unix s; NULL: the database's clock), ? age (s: a day)
DELETE FROM outbox_sites
WHERE configured = 0 AND GREATEST(COALESCE(slowed_until, 0), COALESCE(suspended_until, 0))
    < COALESCE(?, @@timestamp) - ?
