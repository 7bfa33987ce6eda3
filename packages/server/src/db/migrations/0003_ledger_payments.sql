-- Double-entry ledger, fundings and payments.
--
-- Postings are signed: positive = debit, negative = credit; every journal entry sums to zero per currency
-- (checked by a deferred constraint trigger at commit). Asset accounts (the service's bank account) are
-- debit-normal; client balances are liabilities, credit-normal. Each account row caches the sum of its postings
-- and the total of its open holds, updated in the same transaction as the postings; a CHECK keeps a client's
-- available balance (-(sum) - held) from ever going negative, whatever the concurrency.

CREATE TABLE ledger_accounts (
  id             text PRIMARY KEY,
  kind           text NOT NULL CHECK (kind IN ('client_balance', 'bank', 'fx_position')),
  client_id      text REFERENCES clients(id),
  currency       char(3) NOT NULL,
  posted_minor   bigint NOT NULL DEFAULT 0,
  held_minor     bigint NOT NULL DEFAULT 0 CHECK (held_minor >= 0),
  created_at     timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'client_balance') = (client_id IS NOT NULL)),
  CONSTRAINT client_available_not_negative CHECK (kind <> 'client_balance' OR -posted_minor - held_minor >= 0)
);
CREATE UNIQUE INDEX ledger_accounts_client ON ledger_accounts (client_id, currency) WHERE kind = 'client_balance';

CREATE TABLE journal_entries (
  id           bigserial PRIMARY KEY,
  kind         text NOT NULL,
  payment_id   text,
  funding_id   text,
  -- Makes booking idempotent: one entry per (payment, purpose) or funding.
  entry_ref    text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE postings (
  id            bigserial PRIMARY KEY,
  entry_id      bigint NOT NULL REFERENCES journal_entries(id),
  account_id    text NOT NULL REFERENCES ledger_accounts(id),
  currency      char(3) NOT NULL,
  amount_minor  bigint NOT NULL CHECK (amount_minor <> 0)
);
CREATE INDEX postings_entry ON postings (entry_id);
CREATE INDEX postings_account ON postings (account_id);

CREATE FUNCTION check_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  SELECT currency, sum(amount_minor) AS total INTO bad FROM postings
    WHERE entry_id = NEW.entry_id GROUP BY currency HAVING sum(amount_minor) <> 0 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'journal entry % does not balance in % (off by %)', NEW.entry_id, bad.currency, bad.total;
  END IF;
  RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER postings_balanced AFTER INSERT ON postings
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION check_entry_balanced();

-- Postings and entries are append-only.
CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END;
$$;
CREATE TRIGGER postings_append_only BEFORE UPDATE OR DELETE ON postings FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON journal_entries FOR EACH ROW EXECUTE FUNCTION refuse_change();

CREATE TABLE holds (
  id            text PRIMARY KEY,
  account_id    text NOT NULL REFERENCES ledger_accounts(id),
  payment_id    text NOT NULL UNIQUE,
  currency      char(3) NOT NULL,
  amount_minor  bigint NOT NULL CHECK (amount_minor > 0),
  status        text NOT NULL DEFAULT 'held' CHECK (status IN ('held', 'posted', 'released')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  closed_at     timestamptz,
  CHECK ((status = 'held') = (closed_at IS NULL))
);
CREATE INDEX holds_open ON holds (account_id) WHERE status = 'held';

CREATE TABLE fundings (
  id            text PRIMARY KEY,
  client_id     text NOT NULL REFERENCES clients(id),
  amount_minor  bigint NOT NULL CHECK (amount_minor > 0),
  currency      char(3) NOT NULL,
  reference     text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  -- The bank credit is matched by reference, so a reference names one funding.
  CONSTRAINT fundings_reference_unique UNIQUE (currency, reference)
);
CREATE INDEX fundings_client ON fundings (client_id, created_at);

-- Payments: the sequence orders ids (keyset listing: newer payments always have larger ids).
CREATE SEQUENCE payment_seq;

CREATE TABLE payments (
  id                   text PRIMARY KEY,
  seq                  bigint NOT NULL UNIQUE,
  client_id            text NOT NULL REFERENCES clients(id),
  key_id               text NOT NULL REFERENCES api_keys(id),
  idempotency_key      text NOT NULL,
  -- SHA-256 of the normalised content (amount, destination, bank, document, name, quote): a replay must match.
  fingerprint          text NOT NULL,
  state                text NOT NULL CHECK (state IN ('pending', 'processing', 'completed', 'failed', 'unknown')),
  sub_status           text,
  failure_code         text,
  amount_minor         bigint NOT NULL CHECK (amount_minor > 0),
  currency             char(3) NOT NULL,
  rail                 text NOT NULL CHECK (rail IN ('PM', 'CCE')),
  account              text NOT NULL,
  bank_code            text,
  doc_type             text,
  doc_number           text,
  beneficiary_name     text,
  beneficiary_id       text,
  source_currency      char(3) NOT NULL,
  source_amount_minor  bigint NOT NULL CHECK (source_amount_minor > 0),
  quote_id             text,
  rate_id              text,
  -- Generated by the service, stored before the rail is called: the only identifier a bank ever sees.
  rail_reference       text NOT NULL UNIQUE,
  -- Set when the payment is handed to the rail; a payment with it set is never submitted again.
  dispatched_at        timestamptz,
  unknown_since        timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT payments_idempotency UNIQUE (client_id, idempotency_key)
);
CREATE INDEX payments_client_seq ON payments (client_id, seq DESC);
CREATE INDEX payments_client_state_seq ON payments (client_id, state, seq DESC);
CREATE INDEX payments_open ON payments (state, updated_at) WHERE state IN ('processing', 'pending', 'unknown');
CREATE INDEX payments_key_day ON payments (key_id, rail, created_at);

-- Operator decisions on payments (who, when, why), kept forever.
CREATE TABLE payment_resolutions (
  id            bigserial PRIMARY KEY,
  payment_id    text NOT NULL REFERENCES payments(id),
  from_state    text NOT NULL,
  from_sub      text,
  outcome       text NOT NULL,
  note          text NOT NULL,
  resolved_by   text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
