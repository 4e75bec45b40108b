-- The minutes from ? (unix ms) on, oldest first: minute, type, delivered, failed, dead.
SELECT minute, type_tag, delivered, failed, dead FROM outbox_stats WHERE minute >= ?
ORDER BY minute, type_tag
