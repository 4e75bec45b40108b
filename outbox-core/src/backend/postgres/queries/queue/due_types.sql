-- Which of the types in $1 (JSON array of tags) are not paused and have a queued message due
-- at $2 (now, unix ms; NULL: the database's clock) outside paused groups and not held by an
-- earlier message of its ordering key: one probe of the claim index per type, stopping at
-- the first due message, so an idle process asks about all its types at once. Keyed
-- messages are asked apart (the partial index), so the probe of the others keeps its plan.
SELECT t.tag
FROM jsonb_array_elements_text($1::jsonb) AS t(tag)
WHERE NOT EXISTS (SELECT 1 FROM outbox_paused AS p WHERE p.type_tag = t.tag)
  AND (EXISTS (
    SELECT 1 FROM outbox_messages AS m
    WHERE m.type_tag = t.tag AND m.status = 'queued' AND m.order_key IS NULL
      AND m.due_at <= (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint))
      AND (m.group_name IS NULL OR NOT EXISTS (
          SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL))
  ) OR EXISTS (
    SELECT 1 FROM outbox_messages AS m
    WHERE m.order_key IS NOT NULL AND m.type_tag = t.tag AND m.status = 'queued'
      AND m.due_at <= (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint))
      AND (m.group_name IS NULL OR NOT EXISTS (
          SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL))
      AND NOT EXISTS (SELECT 1 FROM outbox_messages AS o WHERE o.order_key = m.order_key
          AND o.type_tag = m.type_tag AND o.id < m.id AND o.status IN ('queued', 'running'))
      AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters AS d
          WHERE d.order_key = m.order_key AND d.type_tag = m.type_tag)
  ))
