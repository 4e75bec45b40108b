-- Adds or replaces a shaping rule. ? name, ? site (NULL: any), ? pattern, ? action,
-- ? per_second (slow), ? duration_secs (slow, suspend), ? threshold, ? window_secs
INSERT INTO outbox_shaping_rules (name, site, pattern, action, per_second, duration_secs, threshold, window_secs)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET site = excluded.site, pattern = excluded.pattern,
    action = excluded.action, per_second = excluded.per_second,
    duration_secs = excluded.duration_secs, threshold = excluded.threshold,
    window_secs = excluded.window_secs
