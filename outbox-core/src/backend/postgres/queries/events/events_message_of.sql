-- The outbox message a provider accepted under its id: $1 provider, $2 external id.
SELECT message_id FROM outbox_message_events
WHERE provider = $1 AND external_id = $2 AND kind = 'accepted'
ORDER BY recorded_at DESC
LIMIT 1
