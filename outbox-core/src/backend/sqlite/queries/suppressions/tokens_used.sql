-- Which of the tokens of kind ?1 in ?2 (JSON array of digests) were used before.
SELECT token FROM outbox_used_tokens
WHERE kind = ?1 AND token IN (SELECT value FROM json_each(?2))
