-- Opens breaker ?1 at ?2 (unix ms) with reason ?3, its first probe due ?4 ms later; changes
-- nothing (0 rows) when it is open already.
UPDATE outbox_breakers
SET opened_at = ?2, reason = ?3, probes_failed = 0, probe_at = ?2 + ?4,
    probe_owner = NULL, probe_until = NULL, warned_at = ?2, times_opened = times_opened + 1
WHERE name = ?1 AND opened_at IS NULL
