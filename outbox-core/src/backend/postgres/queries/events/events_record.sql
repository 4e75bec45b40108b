-- Records message events; a repeat (same provider and event id) is skipped. $1 JSON
-- [{"message_id","provider","event_id","external_id","kind","recipient"?,"detail","at"}]
-- (at: unix ms), $2 now (unix ms; NULL: the database's clock)
INSERT INTO outbox_message_events (provider, event_id, message_id, external_id, kind, recipient, detail, at, recorded_at)
SELECT r.provider, r.event_id, r.message_id, r.external_id, r.kind, r.recipient, r.detail, r.at,
       (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint))
FROM jsonb_to_recordset($1::jsonb) AS r(provider text, event_id text, message_id text, external_id text,
                                        kind text, recipient text, detail text, at bigint)
ORDER BY 1, 2
ON CONFLICT (provider, event_id) DO NOTHING
