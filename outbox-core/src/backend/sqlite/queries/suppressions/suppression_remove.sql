-- Removes the suppression of address ?1 in scope ?2.
DELETE FROM outbox_suppressions WHERE address = ?1 AND scope = ?2
