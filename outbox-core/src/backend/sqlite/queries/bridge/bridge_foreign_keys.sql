-- Whether foreign keys are enforced on this connection, as text (after marking a lost
-- transaction through another connection layer: the mark needs them).
SELECT CAST(foreign_keys AS TEXT) AS j FROM pragma_foreign_keys
