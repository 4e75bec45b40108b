-- Records that a worker is alive. ? now (unix s), ? id
UPDATE outbox_workers SET last_seen = ? WHERE id = ?
