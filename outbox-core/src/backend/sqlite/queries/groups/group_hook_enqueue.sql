-- Enqueues group ?1's completion message (its hook's type, payload, attempts and priority)
-- as id ?3, due at ?2 (unix ms).
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, enqueued_at)
SELECT ?3, hook_type, hook_payload, 'queued', 0, hook_max_attempts, ?2, hook_priority, ?2
FROM outbox_groups WHERE name = ?1 AND hook_type IS NOT NULL
