-- Every shaping rule, by name.
SELECT name, site, pattern, action, per_second, duration_secs, threshold, window_secs
FROM outbox_shaping_rules
ORDER BY name
