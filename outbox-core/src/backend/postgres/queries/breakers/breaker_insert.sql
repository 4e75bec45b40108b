-- Creates breaker $1's row, closed, unless it exists.
INSERT INTO outbox_breakers (name) VALUES ($1) ON CONFLICT (name) DO NOTHING
