-- The booking phase of a batch in one statement (payments/book.ts): each item may carry the event of its move
-- ({id, body}, rendered by the caller from the payment it will be once moved); book_payments writes it only when
-- the payment moves, in the same statement as the move. The booking then needs no transaction of its own around
-- the call (no BEGIN, no separate insert of the events, no COMMIT round trip): one round trip per batch.
CREATE OR REPLACE FUNCTION book_payments(items jsonb, at timestamptz)
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
