-- Records a token's use unless it was used before. $1 kind, $2 digest, $3 now (unix ms;
-- NULL: the database's clock)
INSERT INTO outbox_used_tokens (kind, token, used_at)
VALUES ($1, $2, COALESCE($3::bigint, (extract(epoch FROM now()) * 1000)::bigint))
ON CONFLICT (kind, token) DO NOTHING
