-- The message ended: its slot is free. ? site, ? holder
DELETE FROM outbox_site_slots WHERE site = $1 AND holder = $2
