-- Deletes up to ?3 message events recorded more than ?2 ms before ?1 (now, unix ms).
DELETE FROM outbox_message_events
WHERE (provider, event_id) IN (
    SELECT provider, event_id FROM outbox_message_events WHERE recorded_at < ?1 - ?2 LIMIT ?3
)
