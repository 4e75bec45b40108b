-- Removes a shaping rule. ? name
DELETE FROM outbox_shaping_rules WHERE name = ?
