-- After an enqueue lost the caller's transaction (a deadlock rolled it back and left the
-- session in autocommit; a lock wait timeout undid only the statement): nothing of it may
-- commit. Roll it back and open a read-only transaction in its place, so the caller's
-- later writes fail ("Cannot execute statement in a READ ONLY transaction") and its
-- COMMIT or ROLLBACK ends it, writing nothing.
ROLLBACK;
START TRANSACTION READ ONLY;
