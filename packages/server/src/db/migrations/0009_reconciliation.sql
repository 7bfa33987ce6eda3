-- Reconciliation: the bank's statement as ingested, the exceptions a person handles, and the small state the
-- loops keep (statement cursors, re-query leases, payouts awaiting their real debit, the balance baseline).
-- Times are written from the injected clock (never now()), so tests move them with a manual clock.

-- Where each statement source stopped: the cursor advances in the same transaction as the lines it delivered.
CREATE TABLE recon_sources (
  name            text PRIMARY KEY,
  cursor          text,
  lines_ingested  bigint NOT NULL DEFAULT 0,
  updated_at      timestamptz NOT NULL
);

-- Every statement line once (the bank's own id is unique on the account), with what reconciliation made of it:
-- matched to a payout, a return of a payout or a funding; in exactly one exception; or awaiting (a debit of a
-- payment already failed, waiting for the return that pairs it). booked: the ledger holds this movement, so
-- the balance check knows which lines the ledger has not seen.
CREATE TABLE recon_lines (
  -- The bank's id is the key; id only orders lines as they were stored (no index: it is never searched).
  bank_line_id    text PRIMARY KEY,
  id              bigserial NOT NULL,
  source          text NOT NULL,
  direction       text NOT NULL CHECK (direction IN ('debit', 'credit')),
  amount_minor    bigint NOT NULL CHECK (amount_minor > 0),
  currency        char(3) NOT NULL,
  value_date      date NOT NULL,
  reference       text NOT NULL,
  -- SHA-256 of the line exactly as the source delivered it: a byte-identical second debit has the same.
  raw_hash        bytea NOT NULL,
  status          text NOT NULL CHECK (status IN ('matched', 'exception', 'awaiting')),
  match_kind      text CHECK (match_kind IN ('payout', 'return', 'funding')),
  exception_kind  text,
  payment_id      text,
  funding_id      text,
  booked          boolean NOT NULL,
  ingested_at     timestamptz NOT NULL,
  CHECK ((status = 'matched') = (match_kind IS NOT NULL)),
  CHECK ((status = 'exception') = (exception_kind IS NOT NULL)),
  CHECK (NOT booked OR status = 'matched')
);
CREATE INDEX recon_lines_payment ON recon_lines (payment_id) WHERE payment_id IS NOT NULL;
CREATE INDEX recon_lines_funding ON recon_lines (funding_id) WHERE funding_id IS NOT NULL;
-- Only debits naming no payment are looked up by hash (a payment's own lines carry the hashes of its debits).
CREATE INDEX recon_lines_ownerless_debit_hash ON recon_lines (raw_hash) WHERE direction = 'debit' AND payment_id IS NULL;
CREATE INDEX recon_lines_unbooked ON recon_lines (currency) WHERE NOT booked;
CREATE INDEX recon_lines_awaiting ON recon_lines (ingested_at) WHERE status = 'awaiting';

-- What a person handles. bank_line_ids are the lines the exception is about (each such line is in exactly
-- one exception); related lines (the original of a double debit) are named in details.
CREATE TABLE recon_exceptions (
  seq             bigserial PRIMARY KEY,
  id              text GENERATED ALWAYS AS ('rex_' || lpad(seq::text, 16, '0')) STORED UNIQUE,
  kind            text NOT NULL
                  CHECK (kind IN ('orphan_debit', 'unfunded_credit', 'double_debit', 'missing_debit', 'balance_mismatch')),
  status          text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
  bank_line_ids   text[] NOT NULL DEFAULT '{}',
  payment_id      text,
  currency        char(3),
  -- The amount at stake: the line's, the payment's, or the unexplained balance difference (signed).
  amount_minor    bigint,
  details         jsonb NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  resolved_at     timestamptz,
  resolved_by     text,
  note            text,
  CHECK ((status = 'resolved') = (resolved_at IS NOT NULL AND resolved_by IS NOT NULL AND note IS NOT NULL))
);
CREATE INDEX recon_exceptions_listing ON recon_exceptions (status, kind, seq DESC);
CREATE INDEX recon_exceptions_payment ON recon_exceptions (payment_id) WHERE payment_id IS NOT NULL;
-- A payout is flagged as missing its debit once; the balance has at most one open mismatch per currency.
CREATE UNIQUE INDEX recon_exceptions_missing_debit ON recon_exceptions (payment_id) WHERE kind = 'missing_debit';
CREATE UNIQUE INDEX recon_exceptions_open_balance ON recon_exceptions (currency)
  WHERE kind = 'balance_mismatch' AND status = 'open';

-- Lease of the re-query of an unknown payment, and the rail's last answer.
CREATE TABLE recon_requery (
  payment_id      text PRIMARY KEY,
  next_at         timestamptz NOT NULL,
  last_status     text,
  last_detail     text,
  queried_at      timestamptz,
  attempts        integer NOT NULL DEFAULT 0
);

-- Completed payouts whose real debit has not been matched yet. A row appears when a payment becomes completed,
-- by whatever path (request, settlement, reconciliation, a person), and goes when its debit is matched; one
-- still here after the grace period is flagged as missing_debit (and stays, flagged, until the debit comes).
CREATE TABLE recon_debit_watch (
  payment_id      text PRIMARY KEY,
  currency        char(3) NOT NULL,
  amount_minor    bigint NOT NULL,
  completed_at    timestamptz NOT NULL,
  flagged         boolean NOT NULL DEFAULT false
);
CREATE INDEX recon_debit_watch_due ON recon_debit_watch (completed_at) WHERE NOT flagged;

-- A trigger rather than a call in every path that completes a payment: the watch row then commits with the
-- completion whatever code made it, and no path can forget it.
CREATE FUNCTION recon_watch_completed_payout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO recon_debit_watch (payment_id, currency, amount_minor, completed_at)
  VALUES (NEW.id, NEW.currency, NEW.amount_minor, NEW.updated_at)
  ON CONFLICT (payment_id) DO NOTHING;
  RETURN NULL;
END;
$$;
CREATE TRIGGER payments_recon_watch_insert AFTER INSERT ON payments
  FOR EACH ROW WHEN (NEW.state = 'completed') EXECUTE FUNCTION recon_watch_completed_payout();
CREATE TRIGGER payments_recon_watch_update AFTER UPDATE OF state ON payments
  FOR EACH ROW WHEN (NEW.state = 'completed' AND OLD.state <> 'completed') EXECUTE FUNCTION recon_watch_completed_payout();

-- The balance check per currency. baseline_minor: the part of the bank's balance the ledger never saw (the
-- account's opening balance), taken at the first check and moved only by a person resolving a mismatch.
CREATE TABLE recon_balance (
  currency             char(3) PRIMARY KEY,
  baseline_minor       bigint,
  checked_at           timestamptz,
  bank_minor           bigint,
  ledger_minor         bigint,
  explained_minor      bigint,
  unexplained_minor    bigint,
  -- Consecutive checks that found the same kind of unexplained difference.
  mismatch_streak      integer NOT NULL DEFAULT 0
);
