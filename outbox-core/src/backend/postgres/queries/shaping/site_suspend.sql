-- A rule (or a destination that does not answer) suspends a site until a time; a later
-- suspension in force is kept (a shorter one never cuts it). $1 suspended_until (unix s),
-- $2 reason, $3 site
UPDATE outbox_sites SET suspended_until = GREATEST(COALESCE(suspended_until, 0), $1), reason = $2 WHERE site = $3
