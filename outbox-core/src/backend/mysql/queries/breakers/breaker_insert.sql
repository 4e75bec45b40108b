-- Creates a breaker's row, closed, unless it exists. ? name
INSERT IGNORE INTO outbox_breakers (name) VALUES (?)
