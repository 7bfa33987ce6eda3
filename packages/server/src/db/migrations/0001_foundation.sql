-- Account holders, their API keys with the per-key nonce window, and per-key limits.

CREATE TABLE clients (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  currency    char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id                      text PRIMARY KEY,
  client_id               text NOT NULL REFERENCES clients(id),
  environment             text NOT NULL CHECK (environment IN ('sandbox', 'production')),
  -- SHA-256 of the secret key: keys are 256-bit random, so a fast hash is enough and lookups stay cheap.
  key_hash                bytea NOT NULL UNIQUE,
  public_key_spki_pem     text NOT NULL,
  public_key_fingerprint  text NOT NULL,
  active                  boolean NOT NULL DEFAULT true,
  created_at              timestamptz NOT NULL DEFAULT now(),
  deactivated_at          timestamptz,
  -- Anti-replay (RFC 4303 style): the high-water mark and a bitmap of the 64 numbers below it.
  -- Bit position p (1-based, left to right) records nonce (mark - p).
  nonce_mark              numeric(38, 0) NOT NULL DEFAULT 0,
  nonce_window            bit(64) NOT NULL DEFAULT B'0'::bit(64)
);
CREATE INDEX api_keys_client ON api_keys (client_id);

CREATE TABLE key_limits (
  key_id                  text NOT NULL REFERENCES api_keys(id),
  rail                    text NOT NULL CHECK (rail IN ('PM', 'CCE')),
  per_payment_max_minor   bigint NOT NULL CHECK (per_payment_max_minor > 0),
  daily_max_minor         bigint NOT NULL CHECK (daily_max_minor > 0),
  updated_at              timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (key_id, rail)
);

-- Consumes a batch of nonces in one statement, in order, so that many requests share one commit.
-- strict: POST/PUT/PATCH/DELETE/HEAD need nonce > mark; GET may also take an unseen number in the window.
-- Returns per input position: 'ok', 'replay' or 'inactive' (key deactivated or unknown).
CREATE FUNCTION consume_nonces(key_ids text[], nonces numeric[], strict_flags boolean[])
RETURNS TABLE (pos int, verdict text)
LANGUAGE plpgsql AS $$
DECLARE
  i int;
  m numeric;
  w bit(64);
  is_active boolean;
  d numeric;
  top_bit constant bit(64) := B'1' || B'0'::bit(63);
BEGIN
  FOR i IN 1 .. coalesce(array_length(key_ids, 1), 0) LOOP
    pos := i;
    SELECT nonce_mark, nonce_window, active INTO m, w, is_active
      FROM api_keys WHERE id = key_ids[i] FOR UPDATE;
    IF NOT FOUND OR NOT is_active THEN
      verdict := 'inactive';
    ELSIF nonces[i] > m THEN
      d := nonces[i] - m;
      IF d > 64 THEN
        w := B'0'::bit(64);
      ELSE
        w := (w >> d::int) | (top_bit >> (d::int - 1));
      END IF;
      UPDATE api_keys SET nonce_mark = nonces[i], nonce_window = w WHERE id = key_ids[i];
      verdict := 'ok';
    ELSIF strict_flags[i] OR nonces[i] = m OR m - nonces[i] > 64 THEN
      verdict := 'replay';
    ELSIF get_bit(w, (m - nonces[i])::int - 1) = 1 THEN
      verdict := 'replay';
    ELSE
      UPDATE api_keys SET nonce_window = set_bit(w, (m - nonces[i])::int - 1, 1) WHERE id = key_ids[i];
      verdict := 'ok';
    END IF;
    RETURN NEXT;
  END LOOP;
END;
$$;
