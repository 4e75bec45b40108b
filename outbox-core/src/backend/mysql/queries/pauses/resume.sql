-- Resumes a type. ? type
DELETE FROM outbox_paused WHERE type_tag = ?
