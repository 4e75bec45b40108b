-- Records a token's use unless it was used before. ?1 kind, ?2 digest, ?3 now (unix ms)
INSERT INTO outbox_used_tokens (kind, token, used_at) VALUES (?1, ?2, ?3)
ON CONFLICT (kind, token) DO NOTHING
