-- How many suppressions match. $1 address and $2 its domain entry (both NULL: any), $3
-- reason (NULL: any)
SELECT COUNT(*) FROM outbox_suppressions
WHERE ($1::text IS NULL OR address IN ($1, $2)) AND ($3::text IS NULL OR reason = $3)
