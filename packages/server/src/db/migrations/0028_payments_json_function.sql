-- The payment read of signed GETs and replays (payments/repository.ts, findPaymentsByIds) as a function call, so
-- that it runs as a prepared statement (db/prepared.ts): parsed and planned once per connection on PostgreSQL, one
-- pass into the backend on the embedded database. Prepared as a plain query, its generic plan would be made once
-- per connection from the statistics of that moment, and on a fresh database (or the embedded one before its first
-- ANALYZE) that plan is a sequential scan of payments, kept as the table grows. Inside the function the plan has one
-- way: the primary key.
--
-- One JSON text per payment, 64-bit numbers as text (a JSON number loses precision above 2^53); the columns are
-- those of PAYMENT_COLUMNS (repository.ts), which test/payments/repository-read.test.ts holds to the same answers.
CREATE FUNCTION payments_json(ids text[])
RETURNS SETOF text
LANGUAGE plpgsql STABLE SET enable_seqscan = off AS $$
BEGIN
  RETURN QUERY
  SELECT row_to_json(p)::text FROM (
    SELECT id, seq::text AS seq, client_id, key_id, idempotency_key, fingerprint, state, sub_status, failure_code,
      amount_minor::text AS amount_minor, currency, rail, account, bank_code, doc_type, doc_number, beneficiary_name,
      beneficiary_id, source_currency, source_amount_minor::text AS source_amount_minor, quote_id, rate_id,
      rail_reference, dispatched_at, unknown_since, created_at, updated_at
    FROM payments WHERE id = ANY (ids)) p;
END
$$;
