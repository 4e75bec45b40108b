-- Endpoint ?3 of kind ?2 failed at ?1 (unix ms): its failure clock starts unless it runs
-- already.
UPDATE outbox_endpoints SET failing_since = ?1
WHERE kind = ?2 AND name = ?3 AND failing_since IS NULL
