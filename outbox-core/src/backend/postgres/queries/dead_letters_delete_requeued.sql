-- Removes the dead letters that are back in the queue. $1 id, $2 type, $3 failed before
DELETE FROM outbox_dead_letters d
WHERE ($1::text IS NULL OR d.id = $1) AND ($2::text IS NULL OR d.type_tag = $2) AND ($3::bigint IS NULL OR d.failed_at < $3)
  AND EXISTS (SELECT 1 FROM apalis.jobs j WHERE j.id = d.id)
