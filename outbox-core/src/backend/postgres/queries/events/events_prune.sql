-- Deletes up to $3 message events recorded more than $2 ms before $1 (now, unix ms; NULL:
-- the database's clock).
DELETE FROM outbox_message_events
WHERE (provider, event_id) IN (
    SELECT provider, event_id FROM outbox_message_events
    WHERE recorded_at < (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint)) - $2
    LIMIT $3
)
