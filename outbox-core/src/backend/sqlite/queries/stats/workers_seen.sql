-- The newest heartbeat in the worker registry (unix ms; NULL when no worker is
-- registered), then ?1, the read's now (unix ms).
SELECT MAX(last_seen), ?1 FROM outbox_workers
