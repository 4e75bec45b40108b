-- Which of a batch's ids were written (enqueue through another connection layer, which
-- reads one JSON text). $1 JSON array of ids. Returns a JSON array of ids, or NULL.
SELECT json_agg(id)::text AS j FROM outbox_messages WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))
