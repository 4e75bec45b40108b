-- ?3's probe of breaker ?1 failed at ?2 (unix ms) with reason ?4: the next one is due ?5 ms
-- later; ?6 = 1 when a WARN was logged for it now.
UPDATE outbox_breakers
SET probes_failed = probes_failed + 1, reason = ?4, probe_at = ?2 + ?5,
    probe_owner = NULL, probe_until = NULL,
    warned_at = CASE WHEN ?6 = 1 THEN ?2 ELSE warned_at END
WHERE name = ?1 AND opened_at IS NOT NULL AND probe_owner = ?3
