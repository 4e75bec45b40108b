-- The minutes from ?1 (unix ms) on, oldest first: minute, type, delivered, failed, dead.
SELECT minute, type_tag, delivered, failed, dead FROM outbox_stats WHERE minute >= ?1
ORDER BY minute, type_tag
