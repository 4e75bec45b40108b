-- 1 if any message of the given, unpaused types (outside paused groups) is due at ?3 (unix
-- ms) or held by a worker whose name starts with ?2, else 0. ?1 JSON array of type tags
SELECT COUNT(*) FROM (
    SELECT 1 FROM outbox_messages
    WHERE type_tag IN (SELECT value FROM json_each(?1))
      AND type_tag NOT IN (SELECT type_tag FROM outbox_paused)
      AND ((status = 'queued' AND due_at <= ?3
            AND (group_name IS NULL OR NOT EXISTS (
                SELECT 1 FROM outbox_groups AS g WHERE g.name = group_name AND g.paused_at IS NOT NULL)))
        OR (status = 'running' AND substr(lease_owner, 1, length(?2)) = ?2))
    LIMIT 1
)
