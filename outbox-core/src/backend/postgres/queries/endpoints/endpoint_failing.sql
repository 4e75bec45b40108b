-- Endpoint $3 of kind $2 failed at $1 (unix ms; NULL: the database's clock): its failure
-- clock starts unless it runs already.
UPDATE outbox_endpoints SET failing_since = COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint)
WHERE kind = $2 AND name = $3 AND failing_since IS NULL
