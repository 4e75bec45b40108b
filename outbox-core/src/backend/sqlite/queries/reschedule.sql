-- Sets when a failed or deferred message is due again. Only columns apalis' ack leaves
-- alone are written (it sets status and attempts after us). max_attempts grows by ?3 (a
-- snooze gives its attempt back) and never stays at or below attempts, so a deferred row
-- whose attempts were raised by recoveries is still fetched. ?1 id, ?2 due (unix s), ?3 0|1
UPDATE Jobs SET run_at = ?2, max_attempts = MAX(max_attempts + ?3, attempts + 1) WHERE id = ?1
