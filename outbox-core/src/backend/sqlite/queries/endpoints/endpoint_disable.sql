-- Disables endpoint ?4 of kind ?3 for reason ?1 at ?2 (unix ms); a disabled one keeps its
-- first time and takes the new reason.
UPDATE outbox_endpoints SET
    disabled_at = COALESCE(disabled_at, ?2), disabled_reason = ?1, updated_at = ?2
WHERE kind = ?3 AND name = ?4
