-- Adds a process's outcomes per type to the current minute's rows (in type order, so two
-- processes lock the rows in one order). $1 now (unix ms; NULL: the database's clock),
-- $2 JSON [[type, delivered, failed, dead]]
INSERT INTO outbox_stats AS s (minute, type_tag, delivered, failed, dead)
SELECT (n.now / 60000) * 60000, e ->> 0, (e ->> 1)::bigint, (e ->> 2)::bigint, (e ->> 3)::bigint
FROM jsonb_array_elements($2::jsonb) AS e
CROSS JOIN (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now) AS n
ORDER BY 2
ON CONFLICT (minute, type_tag) DO UPDATE SET
    delivered = s.delivered + EXCLUDED.delivered, failed = s.failed + EXCLUDED.failed,
    dead = s.dead + EXCLUDED.dead
