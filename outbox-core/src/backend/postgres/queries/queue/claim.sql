-- Claims up to $3 due, queued messages of type $1 (unless the type or their group is
-- paused, or their group was cancelled after they were enqueued) in claim order (types that do not use
-- ordering keys; claim_ordered.sql for those that do), straight to running, leased to $4 for $5 ms, counting the attempt and the claim (the
-- fencing token its settlement names; never given back); rows another claim holds are
-- skipped. $2 now (unix ms; NULL: the database's clock)
UPDATE outbox_messages AS m
SET status = 'running', attempts = m.attempts + 1, claims = m.claims + 1, lease_owner = $4, lease_expires_at = (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)) + $5
FROM (
    SELECT id FROM outbox_messages AS q
    WHERE status = 'queued' AND type_tag = $1 AND due_at <= (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint))
      AND NOT EXISTS (SELECT 1 FROM outbox_paused WHERE type_tag = $1)
      AND (q.group_name IS NULL OR NOT EXISTS (
          SELECT 1 FROM outbox_groups AS g WHERE g.name = q.group_name
          AND (g.paused_at IS NOT NULL OR g.cancelled_at >= q.enqueued_at)))
    ORDER BY priority DESC, due_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
) AS due
WHERE m.id = due.id
RETURNING m.id, m.payload, m.attempts, m.max_attempts, m.priority, m.due_at, m.claims, m.group_name, m.enqueued_at
