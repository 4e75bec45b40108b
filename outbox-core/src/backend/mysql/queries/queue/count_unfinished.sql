-- 1 if any message of the given, unpaused types (outside paused groups, not held by an earlier message of their ordering key) is due now or held by a worker whose name
-- starts with the prefix, else 0. ? JSON array of type tags, ? prefix, ? now (unix ms; NULL: the database's clock)
SELECT COUNT(*) FROM (
    SELECT 1
    FROM JSON_TABLE(?, '$[*]' COLUMNS (q VARCHAR(200) PATH '$')) AS t
    JOIN (SELECT ? AS prefix, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
    JOIN outbox_messages AS m ON m.type_tag = t.q
    WHERE m.type_tag NOT IN (SELECT type_tag FROM outbox_paused)
      AND ((m.status = 'queued' AND m.due_at <= p.now_ms
            AND (m.group_name IS NULL OR NOT EXISTS (
                SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL))
            AND (m.order_key IS NULL OR (
                NOT EXISTS (SELECT 1 FROM outbox_messages AS o FORCE INDEX (outbox_messages_order_key) WHERE o.order_key = m.order_key
                    AND o.type_tag = m.type_tag AND o.id < m.id AND o.status IN ('queued', 'running'))
                AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters AS d
                    WHERE d.order_key = m.order_key AND d.type_tag = m.type_tag))))
        OR (m.status = 'running' AND LEFT(m.lease_owner, CHAR_LENGTH(p.prefix)) = p.prefix))
    LIMIT 1
) AS any_left
