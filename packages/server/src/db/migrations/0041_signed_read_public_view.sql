-- A signed GET answers with the payment's public view (payments/model.ts, PublicPayment), eleven of the row's
-- twenty-seven columns, and the client id it is checked against. read_payments_signed (0029) rendered the whole row
-- as JSON, which the server parsed, turned into a Payment (four timestamps parsed into dates) and back into the view
-- (two of them formatted again): under the GET bench that was the server's largest item after the signature check
-- and the statement itself. read_payment_views_signed renders only what the view needs, amounts as text already,
-- and the server copies the fields across (payments/public-view.ts), its timestamps formatted from PostgreSQL's text.
--
-- A function of its own rather than 0029's restated: a process still running the code before this migration reads
-- the whole row through read_payments_signed as before, so processes of both versions can share a database while
-- one replaces the other. Replays of a POST still read the whole row (payments_json): they answer with what the
-- reserve decided.
CREATE FUNCTION payments_public_json(ids text[])
RETURNS SETOF text
LANGUAGE plpgsql STABLE SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  SELECT row_to_json(p)::text FROM (
    SELECT id, client_id, state, sub_status, failure_code, amount_minor::text AS amount_minor, rail, account,
      beneficiary_id, source_currency, source_amount_minor::text AS source_amount_minor, quote_id, created_at,
      updated_at
    FROM payments WHERE id = ANY (ids)) p;
END
$$;

-- 0029's read_payments_signed, each payment as its public view: rows with a position answer the nonces, rows without
-- one carry a payment's view.
CREATE FUNCTION read_payment_views_signed(key_ids text[], nonces numeric[], strict_flags boolean[], ids text[])
RETURNS TABLE (pos int, verdict text, payment_view text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT c.pos, c.verdict, NULL::text FROM consume_nonces(key_ids, nonces, strict_flags) c;
  RETURN QUERY SELECT NULL::int, NULL::text, j FROM payments_public_json(ids) j;
END
$$;
