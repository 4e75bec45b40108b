-- A site's tokens after a grant. ? tokens, ? as of (unix s), ? site
UPDATE outbox_sites SET tokens = $1, updated_at = $2 WHERE site = $3
