-- Sets when a failed or deferred message is due again. Only columns apalis' ack leaves
-- alone are written. max_attempts grows by $3 (a snooze gives its attempt back) and never
-- stays at or below attempts, so a deferred row is still fetched. $1 id, $2 due (unix s), $3 0|1
UPDATE apalis.jobs SET run_at = to_timestamp($2), max_attempts = GREATEST(max_attempts + $3, attempts + 1) WHERE id = $1
