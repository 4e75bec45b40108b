-- Every paused type.
SELECT type_tag, paused_at, reason FROM outbox_paused ORDER BY type_tag
