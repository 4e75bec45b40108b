-- The events of one message, oldest first: ? message id, ? limit. Columns: provider,
-- event_id, external_id, kind, recipient, detail, at.
SELECT provider, event_id, external_id, kind, recipient, detail, at FROM outbox_message_events
WHERE message_id = ?
ORDER BY at, recorded_at, event_id
LIMIT ?
