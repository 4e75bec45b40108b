-- Sends kept done messages again, in place (same id, the attempt log kept): queued, due
-- now, attempts reset. ? now (unix ms; NULL: the database's clock), then the filters, each
-- optional (NULL: any) and given twice: id, type, group, done at or after (unix ms), done
-- before (unix ms).
UPDATE outbox_messages AS m,
    (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms,
            ? AS id_set, ? AS id, ? AS type_set, ? AS type_tag, ? AS group_set, ? AS group_name,
            ? AS after_set, ? AS after_ms, ? AS before_set, ? AS before_ms) AS p
SET m.status = 'queued', m.attempts = 0, m.due_at = p.now_ms, m.done_at = NULL,
    m.last_error = NULL, m.lease_owner = NULL, m.lease_expires_at = NULL
WHERE m.status = 'done'
  AND (p.id_set IS NULL OR m.id = p.id) AND (p.type_set IS NULL OR m.type_tag = p.type_tag)
  AND (p.group_set IS NULL OR m.group_name = p.group_name)
  AND (p.after_set IS NULL OR m.done_at >= p.after_ms) AND (p.before_set IS NULL OR m.done_at < p.before_ms)
