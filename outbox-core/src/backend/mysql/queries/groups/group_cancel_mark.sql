-- Records the cancel of group ? at ? (unix ms; NULL: the database's clock): what was
-- enqueued into it until then is cancelled, what comes later is not.
INSERT INTO outbox_groups (name, cancelled_at)
VALUES (?, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)))
ON DUPLICATE KEY UPDATE cancelled_at = VALUES(cancelled_at)
