-- A granted message did not reach its side effect (its type's rate limit put it back):
-- its site gets the token back. ? site
UPDATE outbox_sites SET tokens = tokens + 1 WHERE site = ?
