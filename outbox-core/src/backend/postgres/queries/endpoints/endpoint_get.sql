-- Endpoint $2 of kind $1. Columns: kind, name, settings, disabled_at, disabled_reason, failing_since, created_at, updated_at.
SELECT kind, name, settings, disabled_at, disabled_reason, failing_since, created_at, updated_at FROM outbox_endpoints WHERE kind = $1 AND name = $2
