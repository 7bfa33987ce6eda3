-- Booking finds each hold by its payment (holds_payment_id_key), never through holds_open, the partial index of
-- every hold still held. With "h.status = 'held'" in its WHERE clause the planner could read holds_open, and a plan
-- made while the table was small (PL/pgSQL keeps it for the connection's life; the embedded database never gathers
-- statistics on its own) read the whole of it on every booking: every interbank payment still pending, every
-- unknown one, a cost that grows with them (50 entries a call in test/payments/index-only-plans.test.ts, 2,579 under
-- the POST bench). "h.closed_at IS NULL" is the same test (a CHECK of the table since 0003 holds that a hold is held
-- exactly while it has no closed_at), and one no partial index predicate implies. Only the two holds updates differ
-- from migration 0025.
CREATE OR REPLACE FUNCTION book_payments(items jsonb, at timestamptz)
RETURNS TABLE (payment_id text, moved boolean, previous_state text)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
  it jsonb;
  v_found jsonb;     -- payment id -> [state, client, source currency, amount, key, rail, day created]
  v_payment jsonb;
  v_moved jsonb := '{}';
  v_state text;
  v_pos int := 0;
  -- The moves of the batch: the first item of each payment still processing, to another state, in item order.
  m_pos int[] := '{}';
  m_id text[] := '{}';
  m_to text[] := '{}';
  m_sub text[] := '{}';
  m_failure text[] := '{}';
  m_client text[] := '{}';
  m_source_currency text[] := '{}';
  m_amount bigint[] := '{}';
  m_event_id text[] := '{}';
  m_event_body text[] := '{}';
  v_completed text[] := '{}';
  v_failed text[] := '{}';
  f_account text[] := '{}';
  f_key text[] := '{}';
  f_rail text[] := '{}';
  f_day date[] := '{}';
  f_amount bigint[] := '{}';
  rel_account text[];
  rel_amount bigint[];
  r record;
BEGIN
  -- Payments, then the balances and the day's usage failures give back, each in key order: the order every
  -- booking path uses. Completions touch no balance row. The payments' lock reads what the rest needs of them.
  SELECT coalesce(jsonb_object_agg(p.id, jsonb_build_array(p.state, p.client_id, p.source_currency, p.amount_minor,
           p.key_id, p.rail, (p.created_at AT TIME ZONE 'UTC')::date)), '{}')
    INTO v_found
    FROM (SELECT id, state, client_id, source_currency, amount_minor, key_id, rail, created_at FROM payments
      WHERE id = ANY (ARRAY(SELECT e->>'id' FROM jsonb_array_elements(items) e))
      ORDER BY id FOR NO KEY UPDATE) p;

  FOR it IN SELECT value FROM jsonb_array_elements(items) LOOP
    v_pos := v_pos + 1;
    v_payment := v_found->(it->>'id');
    v_state := coalesce(v_moved->>(it->>'id'), v_payment->>0);
    IF v_state IS DISTINCT FROM 'processing' OR it->>'state' = 'processing' THEN
      CONTINUE;
    END IF;
    v_moved := jsonb_set(v_moved, ARRAY[it->>'id'], to_jsonb(it->>'state'));
    m_pos := m_pos || v_pos;
    m_id := m_id || (it->>'id');
    m_to := m_to || (it->>'state');
    m_sub := m_sub || (it->>'subStatus');
    m_failure := m_failure || CASE WHEN it->>'state' = 'failed' THEN it->>'failureCode' END;
    m_client := m_client || (v_payment->>1);
    m_source_currency := m_source_currency || (v_payment->>2);
    m_amount := m_amount || (v_payment->>3)::bigint;
    m_event_id := m_event_id || CASE WHEN jsonb_typeof(it->'event') = 'object' THEN it->'event'->>'id' END;
    m_event_body := m_event_body || CASE WHEN jsonb_typeof(it->'event') = 'object' THEN it->'event'->>'body' END;
    IF it->>'state' = 'completed' THEN
      v_completed := v_completed || (it->>'id');
    ELSIF it->>'state' = 'failed' THEN
      v_failed := v_failed || (it->>'id');
      f_account := f_account || ('client:' || (v_payment->>1) || ':' || (v_payment->>2));
      f_key := f_key || (v_payment->>4);
      f_rail := f_rail || (v_payment->>5);
      f_day := f_day || (v_payment->>6)::date;
      f_amount := f_amount || (v_payment->>3)::bigint;
    END IF;
  END LOOP;

  IF cardinality(v_failed) > 0 THEN
    PERFORM 1 FROM ledger_accounts WHERE id = ANY (f_account) ORDER BY id FOR NO KEY UPDATE;
    WITH released AS (
      UPDATE holds h SET status = 'released', closed_at = at
        WHERE h.payment_id = ANY (v_failed) AND h.closed_at IS NULL
        RETURNING h.account_id, h.amount_minor)
    SELECT coalesce(array_agg(account_id), '{}'), coalesce(array_agg(amount_minor), '{}')
      INTO rel_account, rel_amount FROM released;
    -- One row at a time in key order (a failure is rare; the order is what matters).
    FOR r IN SELECT a.account, sum(a.amount)::bigint AS total FROM unnest(rel_account, rel_amount) AS a(account, amount)
        GROUP BY a.account ORDER BY a.account LOOP
      UPDATE ledger_accounts SET available_minor = available_minor + r.total WHERE id = r.account;
    END LOOP;
    FOR r IN SELECT u.key_id, u.rail, u.day, sum(u.amount)::bigint AS total
        FROM unnest(f_key, f_rail, f_day, f_amount) AS u(key_id, rail, day, amount)
        GROUP BY u.key_id, u.rail, u.day ORDER BY u.key_id, u.rail, u.day LOOP
      UPDATE key_daily_usage SET used_minor = greatest(used_minor - r.total, 0)
        WHERE key_id = r.key_id AND rail = r.rail AND day = r.day;
    END LOOP;
  END IF;

  IF cardinality(v_completed) > 0 THEN
    -- The payout's entry: the held source amount leaves the client's account; in another currency it passes
    -- through the fx position of each currency; the VES amount leaves the bank account.
    WITH posted AS (
      UPDATE holds h SET status = 'posted', closed_at = at
        WHERE h.payment_id = ANY (v_completed) AND h.closed_at IS NULL
        RETURNING h.payment_id, h.account_id, h.amount_minor),
    moves AS (
      SELECT * FROM unnest(m_id, m_pos, m_source_currency, m_amount) AS m(id, pos, source_currency, amount)),
    entries AS (
      INSERT INTO journal_entries (kind, payment_id, entry_ref)
        SELECT 'payout', posted.payment_id, 'payout:' || posted.payment_id
        FROM posted JOIN moves ON moves.id = posted.payment_id ORDER BY moves.pos
        RETURNING id, payment_id)
    INSERT INTO postings (entry_id, account_id, currency, amount_minor)
      SELECT entries.id, l.account, l.currency, l.amount
      FROM entries
      JOIN posted ON posted.payment_id = entries.payment_id
      JOIN moves ON moves.id = entries.payment_id
      CROSS JOIN LATERAL (VALUES
        (1, posted.account_id, moves.source_currency, posted.amount_minor, true),
        (2, 'fx:' || moves.source_currency, moves.source_currency, -posted.amount_minor, moves.source_currency <> 'VES'),
        (3, 'fx:VES', 'VES', moves.amount, moves.source_currency <> 'VES'),
        (4, 'bank:VES', 'VES', -moves.amount, true)) AS l(n, account, currency, amount, kept)
      WHERE l.kept
      ORDER BY entries.id, l.n;
  END IF;

  UPDATE payments p SET state = m.state, sub_status = m.sub, failure_code = m.failure,
      unknown_since = CASE WHEN m.state = 'unknown' THEN at END,
      updated_at = at
    FROM unnest(m_id, m_to, m_sub, m_failure) AS m(id, state, sub, failure)
    WHERE p.id = ANY (m_id) AND p.id = m.id;
  -- The move's event, rendered by the caller for exactly this move (webhooks/outbox.ts owns its format).
  INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at)
    SELECT m.event_id, m.client, 'payment.state_changed', false, m.id, m.event_body, at, at
    FROM unnest(m_id, m_client, m_event_id, m_event_body, m_pos) AS m(id, client, event_id, event_body, pos)
    WHERE m.event_id IS NOT NULL
    ORDER BY m.pos;

  -- Every item answered in order; a later item of a payment the batch already moved did not move it.
  RETURN QUERY
    SELECT e->>'id', o::int = ANY (m_pos),
      CASE WHEN o::int = ANY (m_pos) THEN 'processing'
        ELSE coalesce(v_moved->>(e->>'id'), v_found->(e->>'id')->>0) END
    FROM jsonb_array_elements(items) WITH ORDINALITY AS i(e, o)
    ORDER BY o;
END;
$$;
