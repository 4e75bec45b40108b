-- Registers (or re-registers) a worker. ? id, ? queue, ? now (unix s)
INSERT INTO outbox_workers (id, worker_type, storage_name, layers, last_seen, started_at)
SELECT p.id, p.queue, 'outbox-mysql', '', p.now_s, p.now_s FROM (SELECT ? AS id, ? AS queue, ? AS now_s) AS p
ON DUPLICATE KEY UPDATE last_seen = VALUES(last_seen)
