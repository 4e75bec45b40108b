-- The probe just taken of breaker ?1: failed probes so far, and ms since the last WARN at
-- ?2 (unix ms).
SELECT probes_failed, ?2 - COALESCE(warned_at, 0) FROM outbox_breakers WHERE name = ?1
