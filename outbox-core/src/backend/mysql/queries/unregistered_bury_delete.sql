-- Removes the queued messages of types not in the list just copied to the dead letters.
-- ? JSON array of type tags, ? reason (unused), ? now (unused)
DELETE m FROM outbox_messages AS m
CROSS JOIN (SELECT ? AS tags, ? AS reason, ? AS now_ms) AS p
WHERE m.status = 'queued' AND NOT JSON_CONTAINS(p.tags, JSON_QUOTE(m.type_tag))
