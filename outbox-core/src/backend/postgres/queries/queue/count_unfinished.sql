-- 1 if any message of the given, unpaused types (outside paused groups, not held by an
-- earlier message of their ordering key) is due at $3 (now, unix ms; NULL: the database's
-- clock) or held by a worker whose name starts with $2, else 0. $1 JSON array of type tags.
-- Messages without an ordering key and keyed ones are asked apart: the planner keeps its
-- plan for the first (a correlated check under OR made every drain's end check scan), and
-- the second reads only keyed rows (the partial index).
SELECT COUNT(*) FROM (
    (SELECT 1 FROM outbox_messages AS m
     WHERE m.type_tag IN (SELECT jsonb_array_elements_text($1::jsonb))
       AND NOT EXISTS (SELECT 1 FROM outbox_paused AS p WHERE p.type_tag = m.type_tag)
       AND ((m.status = 'queued' AND m.order_key IS NULL
             AND m.due_at <= (SELECT COALESCE($3::bigint, (extract(epoch FROM now()) * 1000)::bigint))
             AND (m.group_name IS NULL OR NOT EXISTS (
                 SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL)))
         OR (m.status = 'running' AND starts_with(m.lease_owner, $2)))
     LIMIT 1)
    UNION ALL
    (SELECT 1 FROM outbox_messages AS m
     WHERE m.order_key IS NOT NULL AND m.status = 'queued'
       AND m.type_tag IN (SELECT jsonb_array_elements_text($1::jsonb))
       AND NOT EXISTS (SELECT 1 FROM outbox_paused AS p WHERE p.type_tag = m.type_tag)
       AND m.due_at <= (SELECT COALESCE($3::bigint, (extract(epoch FROM now()) * 1000)::bigint))
       AND (m.group_name IS NULL OR NOT EXISTS (
           SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL))
       AND NOT EXISTS (SELECT 1 FROM outbox_messages AS o WHERE o.order_key = m.order_key
           AND o.type_tag = m.type_tag AND o.id < m.id AND o.status IN ('queued', 'running'))
       AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters AS d
           WHERE d.order_key = m.order_key AND d.type_tag = m.type_tag)
     LIMIT 1)
    LIMIT 1
) AS any_left
