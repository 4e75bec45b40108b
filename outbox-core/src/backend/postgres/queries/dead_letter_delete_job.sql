-- Removes a dead-lettered message from the queue (second half of the move). $1 id
DELETE FROM apalis.jobs WHERE id = $1
