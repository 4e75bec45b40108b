-- 1 if any message of the given, unpaused types (outside paused groups, not held by an earlier message of their ordering key) is due at ?3 (unix
-- ms) or held by a worker whose name starts with ?2, else 0. ?1 JSON array of type tags
SELECT COUNT(*) FROM (
    SELECT 1 FROM outbox_messages
    WHERE type_tag IN (SELECT value FROM json_each(?1))
      AND type_tag NOT IN (SELECT type_tag FROM outbox_paused)
      AND ((status = 'queued' AND due_at <= ?3
            AND (group_name IS NULL OR NOT EXISTS (
                SELECT 1 FROM outbox_groups AS g WHERE g.name = group_name AND g.paused_at IS NOT NULL))
            AND (outbox_messages.order_key IS NULL OR (
                NOT EXISTS (SELECT 1 FROM outbox_messages AS o WHERE o.order_key = outbox_messages.order_key
                    AND o.type_tag = outbox_messages.type_tag AND o.id < outbox_messages.id AND o.status IN ('queued', 'running'))
                AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters AS d
                    WHERE d.order_key = outbox_messages.order_key AND d.type_tag = outbox_messages.type_tag))))
        OR (status = 'running' AND substr(lease_owner, 1, length(?2)) = ?2))
    LIMIT 1
)
