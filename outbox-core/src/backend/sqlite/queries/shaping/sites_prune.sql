-- Forgets the sites a rule created whose actions ended more than an age before now.
-- ?1 now (unix s), ?2 age (s: a day)
DELETE FROM outbox_sites
WHERE configured = 0 AND MAX(COALESCE(slowed_until, 0), COALESCE(suspended_until, 0)) < ?1 - ?2
