-- The simulated bank books a batch of transfers in a few statements instead of a few per transfer (as 0025 did for
-- reserve and booking), and its commit does not wait for the disk.
--
-- Why the commit may be asynchronous: the simulated bank stands for someone else's system, not for the service's
-- own records. The service's records are written before (the reserve, durable before the rail is called) and after
-- (the booking, durable before the client is answered), and PostgreSQL flushes its log in order: once the booking
-- is on disk, so is the bank's earlier commit. Only a database crash between the two can lose the bank's part, and
-- then the client was never answered and the payment is still processing: the follow-up worker asks the bank,
-- which does not know the reference, and sends it again with the same reference (payments/follow-up.ts), exactly
-- as for a real bank that never received a call. The synchronous flush it saves is one of three per batch.

CREATE OR REPLACE FUNCTION sandbox_submit_transfers(items jsonb)
RETURNS TABLE (rail_reference text, accepted boolean)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
  v_accepted text[];
BEGIN
  -- Local to the transaction, and not reverted when the function returns (no SET clause names it).
  PERFORM set_config('synchronous_commit', 'off', true);
  -- A reference the bank has seen is refused; within the batch the first occurrence is the one it takes.
  WITH ins AS (
    INSERT INTO sandbox_bank_transfers AS t (rail_reference, payment_id, rail, amount_minor, currency,
        destination_account, destination_bank, scenario, submitted_at, settles_at)
      SELECT e->>'railReference', e->>'paymentId', e->>'rail', (e->>'amountMinor')::bigint, e->>'currency',
        e->>'account', e->>'bankCode', e->>'scenario', (e->>'submittedAt')::timestamptz, (e->>'settlesAt')::timestamptz
      FROM jsonb_array_elements(items) WITH ORDINALITY AS x(e, o) ORDER BY o
      ON CONFLICT (rail_reference) DO NOTHING
      RETURNING t.rail_reference)
  SELECT coalesce(array_agg(ins.rail_reference), '{}') INTO v_accepted FROM ins;

  -- Every other submission of a reference is counted as a resubmission and books nothing.
  UPDATE sandbox_bank_transfers t SET resubmissions = t.resubmissions + d.refused
    FROM (SELECT e->>'railReference' AS ref,
            count(*) - CASE WHEN e->>'railReference' = ANY (v_accepted) THEN 1 ELSE 0 END AS refused
          FROM jsonb_array_elements(items) e GROUP BY e->>'railReference') d
    WHERE t.rail_reference = d.ref AND d.refused > 0;

  -- The accepted transfers' statement lines, unless an operator suppressed the payment's debit: each payment's
  -- lock (rails/sandbox/locks.ts) in key order, then the lines in the batch's order.
  PERFORM pg_advisory_xact_lock(4242042, k) FROM (
    SELECT DISTINCT hashtext(e->>'paymentId') AS k FROM jsonb_array_elements(items) e
    WHERE e->>'railReference' = ANY (v_accepted) AND jsonb_array_length(e->'lines') > 0 ORDER BY 1) s;
  INSERT INTO sandbox_bank_lines (direction, amount_minor, currency, value_date, reference, raw, origin,
      payment_id, created_at, visible_at)
    SELECT l->>'direction', (e->>'amountMinor')::bigint, e->>'currency', (l->>'valueDate')::date,
      e->>'railReference', l->>'raw', l->>'origin', e->>'paymentId',
      (e->>'submittedAt')::timestamptz, (l->>'visibleAt')::timestamptz
    FROM (SELECT DISTINCT ON (e->>'railReference') e, o FROM jsonb_array_elements(items) WITH ORDINALITY AS x(e, o)
          WHERE e->>'railReference' = ANY (v_accepted) ORDER BY e->>'railReference', o) f
    CROSS JOIN LATERAL jsonb_array_elements(f.e->'lines') WITH ORDINALITY AS y(l, n)
    WHERE NOT EXISTS (SELECT 1 FROM sandbox_bank_suppressions s WHERE s.payment_id = f.e->>'paymentId')
    ORDER BY f.o, y.n;

  -- One row per item, in order; a reference twice in the batch: the second is the duplicate.
  RETURN QUERY
    SELECT e->>'railReference',
      e->>'railReference' = ANY (v_accepted)
        AND o = min(o) OVER (PARTITION BY e->>'railReference')
    FROM jsonb_array_elements(items) WITH ORDINALITY AS x(e, o)
    ORDER BY o;
END;
$$;
