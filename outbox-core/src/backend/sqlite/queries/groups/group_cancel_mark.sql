-- Records the cancel of group ?1 at ?2 (unix ms): what was enqueued into it until then is
-- cancelled, what comes later is not.
INSERT INTO outbox_groups (name, cancelled_at) VALUES (?1, ?2)
ON CONFLICT (name) DO UPDATE SET cancelled_at = excluded.cancelled_at
