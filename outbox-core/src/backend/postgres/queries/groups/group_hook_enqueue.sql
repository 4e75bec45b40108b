-- Enqueues group $1's completion message (its hook's type, payload, attempts and priority)
-- as id $3, due at $2 (unix ms; NULL: the database's clock), and wakes the type's idle
-- workers at commit.
WITH ins AS (
    INSERT INTO outbox_messages
        (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, enqueued_at)
    SELECT $3, hook_type, hook_payload, 'queued', 0, hook_max_attempts, n.now, hook_priority, n.now
    FROM outbox_groups
    CROSS JOIN (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now) AS n
    WHERE name = $1 AND hook_type IS NOT NULL
    RETURNING type_tag
)
SELECT pg_notify('outbox_messages', ins.type_tag) FROM ins
