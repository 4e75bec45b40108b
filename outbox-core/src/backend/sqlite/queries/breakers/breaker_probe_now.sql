-- Makes the next probe of open breaker ?1 due at ?2 (unix ms).
UPDATE outbox_breakers SET probe_at = ?2 WHERE name = ?1 AND opened_at IS NOT NULL
