-- Adds cancelled messages to their groups' counts (in name order, so concurrent writers
-- lock group rows in one order). $1 JSON [["group", count]]
INSERT INTO outbox_groups AS g (name, cancelled)
SELECT e ->> 0, (e ->> 1)::bigint FROM jsonb_array_elements($1::jsonb) AS e
ORDER BY 1
ON CONFLICT (name) DO UPDATE SET cancelled = g.cancelled + EXCLUDED.cancelled
