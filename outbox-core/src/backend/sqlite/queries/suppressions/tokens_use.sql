-- Records the use of the tokens of kind ?1 in ?2 (JSON array of digests) at ?3 (now, unix
-- ms); those used before are left as they are.
INSERT INTO outbox_used_tokens (kind, token, used_at)
SELECT ?1, value, ?3 FROM json_each(?2)
WHERE true
ON CONFLICT (kind, token) DO NOTHING
