-- Resumes a type. $1 type
DELETE FROM outbox_paused WHERE type_tag = $1
