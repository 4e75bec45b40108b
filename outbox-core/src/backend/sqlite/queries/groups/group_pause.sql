-- Pauses group ?1 (idempotent: a second pause keeps the first time) at ?2 (unix ms) with
-- reason ?3.
INSERT INTO outbox_groups (name, paused_at, pause_reason) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE SET
    paused_at = COALESCE(paused_at, excluded.paused_at), pause_reason = excluded.pause_reason
