-- Removes a dead-lettered message from the queue (second half of the move). ? id
DELETE FROM outbox_jobs WHERE id = ?
