-- Records the use of the tokens of kind $1 in $2 (JSON array of digests) at $3 (now, unix
-- ms; NULL: the database's clock); those used before are left as they are.
INSERT INTO outbox_used_tokens (kind, token, used_at)
SELECT $1, t, COALESCE($3::bigint, (extract(epoch FROM now()) * 1000)::bigint)
FROM jsonb_array_elements_text($2::jsonb) AS t
ORDER BY t
ON CONFLICT (kind, token) DO NOTHING
