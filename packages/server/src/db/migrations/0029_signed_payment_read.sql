-- A signed GET of a payment (payments/signed-read.ts): the requests' nonces and the payments they read, in one
-- statement per batch instead of a nonce flush and a read beside it. Each statement costs the server a socket
-- write that wakes a database backend, and that backend a round of its own; under the GET bench those writes were
-- the largest item of the server's profile after the signature check.
--
-- Rows with a position answer the nonces (consume_nonces: in order, under its locks, committed with the statement);
-- rows without one carry a payment read by id (payments_json). The caller keeps a payment only for a request whose
-- nonce was good and whose client owns it.
CREATE FUNCTION read_payments_signed(key_ids text[], nonces numeric[], strict_flags boolean[], ids text[])
RETURNS TABLE (pos int, verdict text, payment text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT c.pos, c.verdict, NULL::text FROM consume_nonces(key_ids, nonces, strict_flags) c;
  RETURN QUERY SELECT NULL::int, NULL::text, j FROM payments_json(ids) j;
END
$$;
