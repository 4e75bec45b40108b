-- Adds or replaces a shaping rule. ? name, ? site (NULL: any), ? pattern, ? action,
-- ? per_second (slow), ? duration_secs (slow, suspend), ? threshold, ? window_secs
INSERT INTO outbox_shaping_rules (name, site, pattern, action, per_second, duration_secs, threshold, window_secs)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE site = VALUES(site), pattern = VALUES(pattern), action = VALUES(action),
    per_second = VALUES(per_second), duration_secs = VALUES(duration_secs),
    threshold = VALUES(threshold), window_secs = VALUES(window_secs)
