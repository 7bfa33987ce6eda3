-- Exchange rates (one row per publication) and quotes (a frozen price, single use, expiring).

CREATE TABLE rates (
  rate_id      text PRIMARY KEY,
  -- Order of publication: "the most recently published" must not depend on clock ties.
  seq          bigserial NOT NULL UNIQUE,
  base         char(3) NOT NULL CHECK (base ~ '^[A-Z]{3}$' AND base <> 'VES'),
  quote        char(3) NOT NULL DEFAULT 'VES' CHECK (quote = 'VES'),
  -- VES per one unit of base, scaled by 10^12 (12 decimals, exact).
  rate_scaled  numeric(38, 0) NOT NULL CHECK (rate_scaled > 0),
  -- NULL: the pair's general rate. Otherwise that client's own rate, which takes precedence.
  client_id    text REFERENCES clients(id),
  valid_from   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  created_at   timestamptz NOT NULL,
  source       text NOT NULL CHECK (source IN ('operator', 'sandbox-publisher')),
  CHECK (expires_at > valid_from)
);
-- Lookups of the rate in force filter on expires_at > now, which leaves a handful of rows per pair.
CREATE INDEX rates_general_live ON rates (base, expires_at) WHERE client_id IS NULL;
CREATE INDEX rates_client_live ON rates (client_id, base, expires_at) WHERE client_id IS NOT NULL;

CREATE TABLE quotes (
  quote_id             text PRIMARY KEY,
  client_id            text NOT NULL REFERENCES clients(id),
  idempotency_key      text NOT NULL,
  -- SHA-256 (hex) of the normalised request: same key with another fingerprint is a conflict.
  request_fingerprint  text NOT NULL,
  amount_type          text NOT NULL CHECK (amount_type IN ('SOURCE', 'TARGET')),
  source_currency      char(3) NOT NULL,
  source_amount_minor  bigint NOT NULL CHECK (source_amount_minor > 0),
  target_currency      char(3) NOT NULL DEFAULT 'VES' CHECK (target_currency = 'VES'),
  target_amount_minor  bigint NOT NULL CHECK (target_amount_minor > 0),
  rate_id              text NOT NULL REFERENCES rates(rate_id),
  -- The rate actually applied, kept beside the id so the quote explains itself without a join.
  rate_scaled          numeric(38, 0) NOT NULL CHECK (rate_scaled > 0),
  created_at           timestamptz NOT NULL,
  expires_at           timestamptz NOT NULL,
  -- Single use is enforced here: consumption is one guarded UPDATE, and a payment backs at most one quote.
  used_by_payment_id   text UNIQUE,
  used_at              timestamptz,
  CONSTRAINT quotes_client_idempotency_key UNIQUE (client_id, idempotency_key),
  CHECK (expires_at > created_at),
  CHECK ((used_by_payment_id IS NULL) = (used_at IS NULL))
);
-- Ceilings count live, unused quotes (expires_at > now) per client and in total.
CREATE INDEX quotes_live_unused_client ON quotes (client_id, expires_at) WHERE used_by_payment_id IS NULL;
CREATE INDEX quotes_live_unused ON quotes (expires_at) WHERE used_by_payment_id IS NULL;
