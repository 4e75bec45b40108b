-- An endpoint delivered: ? kind, ? name; its failure clock stops.
UPDATE outbox_endpoints SET failing_since = NULL
WHERE kind = ? AND name = ? AND failing_since IS NOT NULL
