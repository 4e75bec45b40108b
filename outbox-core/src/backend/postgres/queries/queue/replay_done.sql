-- Sends kept done messages again, in place (same id, the attempt log kept): queued, due at
-- $1 (unix ms; NULL: the database's clock), attempts reset. Filters, each optional (NULL:
-- any): $2/$3 id, $4/$5 type, $6/$7 group, $8/$9 done at or after (unix ms), $10/$11 done
-- before (unix ms). Wakes idle workers of the replayed types at commit.
WITH replayed AS (
    UPDATE outbox_messages
    SET status = 'queued', attempts = 0,
        due_at = COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint),
        done_at = NULL, last_error = NULL, lease_owner = NULL, lease_expires_at = NULL
    WHERE status = 'done'
      AND ($2::text IS NULL OR id = $3::text) AND ($4::text IS NULL OR type_tag = $5::text)
      AND ($6::text IS NULL OR group_name = $7::text)
      AND ($8::bigint IS NULL OR done_at >= $9::bigint) AND ($10::bigint IS NULL OR done_at < $11::bigint)
    RETURNING id, type_tag
)
SELECT replayed.id FROM replayed
CROSS JOIN LATERAL (SELECT pg_notify('outbox_messages', replayed.type_tag)) AS woken
