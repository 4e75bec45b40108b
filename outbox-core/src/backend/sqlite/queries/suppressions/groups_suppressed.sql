-- Adds pruned suppressed messages to their groups' counts. ?1 JSON [["group", count]]
INSERT INTO outbox_groups (name, suppressed)
SELECT value ->> 0, value ->> 1 FROM json_each(?1)
WHERE true
ON CONFLICT (name) DO UPDATE SET suppressed = suppressed + excluded.suppressed
