-- How many suppressions match. ? address and ? its domain entry (both NULL: any), ? reason
-- (NULL: any)
SELECT COUNT(*)
FROM outbox_suppressions AS s CROSS JOIN (SELECT ? AS address, ? AS domain, ? AS reason) AS p
WHERE (p.address IS NULL OR s.address IN (p.address, p.domain)) AND (p.reason IS NULL OR s.reason = p.reason)
