-- A reply matched a rule. ? site, ? rule, ? now (unix s; SQLite binds the process clock)
INSERT INTO outbox_site_hits (site, rule, at) VALUES (?, ?, ?)
