-- Sets when a failed or deferred message is due again. Only columns apalis' ack leaves
-- alone are written. $1 id, $2 due (unix s), $3 attempts given back (0 or 1)
UPDATE apalis.jobs SET run_at = to_timestamp($2), max_attempts = max_attempts + $3 WHERE id = $1
