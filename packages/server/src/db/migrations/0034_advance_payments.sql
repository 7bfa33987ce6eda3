-- One call, one round trip and one commit, for the two database phases of the payment path (payments/advance.ts):
-- the booking of the rail's answers for one batch and the reserve of the next batch's new payments. Before, each
-- was its own statement and commit; under the payment bench a batch's statement costs about as much in fixed work
-- (the call, its plan's start-up, the commit and its flush, the server's turn to send it) as in its payments, so
-- sharing one call between the two phases is a third fewer commits a payment.
--
-- Locks keep the one order every path takes (0013, 0025): the booking's payments first, then the reserve's
-- requests, nonces, quotes, balances, day's usage and beneficiaries. A booking that fails a payment gives its hold
-- back to the balance and its amount to the day's usage, which would take those rows after the reserve's and out of
-- key order, so such an answer is not accepted here: the caller books it on its own (book_payments). What remains,
-- completions and answers that leave a payment unknown or processing, locks no balance or usage row.
CREATE FUNCTION advance_payments(reserve_items jsonb, reserve_at timestamptz, book_items jsonb, book_at timestamptz)
RETURNS TABLE (kind text, idx int, verdict text, payment_id text, detail text, out_seq text, out_rail_reference text,
  out_state text, out_sub_status text, out_source_amount_minor text, out_rate_id text, moved boolean)
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM jsonb_array_elements(book_items) e WHERE e->>'state' = 'failed') THEN
    RAISE EXCEPTION 'advance_payments: a failed payment is booked by book_payments on its own (lock order)';
  END IF;
  IF jsonb_array_length(book_items) > 0 THEN
    RETURN QUERY
      SELECT 'book'::text, NULL::int, NULL::text, b.payment_id, NULL::text, NULL::text, NULL::text, NULL::text,
        NULL::text, NULL::text, NULL::text, b.moved
      FROM book_payments(book_items, book_at) b;
  END IF;
  IF jsonb_array_length(reserve_items) > 0 THEN
    RETURN QUERY
      SELECT 'reserve'::text, r.idx, r.verdict, r.payment_id, r.detail, r.out_seq::text, r.out_rail_reference,
        r.out_state, r.out_sub_status, r.out_source_amount_minor::text, r.out_rate_id, NULL::boolean
      FROM reserve_payments(reserve_items, reserve_at) r;
  END IF;
END;
$$;
