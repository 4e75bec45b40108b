-- A reply matched a rule. $1 site, $2 rule, $3 now (unix s; NULL: the database's clock)
INSERT INTO outbox_site_hits (site, rule, at)
VALUES ($1, $2, COALESCE($3::float8, extract(epoch FROM now())::float8))
