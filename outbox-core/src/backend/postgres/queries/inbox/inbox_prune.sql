-- Deletes up to $3 inbox rows processed more than $2 ms before $1 (now, unix ms; NULL: the
-- database's clock).
DELETE FROM outbox_inbox
WHERE (consumer, message_id) IN (
    SELECT consumer, message_id FROM outbox_inbox
    WHERE processed_at < (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint)) - $2
    LIMIT $3
)
