-- Pauses a type. ?1 type, ?2 now (unix ms), ?3 reason
INSERT INTO outbox_paused (type_tag, paused_at, reason) VALUES (?1, ?2, ?3)
ON CONFLICT (type_tag) DO UPDATE SET reason = excluded.reason
