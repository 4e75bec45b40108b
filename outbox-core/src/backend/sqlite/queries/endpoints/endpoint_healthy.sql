-- Endpoint ?2 of kind ?1 delivered: its failure clock stops.
UPDATE outbox_endpoints SET failing_since = NULL
WHERE kind = ?1 AND name = ?2 AND failing_since IS NOT NULL
