-- The events of one message, oldest first: ?1 message id, ?2 limit. Columns: provider,
-- event_id, external_id, kind, recipient, detail, at.
SELECT provider, event_id, external_id, kind, recipient, detail, at FROM outbox_message_events
WHERE message_id = ?1
ORDER BY at, recorded_at, event_id
LIMIT ?2
