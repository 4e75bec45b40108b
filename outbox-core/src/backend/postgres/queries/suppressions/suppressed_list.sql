-- The messages kept as suppressed, newest first. $1 limit
SELECT id, type_tag, group_name, COALESCE(last_error, 'suppressed'), done_at FROM outbox_messages
WHERE status = 'suppressed'
ORDER BY done_at DESC, id DESC
LIMIT $1
