-- The batched money path (payments/batch-pipeline.ts): the reserve and booking phases of a whole batch of
-- payments run as one function call each, in one transaction, so a batch costs a few round trips and one
-- commit whatever its size. The rules are those payments/create.ts and payments/lifecycle.ts applied one
-- payment at a time, applied here to each item in arrival order, so every request gets the answer it would get
-- alone.

-- A client's balance row caches one number, what it can spend: available = -(sum of its postings) - (its open
-- holds). A hold takes from it, a release gives back, a funding or reversal posts to it; completing a payout
-- changes nothing here (the hold's money was already gone from it), so the booking phase of a batch never touches
-- the row the reserve phase of the next batch is deciding on. Before: a posted total and a held total, both
-- updated at completion. (Migration written before 0013 was ever released, hence in place.)
ALTER TABLE ledger_accounts ADD COLUMN available_minor bigint NOT NULL DEFAULT 0;
UPDATE ledger_accounts SET available_minor = -posted_minor - held_minor WHERE kind = 'client_balance';
ALTER TABLE ledger_accounts DROP CONSTRAINT client_available_not_negative;
ALTER TABLE ledger_accounts DROP COLUMN posted_minor;
ALTER TABLE ledger_accounts DROP COLUMN held_minor;
ALTER TABLE ledger_accounts ADD CONSTRAINT client_available_not_negative
  CHECK (kind <> 'client_balance' OR available_minor >= 0);

-- The rail reference from the payment sequence: DSP + the sequence in base 36 (10 digits) + 8 random hex digits.
-- Unique by the sequence, unguessable by the suffix, within the bank's charset.
CREATE FUNCTION payment_rail_reference(seq bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  digits constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  n bigint := seq;
  out text := '';
BEGIN
  LOOP
    out := substr(digits, (n % 36)::int + 1, 1) || out;
    n := n / 36;
    EXIT WHEN n = 0;
  END LOOP;
  RETURN 'DSP' || lpad(out, 10, '0') || upper(substr(md5(random()::text || clock_timestamp()::text), 1, 8));
END;
$$;

-- Reserve a batch. Each item (JSON, see payments/batch-sql.ts) is one validated request; the answer per item is a
-- verdict and, where a payment exists, its id:
--   replay                 the client already used the idempotency key (the caller compares fingerprints)
--   beneficiary_archived   404
--   quote_not_found        404
--   quote_amount_mismatch  400 (detail: the quote's targetAmountMinor)
--   quote_used             409
--   no_rate                503 (a non-VES client without a quote and no rate in force)
--   created                a new payment: processing (funds held, allowance and quote taken) or failed (a rule
--                          violation, detail = its code, or rejected_by_us); the caller writes the event of a
--                          failed one in the same transaction
-- Locks are taken up front in one fixed order (idempotency keys, quotes, balances, daily usage), so batches of
-- several processes never deadlock on each other. Balance rows are locked FOR NO KEY UPDATE, the strength of the
-- UPDATE that follows: FOR UPDATE would also conflict with the key-share locks that inserting a posting or a hold
-- takes on its account (foreign keys), and a booking holding those would wait on us while we wait on it.
CREATE FUNCTION reserve_payments(items jsonb, at timestamptz)
RETURNS TABLE (idx int, verdict text, payment_id text, detail text, out_seq bigint, out_rail_reference text,
  out_state text, out_sub_status text, out_source_amount_minor bigint, out_rate_id text)
LANGUAGE plpgsql AS $$
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
BEGIN
  -- A concurrent duplicate (same client and key, another batch or process) waits here for the first to commit,
  -- then sees its payment: never two payments for one key, and no write to undo.
  PERFORM pg_advisory_xact_lock(k) FROM (
    SELECT DISTINCT hashtextextended((e->>'client') || ' ' || (e->>'idem'), 0) AS k
    FROM jsonb_array_elements(items) e ORDER BY 1) s;
  PERFORM 1 FROM quotes WHERE quote_id IN (
    SELECT e->>'quoteId' FROM jsonb_array_elements(items) e WHERE e->>'quoteId' IS NOT NULL)
    ORDER BY quote_id FOR UPDATE;
  PERFORM 1 FROM ledger_accounts WHERE id IN (
    SELECT 'client:' || (e->>'client') || ':' || (e->>'sourceCurrency') FROM jsonb_array_elements(items) e)
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

    SELECT p.id INTO v_found FROM payments p WHERE p.client_id = it->>'client' AND p.idempotency_key = it->>'idem';
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

-- Book what the rail answered for a batch of payments it was handed: each item {id, state, subStatus,
-- failureCode} moves a payment out of processing with the ledger effect of payments/lifecycle.ts (completed:
-- the hold becomes the payout entry; failed: the hold is released and the allowance returned; unknown, pending:
-- the hold stays). Payments no longer processing are left as they are (moved = false): a booking is
-- re-entrant. Returns each item's payment id, whether it moved and its state before.
CREATE FUNCTION book_payments(items jsonb, at timestamptz)
RETURNS TABLE (payment_id text, moved boolean, previous_state text)
LANGUAGE plpgsql AS $$
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
  PERFORM 1 FROM payments WHERE id IN (SELECT e->>'id' FROM jsonb_array_elements(items) e) ORDER BY id FOR NO KEY UPDATE;
  PERFORM 1 FROM ledger_accounts WHERE id IN (
    SELECT 'client:' || pp.client_id || ':' || pp.source_currency FROM payments pp
    WHERE pp.id IN (SELECT e->>'id' FROM jsonb_array_elements(items) e WHERE e->>'state' = 'failed'))
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
    moved := true;
    RETURN NEXT;
  END LOOP;
END;
$$;

-- The sandbox bank takes a batch of transfers in one call (rails/sandbox/rail.ts decides each scenario and renders
-- each line): a reference it has seen is a duplicate (counted, nothing booked); a new one is recorded and, unless
-- its scenario moves no money or the operator suppressed the payment's debit, its lines are booked. Each payment's
-- advisory lock (rails/sandbox/locks.ts, class 4242042) serialises booking with suppression, as one at a time did.
CREATE FUNCTION sandbox_submit_transfers(items jsonb)
RETURNS TABLE (rail_reference text, accepted boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  it jsonb;
  line jsonb;
BEGIN
  FOR it IN SELECT value FROM jsonb_array_elements(items) LOOP
    rail_reference := it->>'railReference';
    INSERT INTO sandbox_bank_transfers AS t (rail_reference, payment_id, rail, amount_minor, currency,
        destination_account, destination_bank, scenario, submitted_at, settles_at)
      VALUES (it->>'railReference', it->>'paymentId', it->>'rail', (it->>'amountMinor')::bigint, it->>'currency',
        it->>'account', it->>'bankCode', it->>'scenario', (it->>'submittedAt')::timestamptz,
        (it->>'settlesAt')::timestamptz)
      ON CONFLICT (rail_reference) DO NOTHING;
    accepted := FOUND;
    IF NOT accepted THEN
      UPDATE sandbox_bank_transfers SET resubmissions = resubmissions + 1 WHERE rail_reference = it->>'railReference';
    ELSIF jsonb_array_length(it->'lines') > 0 THEN
      PERFORM pg_advisory_xact_lock(4242042, hashtext(it->>'paymentId'));
      IF NOT EXISTS (SELECT 1 FROM sandbox_bank_suppressions s WHERE s.payment_id = it->>'paymentId') THEN
        FOR line IN SELECT value FROM jsonb_array_elements(it->'lines') LOOP
          INSERT INTO sandbox_bank_lines (direction, amount_minor, currency, value_date, reference, raw, origin,
              payment_id, created_at, visible_at)
            VALUES (line->>'direction', (it->>'amountMinor')::bigint, it->>'currency', (line->>'valueDate')::date,
              it->>'railReference', line->>'raw', line->>'origin', it->>'paymentId',
              (it->>'submittedAt')::timestamptz, (line->>'visibleAt')::timestamptz);
        END LOOP;
      END IF;
    END IF;
    RETURN NEXT;
  END LOOP;
END;
$$;
