-- Forgets the sites a rule created whose actions ended more than an age before now.
-- $1 now (unix s; NULL: the database's clock), $2 age (s: a day)
DELETE FROM outbox_sites
WHERE configured = 0 AND GREATEST(COALESCE(slowed_until, 0), COALESCE(suspended_until, 0))
    < COALESCE($1::float8, extract(epoch FROM now())::float8) - $2::float8
