-- Closes breaker ?1 at ?2 (unix ms); 0 rows when it was not open.
UPDATE outbox_breakers
SET opened_at = NULL, closed_at = ?2, probe_at = NULL, probe_owner = NULL, probe_until = NULL
WHERE name = ?1 AND opened_at IS NOT NULL
