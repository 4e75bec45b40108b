-- An endpoint failed: ? now (unix ms; NULL: the database's clock), ? kind, ? name; its
-- failure clock starts unless it runs already.
UPDATE outbox_endpoints SET failing_since = COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED))
WHERE kind = ? AND name = ? AND failing_since IS NULL
