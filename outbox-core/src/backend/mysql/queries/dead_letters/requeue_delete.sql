-- Removes the matching dead letters that are now in the queue (what this requeue moved).
-- ? now (unused), ? id, ? type, ? failed before, all optional
DELETE d FROM outbox_dead_letters AS d
JOIN outbox_messages AS m ON m.id = d.id
CROSS JOIN (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms, ? AS id, ? AS type_tag, ? AS before_ms, ? AS recipient) AS p
WHERE (p.id IS NULL OR d.id = p.id) AND (p.type_tag IS NULL OR d.type_tag = p.type_tag) AND (p.before_ms IS NULL OR d.failed_at < p.before_ms)
  AND (p.recipient IS NULL OR d.recipient = p.recipient)
