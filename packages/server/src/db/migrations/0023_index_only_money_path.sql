-- The payment path's functions never scan a table: every statement in them looks rows up by key. PL/pgSQL keeps the
-- plan of each statement for the life of the connection, made when it first ran (a generic plan from the sixth
-- call), and a plan made while a table was small stays a sequential scan as the table grows: the booking's lock on
-- its payments read the whole payments table once per batch (seen with auto_explain under the bench); only an ANALYZE
-- of the table replans it, and the embedded database has no autovacuum to run one. Three changes:
--
-- - the functions run with enable_seqscan off, so a plan made on a small table still uses the index;
-- - the lock statements name their rows as `= ANY (ARRAY(...))` rather than `IN (subquery)`: with the subquery the
--   planner may hash-join against a full scan of the index, which is no better than the table;
-- - a payment is found by its idempotency key through one expression that only the unique index has. With the key
--   as two columns, a plan made on a nearly empty table chose payments_client_state_seq (client_id alone) and read
--   every payment of the client to find one: both indexes cost the same on an empty table. Client ids are
--   generated (cli_ and base32) and never hold a space, so the expression names one pair.
--
-- consume_nonces and sandbox_submit_transfers only change their setting; the other two are restated whole (CREATE OR
-- REPLACE must), identical to 0021 and 0022 but for the lock statements and the idempotency lookup.
ALTER TABLE payments DROP CONSTRAINT payments_idempotency;
CREATE UNIQUE INDEX payments_idempotency ON payments ((client_id || ' ' || idempotency_key));
ALTER FUNCTION consume_nonces(text[], numeric[], boolean[]) SET enable_seqscan = off;
ALTER FUNCTION sandbox_submit_transfers(jsonb) SET enable_seqscan = off;

CREATE OR REPLACE FUNCTION reserve_payments(items jsonb, at timestamptz)
RETURNS TABLE (idx int, verdict text, payment_id text, detail text, out_seq bigint, out_rail_reference text,
  out_state text, out_sub_status text, out_source_amount_minor bigint, out_rate_id text)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
  it jsonb;
  v_day date := (at AT TIME ZONE 'UTC')::date;
  v_found text;
  v_status text;
  v_quote record;
  v_limit record;
  v_amount bigint;
  v_source bigint;
  v_rate_id text;
  v_quote_expired boolean;
  v_code text;
  v_state text;
  v_sub text;
  v_account text;
  v_available bigint;
  v_used bigint;
  v_pp bigint;
  v_daily bigint;
  v_seq bigint;
  v_nonces jsonb;
  v_nonce text;
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
  PERFORM 1 FROM quotes WHERE quote_id = ANY (ARRAY(
    SELECT e->>'quoteId' FROM jsonb_array_elements(items) e WHERE e->>'quoteId' IS NOT NULL))
    ORDER BY quote_id FOR UPDATE;
  PERFORM 1 FROM ledger_accounts WHERE id = ANY (ARRAY(
    SELECT 'client:' || (e->>'client') || ':' || (e->>'sourceCurrency') FROM jsonb_array_elements(items) e))
    ORDER BY id FOR NO KEY UPDATE;
  -- The day's usage row of each key and rail exists and is locked before any payment of the batch reads it.
  INSERT INTO key_daily_usage AS u (key_id, rail, day, used_minor)
    SELECT DISTINCT e->>'key', e->>'rail', v_day, 0::bigint FROM jsonb_array_elements(items) e
    WHERE e->>'refused' IS NULL ORDER BY 1, 2
    ON CONFLICT (key_id, rail, day) DO UPDATE SET used_minor = u.used_minor;

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

    SELECT p.id INTO v_found FROM payments p
      WHERE p.client_id || ' ' || p.idempotency_key = (it->>'client') || ' ' || (it->>'idem');
    IF FOUND THEN
      verdict := 'replay'; payment_id := v_found; RETURN NEXT; CONTINUE;
    END IF;

    IF it->>'beneficiaryId' IS NOT NULL THEN
      -- Share-locked: an archive racing this payment waits for the batch to commit.
      SELECT b.status INTO v_status FROM beneficiaries b
        WHERE b.client_id = it->>'client' AND b.id = it->>'beneficiaryId' FOR SHARE;
      IF NOT FOUND OR v_status <> 'ACTIVE' THEN
        verdict := 'beneficiary_archived'; RETURN NEXT; CONTINUE;
      END IF;
    END IF;

    v_amount := (it->>'amountMinor')::bigint;
    v_source := (it->>'sourceAmountMinor')::bigint;
    v_rate_id := it->>'rateId';
    v_quote_expired := false;
    IF it->>'quoteId' IS NOT NULL THEN
      SELECT q.target_amount_minor, q.source_amount_minor, q.rate_id, q.expires_at, q.used_by_payment_id
        INTO v_quote FROM quotes q WHERE q.quote_id = it->>'quoteId' AND q.client_id = it->>'client';
      IF NOT FOUND THEN
        verdict := 'quote_not_found'; RETURN NEXT; CONTINUE;
      END IF;
      IF v_quote.target_amount_minor <> v_amount THEN
        verdict := 'quote_amount_mismatch'; detail := v_quote.target_amount_minor::text; RETURN NEXT; CONTINUE;
      END IF;
      IF v_quote.used_by_payment_id IS NOT NULL THEN
        verdict := 'quote_used'; RETURN NEXT; CONTINUE;
      END IF;
      v_source := v_quote.source_amount_minor;
      v_rate_id := v_quote.rate_id;
      v_quote_expired := v_quote.expires_at <= at;
    ELSIF (it->>'noRate')::boolean THEN
      verdict := 'no_rate'; RETURN NEXT; CONTINUE;
    END IF;

    -- The rules, in the order of payments/create.ts.
    v_code := it->>'refused';
    v_state := 'failed';
    v_sub := CASE WHEN v_code IS NULL THEN NULL ELSE 'rejected_by_us' END;
    v_account := 'client:' || (it->>'client') || ':' || (it->>'sourceCurrency');
    IF v_code IS NULL THEN
      SELECT kl.per_payment_max_minor, kl.daily_max_minor INTO v_limit FROM key_limits kl
        WHERE kl.key_id = it->>'key' AND kl.rail = it->>'rail';
      IF NOT FOUND THEN
        v_code := 'limits_not_configured';
      ELSE
        v_pp := least(v_limit.per_payment_max_minor, coalesce((it->>'servicePerPaymentMaxMinor')::bigint, v_limit.per_payment_max_minor));
        v_daily := least(v_limit.daily_max_minor, coalesce((it->>'serviceDailyMaxMinor')::bigint, v_limit.daily_max_minor));
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
      SELECT a.available_minor INTO v_available FROM ledger_accounts a WHERE a.id = v_account;
      IF NOT FOUND OR v_available < v_source THEN
        v_code := 'insufficient_balance';
      END IF;
    END IF;
    IF v_code IS NULL THEN
      SELECT u.used_minor INTO v_used FROM key_daily_usage u
        WHERE u.key_id = it->>'key' AND u.rail = it->>'rail' AND u.day = v_day;
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
    INSERT INTO payments (id, seq, client_id, key_id, idempotency_key, fingerprint, state, sub_status, failure_code,
        amount_minor, currency, rail, account, bank_code, doc_type, doc_number, beneficiary_name, beneficiary_id,
        source_currency, source_amount_minor, quote_id, rate_id, rail_reference, dispatched_at, created_at, updated_at)
      VALUES (payment_id, v_seq, it->>'client', it->>'key', it->>'idem', it->>'fingerprint', v_state, v_sub, v_code,
        v_amount, 'VES', it->>'rail', it->>'account', it->>'bankCode', it->>'docType', it->>'docNumber',
        it->>'beneficiaryName', it->>'beneficiaryId', it->>'sourceCurrency', v_source, it->>'quoteId', v_rate_id,
        out_rail_reference, CASE WHEN v_state = 'processing' THEN at END, at, at);
    -- A payment failed at once commits with its event, rendered by the caller with placeholders for what only
    -- this function decides (payments/reserve.ts, SLOT): each is replaced by the JSON of its value.
    IF v_state = 'failed' AND jsonb_typeof(it->'failedEvent') = 'object' THEN
      INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at)
        VALUES (it->'failedEvent'->>'id', it->>'client', 'payment.state_changed', false, payment_id,
          replace(replace(replace(replace(it->'failedEvent'->>'body',
            '"\u0001id"', to_json(payment_id)::text),
            '"\u0001subStatus"', coalesce(to_json(v_sub)::text, 'null')),
            '"\u0001failureCode"', coalesce(to_json(v_code)::text, 'null')),
            '"\u0001sourceAmountMinor"', to_json(v_source::text)::text),
          at, at);
    END IF;

    IF v_state = 'processing' THEN
      UPDATE ledger_accounts SET available_minor = available_minor - v_source WHERE id = v_account;
      INSERT INTO holds (id, account_id, payment_id, currency, amount_minor)
        VALUES ('hld_' || payment_id, v_account, payment_id, it->>'sourceCurrency', v_source);
      UPDATE key_daily_usage SET used_minor = used_minor + v_amount
        WHERE key_id = it->>'key' AND rail = it->>'rail' AND day = v_day;
      IF it->>'quoteId' IS NOT NULL THEN
        UPDATE quotes SET used_by_payment_id = payment_id, used_at = at WHERE quote_id = it->>'quoteId';
      END IF;
    END IF;
    verdict := 'created';
    detail := CASE WHEN v_sub IS NULL THEN v_code END;
    RETURN NEXT;
  END LOOP;
END;
$$;

CREATE OR REPLACE FUNCTION book_payments(items jsonb, at timestamptz)
RETURNS TABLE (payment_id text, moved boolean, previous_state text)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
  it jsonb;
  p record;
  v_hold record;
  v_entry bigint;
  v_to text;
BEGIN
  -- Payments, then the balances failures give money back to, in id order: the order every booking path uses.
  -- Completions touch no balance row.
  PERFORM 1 FROM payments WHERE id = ANY (ARRAY(SELECT e->>'id' FROM jsonb_array_elements(items) e))
    ORDER BY id FOR NO KEY UPDATE;
  PERFORM 1 FROM ledger_accounts WHERE id = ANY (ARRAY(
    SELECT 'client:' || pp.client_id || ':' || pp.source_currency FROM payments pp
    WHERE pp.id = ANY (ARRAY(SELECT e->>'id' FROM jsonb_array_elements(items) e WHERE e->>'state' = 'failed'))))
    ORDER BY id FOR NO KEY UPDATE;

  FOR it IN SELECT value FROM jsonb_array_elements(items) LOOP
    SELECT pp.id, pp.client_id, pp.key_id, pp.state, pp.rail, pp.amount_minor, pp.source_currency, pp.created_at
      INTO p FROM payments pp WHERE pp.id = it->>'id';
    payment_id := it->>'id';
    previous_state := p.state;
    v_to := it->>'state';
    IF p.state IS DISTINCT FROM 'processing' OR v_to = 'processing' THEN
      moved := false; RETURN NEXT; CONTINUE;
    END IF;

    IF v_to = 'completed' THEN
      UPDATE holds SET status = 'posted', closed_at = at WHERE holds.payment_id = p.id AND status = 'held'
        RETURNING account_id, amount_minor INTO v_hold;
      IF FOUND THEN
        INSERT INTO journal_entries (kind, payment_id, entry_ref) VALUES ('payout', p.id, 'payout:' || p.id)
          RETURNING id INTO v_entry;
        IF p.source_currency = 'VES' THEN
          INSERT INTO postings (entry_id, account_id, currency, amount_minor) VALUES
            (v_entry, v_hold.account_id, 'VES', v_hold.amount_minor),
            (v_entry, 'bank:VES', 'VES', -p.amount_minor);
        ELSE
          INSERT INTO postings (entry_id, account_id, currency, amount_minor) VALUES
            (v_entry, v_hold.account_id, p.source_currency, v_hold.amount_minor),
            (v_entry, 'fx:' || p.source_currency, p.source_currency, -v_hold.amount_minor),
            (v_entry, 'fx:VES', 'VES', p.amount_minor),
            (v_entry, 'bank:VES', 'VES', -p.amount_minor);
        END IF;
      END IF;
    ELSIF v_to = 'failed' THEN
      UPDATE holds SET status = 'released', closed_at = at WHERE holds.payment_id = p.id AND status = 'held'
        RETURNING account_id, amount_minor INTO v_hold;
      IF FOUND THEN
        UPDATE ledger_accounts SET available_minor = available_minor + v_hold.amount_minor WHERE id = v_hold.account_id;
      END IF;
      UPDATE key_daily_usage SET used_minor = greatest(used_minor - p.amount_minor, 0)
        WHERE key_id = p.key_id AND rail = p.rail AND day = (p.created_at AT TIME ZONE 'UTC')::date;
    END IF;

    UPDATE payments SET state = v_to, sub_status = it->>'subStatus',
        failure_code = CASE WHEN v_to = 'failed' THEN it->>'failureCode' END,
        unknown_since = CASE WHEN v_to = 'unknown' THEN at END,
        updated_at = at
      WHERE id = p.id;
    -- The move's event, rendered by the caller for exactly this move (webhooks/outbox.ts owns its format).
    IF jsonb_typeof(it->'event') = 'object' THEN
      INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at)
        VALUES (it->'event'->>'id', p.client_id, 'payment.state_changed', false, p.id, it->'event'->>'body', at, at);
    END IF;
    moved := true;
    RETURN NEXT;
  END LOOP;
END;
$$;
