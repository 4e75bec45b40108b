-- Sends kept done messages again, in place (same id, the attempt log kept): queued, due at
-- ?1 (unix ms), attempts reset. Filters, each optional (NULL: any): ?2/?3 id, ?4/?5 type,
-- ?6/?7 group, ?8/?9 done at or after (unix ms), ?10/?11 done before (unix ms).
UPDATE outbox_messages
SET status = 'queued', attempts = 0, due_at = ?1, done_at = NULL, last_error = NULL,
    lease_owner = NULL, lease_expires_at = NULL
WHERE status = 'done'
  AND (?2 IS NULL OR id = ?3) AND (?4 IS NULL OR type_tag = ?5)
  AND (?6 IS NULL OR group_name = ?7)
  AND (?8 IS NULL OR done_at >= ?9) AND (?10 IS NULL OR done_at < ?11)
