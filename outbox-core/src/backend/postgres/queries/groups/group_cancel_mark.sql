-- Records the cancel of group $1 at $2 (unix ms; NULL: the database's clock): what was
-- enqueued into it until then is cancelled, what comes later is not.
INSERT INTO outbox_groups AS g (name, cancelled_at)
VALUES ($1, COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint))
ON CONFLICT (name) DO UPDATE SET cancelled_at = EXCLUDED.cancelled_at
