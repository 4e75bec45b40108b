-- Records message events; a repeat (same provider and event id) is skipped. ?1 JSON
-- [{"message_id","provider","event_id","external_id","kind","recipient"?,"detail","at"}]
-- (at: unix ms), ?2 now (unix ms)
INSERT INTO outbox_message_events (provider, event_id, message_id, external_id, kind, recipient, detail, at, recorded_at)
SELECT value ->> 'provider', value ->> 'event_id', value ->> 'message_id', value ->> 'external_id',
       value ->> 'kind', value ->> 'recipient', value ->> 'detail', value ->> 'at', ?2
FROM json_each(?1)
WHERE true
ON CONFLICT (provider, event_id) DO NOTHING
