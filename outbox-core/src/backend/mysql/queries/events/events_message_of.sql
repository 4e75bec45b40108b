-- The outbox message a provider accepted under its id: ? provider, ? external id.
SELECT message_id FROM outbox_message_events
WHERE provider = ? AND external_id = ? AND kind = 'accepted'
ORDER BY recorded_at DESC
LIMIT 1
