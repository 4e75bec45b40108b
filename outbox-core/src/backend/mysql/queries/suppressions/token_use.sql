-- Records a token's use unless it was used before. ? kind, ? digest, ? now (unix ms; NULL:
-- the database's clock)
INSERT IGNORE INTO outbox_used_tokens (kind, token, used_at)
VALUES (?, ?, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)))
