-- The message ended: its slot is free. ? site, ? holder
DELETE FROM outbox_site_slots WHERE site = ? AND holder = ?
