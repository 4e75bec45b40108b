-- Forgets the sites a rule created whose actions ended before a time (a day ago).
-- ? before, ? before (unix s)
DELETE FROM outbox_sites
WHERE configured = 0 AND COALESCE(slowed_until, 0) < ? AND COALESCE(suspended_until, 0) < ?
