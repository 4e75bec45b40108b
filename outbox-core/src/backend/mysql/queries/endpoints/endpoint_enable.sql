-- Enables an endpoint: ? now (unix ms; NULL: the database's clock), ? kind, ? name; its
-- failure clock starts again.
UPDATE outbox_endpoints SET
    disabled_at = NULL, disabled_reason = NULL, failing_since = NULL,
    updated_at = COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED))
WHERE kind = ? AND name = ?
