-- Enables endpoint ?3 of kind ?2 at ?1 (unix ms); its failure clock starts again.
UPDATE outbox_endpoints SET
    disabled_at = NULL, disabled_reason = NULL, failing_since = NULL, updated_at = ?1
WHERE kind = ?2 AND name = ?3
