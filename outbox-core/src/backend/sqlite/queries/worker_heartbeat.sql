-- Registers worker ?1 of type ?2, or records that it is alive, at ?3 (unix ms).
INSERT INTO outbox_workers (name, type_tag, started_at, last_seen) VALUES (?1, ?2, ?3, ?3)
ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen
