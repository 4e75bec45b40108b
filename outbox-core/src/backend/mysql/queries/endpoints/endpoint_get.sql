-- One endpoint: ? kind, ? name. Columns: kind, name, settings, disabled_at, disabled_reason, failing_since, created_at, updated_at.
SELECT kind, name, settings, disabled_at, disabled_reason, failing_since, created_at, updated_at FROM outbox_endpoints WHERE kind = ? AND name = ?
