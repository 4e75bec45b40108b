-- A rule (or a destination that does not answer) suspends a site until a time; a later
-- suspension in force is kept (a shorter one never cuts it). ? suspended_until (unix s),
-- ? reason, ? site
UPDATE outbox_sites SET suspended_until = MAX(COALESCE(suspended_until, 0), ?), reason = ? WHERE site = ?
