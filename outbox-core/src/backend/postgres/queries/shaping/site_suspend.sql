-- A rule suspends a site until a time. ? suspended_until (unix s), ? reason, ? site
UPDATE outbox_sites SET suspended_until = $1, reason = $2 WHERE site = $3
