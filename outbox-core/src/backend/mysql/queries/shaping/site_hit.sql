-- A reply matched a rule. ? site, ? rule, ? now (unix s; NULL: the database's clock)
INSERT INTO outbox_site_hits (site, rule, at) VALUES (?, ?, COALESCE(?, @@timestamp))
