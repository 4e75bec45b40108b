-- Stores endpoint ?2 of kind ?1 with settings ?3 at ?4 (unix ms): a new one enabled, a
-- known one keeps its state and takes the new settings.
INSERT INTO outbox_endpoints (kind, name, settings, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?4)
ON CONFLICT (kind, name) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at
