-- Pauses group $1 (idempotent: a second pause keeps the first time) at $2 (unix ms; NULL:
-- the database's clock) with reason $3.
INSERT INTO outbox_groups AS g (name, paused_at, pause_reason)
VALUES ($1, COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint), $3)
ON CONFLICT (name) DO UPDATE SET
    paused_at = COALESCE(g.paused_at, EXCLUDED.paused_at), pause_reason = EXCLUDED.pause_reason
