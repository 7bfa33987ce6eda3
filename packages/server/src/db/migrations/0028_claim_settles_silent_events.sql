-- The claim also settles the events of clients without a webhook: each is marked no_webhook by the claim's own
-- update (its attempt count unchanged: nothing was attempted) instead of being leased and then given back by a
-- second update after the worker looked the URLs up. Each claimed event comes back with its client's URL (null
-- for one settled so), read in the same statement as before in the next one. Per claim one statement instead of
-- three, and per such event one row version instead of two (the events row has four indexes and its updates are
-- not HOT). Plan as in 0027.
DROP FUNCTION claim_due_events(timestamptz, timestamptz, int);
CREATE FUNCTION claim_due_events(due_by timestamptz, lease_until timestamptz, max_events int)
RETURNS TABLE (id text, client_id text, body text, attempt int, seq bigint, url text)
LANGUAGE plpgsql SET enable_bitmapscan = off SET enable_sort = off SET enable_seqscan = off AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH due AS MATERIALIZED (
    SELECT e.id, e.client_id
    FROM events e
    WHERE e.delivery_status = 'pending' AND e.next_attempt_at <= due_by
      AND NOT EXISTS (
        SELECT 1 FROM events p
        WHERE e.payment_id IS NOT NULL AND p.payment_id = e.payment_id
          AND p.seq < e.seq AND p.delivery_status = 'pending'
        OFFSET 0)
    ORDER BY e.next_attempt_at, e.seq
    LIMIT max_events
    FOR UPDATE OF e SKIP LOCKED),
  target AS (
    SELECT due.id, w.url FROM due LEFT JOIN webhook_configs w ON w.client_id = due.client_id)
  UPDATE events SET
      attempts = CASE WHEN target.url IS NULL THEN events.attempts ELSE events.attempts + 1 END,
      next_attempt_at = lease_until,
      delivery_status = CASE WHEN target.url IS NULL THEN 'no_webhook' ELSE events.delivery_status END,
      last_error = CASE WHEN target.url IS NULL THEN 'no webhook URL' ELSE events.last_error END
  FROM target WHERE events.id = target.id
  RETURNING events.id, events.client_id, events.body, events.attempts, events.seq, target.url;
END;
$$;
