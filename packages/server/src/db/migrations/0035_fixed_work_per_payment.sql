-- Less fixed work per payment on the money path, each part measured with bench/step-bench.ts (a step's reserve and
-- booking alternated round by round with 0034's, PostgreSQL, 12 payments a step: 0.935 of its time, quartiles
-- 0.909-0.974), and the webhook claim's per-event work gone for clients without a webhook.
--
-- 1. Events of a client without a webhook URL are written settled (no_webhook, no attempt), as the worker's claim
--    would have marked them a moment later (docs/webhooks.md: events created while a client has no active URL are
--    not kept for later). Under the payment bench that claim was a tenth of the database's time: a second version
--    of every event row, with its four index entries, and the body read back into the server for nothing. Events
--    written by other paths are still settled by the claim (0027).
-- 2. The reserve reads quotes and beneficiaries, writes failed events and marks quotes used only when an item of
--    the batch has one: each statement costs its start-up and end whatever it finds, and executor start-up is an
--    eighth of a step's time (perf on the backend).
-- 3. The ledger's balance check and the reconciliation's watch run once per statement over its rows (transition
--    tables) instead of once per row: a row trigger is a PL/pgSQL call and a query of its own, two balance checks
--    and a watch insert per payment. Every path writes an entry's postings in one statement (ledger/ledger.ts,
--    book_payments), so checking at the end of that statement holds exactly what checking at commit held.
--
-- Answers, locks and their order, and rows written are otherwise those of 0025 and 0030.

-- 0025's reserve, with 2. above and failed events as 1.
CREATE OR REPLACE FUNCTION reserve_payments(items jsonb, at timestamptz)
RETURNS TABLE (idx int, verdict text, payment_id text, detail text, out_seq bigint, out_rail_reference text,
  out_state text, out_sub_status text, out_source_amount_minor bigint, out_rate_id text)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
  it jsonb;
  v_day date := (at AT TIME ZONE 'UTC')::date;
  v_nonces jsonb;
  v_nonce text;
  -- What the batch reads once, keyed as the loop looks it up, and keeps current as the loop decides:
  v_known jsonb;     -- client || ' ' || idempotency key -> payment id (committed ones, then this batch's)
  v_benef jsonb := '{}';   -- beneficiary id -> [client, status]
  v_quotes jsonb := '{}';  -- quote id -> [client, target, source, rate id, expires at, used]
  v_any_quote boolean;
  v_limits jsonb;    -- key || ' ' || rail -> [per payment max, daily max]
  v_balance jsonb;   -- ledger account -> available
  v_usage jsonb;     -- key || ' ' || rail -> used today
  v_quote jsonb;
  v_limit jsonb;
  v_benefit jsonb;
  v_known_id text;
  v_amount bigint;
  v_source bigint;
  v_rate_id text;
  v_quote_expired boolean;
  v_code text;
  v_state text;
  v_sub text;
  v_account text;
  v_usage_key text;
  v_available bigint;
  v_used bigint;
  v_pp bigint;
  v_daily bigint;
  v_seq bigint;
  -- What the batch writes, collected by the loop and written after it.
  r_pay payments%ROWTYPE;
  w_pay payments[] := '{}';
  w_event_id text[] := '{}';
  w_event_client text[] := '{}';
  w_event_payment text[] := '{}';
  w_event_body text[] := '{}';
BEGIN
  -- A concurrent duplicate (same client and key, another batch or process) waits here for the first to commit,
  -- then sees its payment: never two payments for one key, and no write to undo.
  PERFORM pg_advisory_xact_lock(k) FROM (
    SELECT DISTINCT hashtextextended((e->>'client') || ' ' || (e->>'idem'), 0) AS k
    FROM jsonb_array_elements(items) e ORDER BY 1) s;
  -- The requests' nonces first (auth/deferred-nonce.ts), in arrival order, as the nonce store would have applied
  -- them one commit earlier; consume_nonces locks the keys' rows in id order.
  WITH n AS (
    SELECT e->>'i' AS i, e->>'key' AS k, (e->>'nonce')::numeric AS nonce, row_number() OVER (ORDER BY o) AS pos
    FROM jsonb_array_elements(items) WITH ORDINALITY AS x(e, o) WHERE e->>'nonce' IS NOT NULL)
  SELECT coalesce(jsonb_object_agg(n.i, c.verdict), '{}'::jsonb) INTO v_nonces
  FROM (SELECT array_agg(k ORDER BY pos) AS ks, array_agg(nonce ORDER BY pos) AS ns,
          array_agg(true ORDER BY pos) AS ss FROM n) a
  CROSS JOIN LATERAL consume_nonces(a.ks, a.ns, a.ss) c
  JOIN n ON n.pos = c.pos;
  -- Locks in the order of 0013: quotes, balances, daily usage (then beneficiaries, shared); each statement also
  -- reads what the loop needs of its rows.
  v_any_quote := jsonb_path_exists(items, '$[*] ? (@.quoteId != null)');
  IF v_any_quote THEN
    SELECT coalesce(jsonb_object_agg(q.quote_id, jsonb_build_array(q.client_id, q.target_amount_minor,
             q.source_amount_minor, q.rate_id, q.expires_at <= at, q.used_by_payment_id IS NOT NULL)), '{}')
      INTO v_quotes
      FROM (SELECT * FROM quotes WHERE quote_id = ANY (ARRAY(
        SELECT e->>'quoteId' FROM jsonb_array_elements(items) e WHERE e->>'quoteId' IS NOT NULL))
        ORDER BY quote_id FOR UPDATE) q;
  END IF;
  SELECT coalesce(jsonb_object_agg(a.id, a.available_minor), '{}') INTO v_balance
    FROM (SELECT id, available_minor FROM ledger_accounts WHERE id = ANY (ARRAY(
      SELECT 'client:' || (e->>'client') || ':' || (e->>'sourceCurrency') FROM jsonb_array_elements(items) e))
      ORDER BY id FOR NO KEY UPDATE) a;
  -- The day's usage row of each key and rail exists and is locked before any payment of the batch reads it.
  WITH u AS (
    INSERT INTO key_daily_usage AS u (key_id, rail, day, used_minor)
      SELECT DISTINCT e->>'key', e->>'rail', v_day, 0::bigint FROM jsonb_array_elements(items) e
      WHERE e->>'refused' IS NULL ORDER BY 1, 2
      ON CONFLICT (key_id, rail, day) DO UPDATE SET used_minor = u.used_minor
      RETURNING u.key_id, u.rail, u.used_minor)
  SELECT coalesce(jsonb_object_agg(u.key_id || ' ' || u.rail, u.used_minor), '{}') INTO v_usage FROM u;
  -- Share-locked: an archive racing this payment waits for the batch to commit.
  IF jsonb_path_exists(items, '$[*] ? (@.beneficiaryId != null)') THEN
    SELECT coalesce(jsonb_object_agg(b.id, jsonb_build_array(b.client_id, b.status)), '{}') INTO v_benef
      FROM (SELECT id, client_id, status FROM beneficiaries WHERE id = ANY (ARRAY(
        SELECT e->>'beneficiaryId' FROM jsonb_array_elements(items) e WHERE e->>'beneficiaryId' IS NOT NULL))
        ORDER BY id FOR SHARE) b;
  END IF;
  SELECT coalesce(jsonb_object_agg(l.key_id || ' ' || l.rail,
           jsonb_build_array(l.per_payment_max_minor, l.daily_max_minor)), '{}') INTO v_limits
    FROM key_limits l WHERE l.key_id = ANY (ARRAY(SELECT DISTINCT e->>'key' FROM jsonb_array_elements(items) e));
  SELECT coalesce(jsonb_object_agg(p.client_id || ' ' || p.idempotency_key, p.id), '{}') INTO v_known
    FROM payments p WHERE p.client_id || ' ' || p.idempotency_key = ANY (ARRAY(
      SELECT (e->>'client') || ' ' || (e->>'idem') FROM jsonb_array_elements(items) e));

  FOR it IN SELECT value FROM jsonb_array_elements(items) LOOP
    idx := (it->>'i')::int;
    verdict := NULL;
    payment_id := NULL;
    detail := NULL;
    out_seq := NULL;
    out_rail_reference := NULL;
    out_state := NULL;
    out_sub_status := NULL;
    out_source_amount_minor := NULL;
    out_rate_id := NULL;

    v_nonce := v_nonces->>(it->>'i');
    IF v_nonce IS NOT NULL AND v_nonce <> 'ok' THEN
      verdict := CASE WHEN v_nonce = 'inactive' THEN 'key_inactive' ELSE 'nonce_replay' END; RETURN NEXT; CONTINUE;
    END IF;

    v_known_id := v_known->>((it->>'client') || ' ' || (it->>'idem'));
    IF v_known_id IS NOT NULL THEN
      verdict := 'replay'; payment_id := v_known_id; RETURN NEXT; CONTINUE;
    END IF;

    IF it->>'beneficiaryId' IS NOT NULL THEN
      v_benefit := v_benef->(it->>'beneficiaryId');
      IF v_benefit IS NULL OR v_benefit->>0 <> it->>'client' OR v_benefit->>1 <> 'ACTIVE' THEN
        verdict := 'beneficiary_archived'; RETURN NEXT; CONTINUE;
      END IF;
    END IF;

    v_amount := (it->>'amountMinor')::bigint;
    v_source := (it->>'sourceAmountMinor')::bigint;
    v_rate_id := it->>'rateId';
    v_quote_expired := false;
    IF it->>'quoteId' IS NOT NULL THEN
      v_quote := v_quotes->(it->>'quoteId');
      IF v_quote IS NULL OR v_quote->>0 <> it->>'client' THEN
        verdict := 'quote_not_found'; RETURN NEXT; CONTINUE;
      END IF;
      IF (v_quote->>1)::bigint <> v_amount THEN
        verdict := 'quote_amount_mismatch'; detail := v_quote->>1; RETURN NEXT; CONTINUE;
      END IF;
      IF (v_quote->>5)::boolean THEN
        verdict := 'quote_used'; RETURN NEXT; CONTINUE;
      END IF;
      v_source := (v_quote->>2)::bigint;
      v_rate_id := v_quote->>3;
      v_quote_expired := (v_quote->>4)::boolean;
    ELSIF (it->>'noRate')::boolean THEN
      verdict := 'no_rate'; RETURN NEXT; CONTINUE;
    END IF;

    -- The rules, in the order of payments/create.ts.
    v_code := it->>'refused';
    v_state := 'failed';
    v_sub := CASE WHEN v_code IS NULL THEN NULL ELSE 'rejected_by_us' END;
    v_account := 'client:' || (it->>'client') || ':' || (it->>'sourceCurrency');
    v_usage_key := (it->>'key') || ' ' || (it->>'rail');
    IF v_code IS NULL THEN
      v_limit := v_limits->v_usage_key;
      IF v_limit IS NULL THEN
        v_code := 'limits_not_configured';
      ELSE
        v_pp := least((v_limit->>0)::bigint, coalesce((it->>'servicePerPaymentMaxMinor')::bigint, (v_limit->>0)::bigint));
        v_daily := least((v_limit->>1)::bigint, coalesce((it->>'serviceDailyMaxMinor')::bigint, (v_limit->>1)::bigint));
        IF v_amount > v_pp THEN
          v_code := 'limit_exceeded';
        ELSIF v_amount > v_daily THEN
          v_code := 'daily_limit_exceeded';
        ELSIF v_quote_expired THEN
          v_code := 'quote_expired';
        END IF;
      END IF;
    END IF;
    IF v_code IS NULL THEN
      v_available := (v_balance->>v_account)::bigint;
      IF v_available IS NULL OR v_available < v_source THEN
        v_code := 'insufficient_balance';
      END IF;
    END IF;
    IF v_code IS NULL THEN
      v_used := (v_usage->>v_usage_key)::bigint;
      IF v_used + v_amount > v_daily THEN
        v_code := 'daily_limit_exceeded';
      END IF;
    END IF;
    IF v_code IS NULL THEN
      v_state := 'processing';
      v_sub := 'reserved';
    END IF;

    v_seq := nextval('payment_seq');
    payment_id := 'pay_' || lpad(v_seq::text, 16, '0');
    -- What the caller needs to know of the row it did not write itself (the rest is its own request).
    out_seq := v_seq;
    out_rail_reference := payment_rail_reference(v_seq);
    out_state := v_state;
    out_sub_status := v_sub;
    out_source_amount_minor := v_source;
    out_rate_id := v_rate_id;
    v_known := jsonb_set(v_known, ARRAY[(it->>'client') || ' ' || (it->>'idem')], to_jsonb(payment_id));

    r_pay.id := payment_id;
    r_pay.seq := v_seq;
    r_pay.client_id := it->>'client';
    r_pay.key_id := it->>'key';
    r_pay.idempotency_key := it->>'idem';
    r_pay.fingerprint := it->>'fingerprint';
    r_pay.state := v_state;
    r_pay.sub_status := v_sub;
    r_pay.failure_code := v_code;
    r_pay.amount_minor := v_amount;
    r_pay.currency := 'VES';
    r_pay.rail := it->>'rail';
    r_pay.account := it->>'account';
    r_pay.bank_code := it->>'bankCode';
    r_pay.doc_type := it->>'docType';
    r_pay.doc_number := it->>'docNumber';
    r_pay.beneficiary_name := it->>'beneficiaryName';
    r_pay.beneficiary_id := it->>'beneficiaryId';
    r_pay.source_currency := it->>'sourceCurrency';
    r_pay.source_amount_minor := v_source;
    r_pay.quote_id := it->>'quoteId';
    r_pay.rate_id := v_rate_id;
    r_pay.rail_reference := out_rail_reference;
    r_pay.dispatched_at := CASE WHEN v_state = 'processing' THEN at END;
    r_pay.created_at := at;
    r_pay.updated_at := at;
    w_pay := w_pay || r_pay;
    -- A payment failed at once commits with its event, rendered by the caller with placeholders for what only
    -- this function decides (payments/reserve.ts, SLOT): each is replaced by the JSON of its value.
    IF v_state = 'failed' AND jsonb_typeof(it->'failedEvent') = 'object' THEN
      w_event_id := w_event_id || (it->'failedEvent'->>'id');
      w_event_client := w_event_client || (it->>'client');
      w_event_payment := w_event_payment || payment_id;
      w_event_body := w_event_body || replace(replace(replace(replace(it->'failedEvent'->>'body',
            '"\u0001id"', to_json(payment_id)::text),
            '"\u0001subStatus"', coalesce(to_json(v_sub)::text, 'null')),
            '"\u0001failureCode"', coalesce(to_json(v_code)::text, 'null')),
            '"\u0001sourceAmountMinor"', to_json(v_source::text)::text);
    END IF;

    IF v_state = 'processing' THEN
      v_balance := jsonb_set(v_balance, ARRAY[v_account], to_jsonb(v_available - v_source));
      v_usage := jsonb_set(v_usage, ARRAY[v_usage_key], to_jsonb(v_used + v_amount));
      IF it->>'quoteId' IS NOT NULL THEN
        v_quotes := jsonb_set(v_quotes, ARRAY[it->>'quoteId', '5'], 'true');
      END IF;
    END IF;
    verdict := 'created';
    detail := CASE WHEN v_sub IS NULL THEN v_code END;
    RETURN NEXT;
  END LOOP;

  INSERT INTO payments (id, seq, client_id, key_id, idempotency_key, fingerprint, state, sub_status, failure_code,
      amount_minor, currency, rail, account, bank_code, doc_type, doc_number, beneficiary_name, beneficiary_id,
      source_currency, source_amount_minor, quote_id, rate_id, rail_reference, dispatched_at, created_at, updated_at)
    SELECT id, seq, client_id, key_id, idempotency_key, fingerprint, state, sub_status, failure_code,
      amount_minor, currency, rail, account, bank_code, doc_type, doc_number, beneficiary_name, beneficiary_id,
      source_currency, source_amount_minor, quote_id, rate_id, rail_reference, dispatched_at, created_at, updated_at
    FROM unnest(w_pay);
  IF cardinality(w_event_id) > 0 THEN
    INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at, delivery_status,
        last_error)
      SELECT e.id, e.client, 'payment.state_changed', false, e.payment, e.body, at, at,
        CASE WHEN e.url IS NULL THEN 'no_webhook' ELSE 'pending' END,
        CASE WHEN e.url IS NULL THEN 'no webhook URL' END
      FROM (SELECT e.*, (SELECT w.url FROM webhook_configs w WHERE w.client_id = e.client) AS url
            FROM unnest(w_event_id, w_event_client, w_event_payment, w_event_body) WITH ORDINALITY
              AS e(id, client, payment, body, o)
            OFFSET 0) e
      ORDER BY e.o;
  END IF;
  -- What each processing payment takes: its hold on the balance, the balance, the key's allowance, its quote.
  INSERT INTO holds (id, account_id, payment_id, currency, amount_minor)
    SELECT 'hld_' || p.id, 'client:' || p.client_id || ':' || p.source_currency, p.id, p.source_currency,
      p.source_amount_minor
    FROM unnest(w_pay) p WHERE p.state = 'processing';
  UPDATE ledger_accounts a SET available_minor = a.available_minor - d.total
    FROM (SELECT 'client:' || p.client_id || ':' || p.source_currency AS account,
            sum(p.source_amount_minor)::bigint AS total
          FROM unnest(w_pay) p WHERE p.state = 'processing' GROUP BY 1) d
    WHERE a.id = d.account;
  UPDATE key_daily_usage u SET used_minor = u.used_minor + d.total
    FROM (SELECT p.key_id, p.rail, sum(p.amount_minor)::bigint AS total
          FROM unnest(w_pay) p WHERE p.state = 'processing' GROUP BY p.key_id, p.rail) d
    WHERE u.key_id = d.key_id AND u.rail = d.rail AND u.day = v_day;
  IF v_any_quote THEN
    UPDATE quotes q SET used_by_payment_id = p.id, used_at = at
      FROM unnest(w_pay) p
      WHERE p.state = 'processing' AND p.quote_id IS NOT NULL AND q.quote_id = p.quote_id;
  END IF;
END;
$$;

-- 0030's booking, with its events as 1. above.
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
  INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at, delivery_status,
      last_error)
    SELECT m.event_id, m.client, 'payment.state_changed', false, m.id, m.event_body, at, at,
      CASE WHEN m.url IS NULL THEN 'no_webhook' ELSE 'pending' END, CASE WHEN m.url IS NULL THEN 'no webhook URL' END
    FROM (SELECT m.*, (SELECT w.url FROM webhook_configs w WHERE w.client_id = m.client) AS url
          FROM unnest(m_id, m_client, m_event_id, m_event_body, m_pos) AS m(id, client, event_id, event_body, pos)
          WHERE m.event_id IS NOT NULL
          OFFSET 0) m
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

-- 3. The entries a statement's postings belong to, each summed over all its postings (the index on entry_id: a
-- lateral lookup per entry, whatever plan the statistics would suggest).
DROP TRIGGER postings_balanced ON postings;
CREATE FUNCTION check_entries_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  SELECT e.entry_id, s.currency, s.total INTO bad
  FROM (SELECT DISTINCT entry_id FROM added) e
  CROSS JOIN LATERAL (SELECT p.currency, sum(p.amount_minor) AS total FROM postings p WHERE p.entry_id = e.entry_id
                      GROUP BY p.currency HAVING sum(p.amount_minor) <> 0) s
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'journal entry % does not balance in % (off by %)', bad.entry_id, bad.currency, bad.total;
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER postings_balanced AFTER INSERT ON postings REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION check_entries_balanced();
DROP FUNCTION check_entry_balanced();
-- The payments a statement moved to completed. A trigger with transition tables takes no column list, so this one
-- sees every update of payments; it compares each row's state before and after. Inserts of completed payments
-- keep their row trigger (0009), which never fires on the payment path.
DROP TRIGGER payments_recon_watch_update ON payments;
CREATE FUNCTION recon_watch_completed_payouts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO recon_debit_watch (payment_id, currency, amount_minor, completed_at)
    SELECT n.id, n.currency, n.amount_minor, n.updated_at
    FROM after_rows n JOIN before_rows o ON o.id = n.id
    WHERE n.state = 'completed' AND o.state <> 'completed'
    ORDER BY n.id
    ON CONFLICT (payment_id) DO NOTHING;
  RETURN NULL;
END;
$$;
CREATE TRIGGER payments_recon_watch_update AFTER UPDATE ON payments
  REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows
  FOR EACH STATEMENT EXECUTE FUNCTION recon_watch_completed_payouts();
