-- Per consumer: how many processed ids the inbox holds, and the oldest and newest (unix ms).
SELECT consumer, COUNT(*), MIN(processed_at), MAX(processed_at)
FROM outbox_inbox GROUP BY consumer ORDER BY consumer
