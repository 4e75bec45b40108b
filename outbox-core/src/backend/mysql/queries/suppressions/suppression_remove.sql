-- Removes a suppression. ? address, ? scope
DELETE FROM outbox_suppressions WHERE address = ? AND scope = ?
