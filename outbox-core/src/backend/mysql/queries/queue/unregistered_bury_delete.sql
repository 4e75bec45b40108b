-- Removes the queued messages of types not in the list that the copy just put into the
-- dead letters (joined to them: a message enqueued or re-queued between the two statements,
-- which READ COMMITTED lets the delete see, is left in the queue, not lost).
-- ? JSON array of type tags, ? reason (unused), ? now (unused)
DELETE m FROM outbox_messages AS m
JOIN outbox_dead_letters AS d ON d.id = m.id
CROSS JOIN (SELECT ? AS tags, ? AS reason, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
WHERE m.status = 'queued' AND NOT JSON_CONTAINS(p.tags, JSON_QUOTE(m.type_tag))
