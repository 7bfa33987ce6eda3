-- The webhook-verification worker asks for a due URL-change request every 100 ms of every process's life, and there
-- is almost never one. Sent as text, the claim (a locking CTE and an UPDATE) was parsed and planned at every call, in
-- six protocol passes on the embedded database (db/embedded-prepared.ts): 0.4-0.6 ms of its one thread in a loop of
-- calls, 1-1.4 ms under the payment load, some 1 % of that thread. As a function it runs as a prepared statement (one
-- pass, planned once per connection): 0.05 ms in the same loop; an idle embedded service went from 5.1-5.3 % of a
-- core to 3.7-3.8 %. The statement is the one webhooks/config-store.ts sent, unchanged; the index
-- webhook_change_requests_due stays its path whatever the statistics say, as on the money path (0023).
CREATE FUNCTION claim_due_change_request(claim_at timestamptz, lease_until timestamptz)
RETURNS SETOF webhook_change_requests
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  WITH due AS MATERIALIZED (
    SELECT d.id, d.expires_at <= claim_at AS expired FROM webhook_change_requests d
    WHERE d.status = 'verifying' AND d.next_attempt_at <= claim_at
    ORDER BY d.next_attempt_at LIMIT 1
    FOR UPDATE SKIP LOCKED)
  UPDATE webhook_change_requests r
  SET attempts = CASE WHEN due.expired THEN r.attempts ELSE r.attempts + 1 END,
      next_attempt_at = CASE WHEN due.expired THEN r.next_attempt_at ELSE lease_until END
  FROM due WHERE r.id = due.id
  RETURNING r.*;
END
$$;
