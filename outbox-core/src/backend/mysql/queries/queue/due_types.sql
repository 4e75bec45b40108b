-- Which of the given types are not paused and have a queued message due now (outside paused
-- groups): one probe of
-- the claim index per type, stopping at the first due message, so an idle process asks
-- about all its types at once. ? JSON array of tags, ? now (unix ms; NULL: the database's
-- clock). (The time is written inside the subquery: MariaDB 10.11 re-executing this
-- prepared statement with it in a joined derived table fails with "Unknown column".)
SELECT t.tag
FROM JSON_TABLE(?, '$[*]' COLUMNS (tag VARCHAR(200) PATH '$')) AS t
WHERE NOT EXISTS (SELECT 1 FROM outbox_paused AS x WHERE x.type_tag = t.tag)
  AND EXISTS (
    SELECT 1 FROM outbox_messages AS m FORCE INDEX (outbox_messages_claim)
    WHERE m.type_tag = t.tag AND m.status = 'queued'
      AND m.due_at <= COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED))
      AND (m.group_name IS NULL OR NOT EXISTS (
          SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL))
      AND (m.order_key IS NULL OR (
          NOT EXISTS (SELECT 1 FROM outbox_messages AS o FORCE INDEX (outbox_messages_order_key) WHERE o.order_key = m.order_key
              AND o.type_tag = m.type_tag AND o.id < m.id AND o.status IN ('queued', 'running'))
          AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters AS d
              WHERE d.order_key = m.order_key AND d.type_tag = m.type_tag)))
  )
