-- Adds a process's outcomes per type to the current minute's rows. ?1 now (unix ms),
-- ?2 JSON [[type, delivered, failed, dead]]
INSERT INTO outbox_stats (minute, type_tag, delivered, failed, dead)
SELECT (?1 / 60000) * 60000, value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?2)
WHERE true
ON CONFLICT (minute, type_tag) DO UPDATE SET
    delivered = delivered + excluded.delivered, failed = failed + excluded.failed,
    dead = dead + excluded.dead
