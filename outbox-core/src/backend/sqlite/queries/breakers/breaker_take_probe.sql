-- Gives the probe of open breaker ?1 to ?3 for ?4 ms from ?2 (unix ms), when it is due and
-- nobody holds it (or the holder's lease ran out).
UPDATE outbox_breakers SET probe_owner = ?3, probe_until = ?2 + ?4
WHERE name = ?1 AND opened_at IS NOT NULL AND probe_at <= ?2
  AND (probe_owner IS NULL OR probe_until <= ?2)
