-- A reply matched a rule. ? site, ? rule, ? at (unix s)
INSERT INTO outbox_site_hits (site, rule, at) VALUES (?, ?, ?)
