-- Deletes matching dead letters. ? id, ? type, ? failed before (unix ms), ? recipient, all optional
DELETE d FROM outbox_dead_letters AS d CROSS JOIN (SELECT ? AS id, ? AS type_tag, ? AS before_ms, ? AS recipient) AS p
WHERE (p.id IS NULL OR d.id = p.id) AND (p.type_tag IS NULL OR d.type_tag = p.type_tag) AND (p.before_ms IS NULL OR d.failed_at < p.before_ms)
  AND (p.recipient IS NULL OR d.recipient = p.recipient)
