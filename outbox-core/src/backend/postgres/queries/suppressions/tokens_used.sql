-- Which of the tokens of kind $1 in $2 (JSON array of digests) were used before, locked
-- until the transaction ends.
SELECT token FROM outbox_used_tokens
WHERE kind = $1 AND token IN (SELECT jsonb_array_elements_text($2::jsonb))
ORDER BY token
FOR UPDATE
