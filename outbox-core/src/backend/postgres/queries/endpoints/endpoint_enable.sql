-- Enables endpoint $3 of kind $2 at $1 (unix ms; NULL: the database's clock); its failure
-- clock starts again.
UPDATE outbox_endpoints SET
    disabled_at = NULL, disabled_reason = NULL, failing_since = NULL,
    updated_at = COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint)
WHERE kind = $2 AND name = $3
