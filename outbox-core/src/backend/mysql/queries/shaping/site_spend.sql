-- A site's tokens after a grant. ? tokens, ? as of (unix s), ? site
UPDATE outbox_sites SET tokens = ?, updated_at = ? WHERE site = ?
