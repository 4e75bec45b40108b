-- Records message events; a repeat (same provider and event id) is skipped. ? JSON
-- [{"message_id","provider","event_id","external_id","kind","recipient"?,"detail","at"}]
-- (at: unix ms), ? now (unix ms; NULL: the database's clock)
INSERT IGNORE INTO outbox_message_events (provider, event_id, message_id, external_id, kind, recipient, detail, at, recorded_at)
SELECT r.provider, r.event_id, r.message_id, r.external_id, r.kind, r.recipient, r.detail, r.at, p.now_ms
FROM JSON_TABLE(?, '$[*]' COLUMNS (
    provider VARCHAR(255) PATH '$.provider',
    event_id VARCHAR(255) PATH '$.event_id',
    message_id VARCHAR(255) PATH '$.message_id',
    external_id VARCHAR(255) PATH '$.external_id',
    kind VARCHAR(255) PATH '$.kind',
    recipient VARCHAR(320) PATH '$.recipient',
    detail TEXT PATH '$.detail',
    at BIGINT PATH '$.at'
)) AS r, (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
ORDER BY r.provider, r.event_id
