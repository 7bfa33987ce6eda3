-- The simulated bank behind the sandbox rail. Its whole state lives here (never in timers or memory) so
-- that it survives a killed process like a real bank would. Times are written from the injected clock,
-- never from now(), so tests move them with a manual clock. Nothing here references the service's own
-- tables: the bank knows payments only by the id the rail hands it.

-- The bank's account statement. bank_line_id is the bank's own identifier; raw is the line rendered
-- without it, so a byte-identical copy differs from its original only by bank_line_id.
CREATE TABLE sandbox_bank_lines (
  seq             bigserial PRIMARY KEY,
  bank_line_id    text GENERATED ALWAYS AS ('SBL' || lpad(seq::text, 12, '0')) STORED UNIQUE,
  direction       text NOT NULL CHECK (direction IN ('debit', 'credit')),
  amount_minor    bigint NOT NULL CHECK (amount_minor > 0),
  currency        char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  value_date      date NOT NULL,
  reference       text NOT NULL,
  raw             text NOT NULL,
  -- payout: a rail transfer's debit; return: the clearing house sending a payout back;
  -- funding: a client's funding; manual and duplicate: operator controls.
  origin          text NOT NULL CHECK (origin IN ('payout', 'return', 'funding', 'manual', 'duplicate')),
  payment_id      text,
  -- No foreign key: the copy stands on its own once booked, even if its original is later removed
  -- (a suppressed debit that was not yet visible).
  duplicate_of    text,
  created_at      timestamptz NOT NULL,
  -- Asynchronous outcomes are lines booked ahead with a later visible_at; reads compare it to the clock.
  visible_at      timestamptz NOT NULL CHECK (visible_at >= created_at),
  -- Position on the delivered statement, assigned under a lock when a reader first sees the line
  -- visible; statement cursors run over it (see statement-source.ts for why not over seq or visible_at).
  release_seq     bigint UNIQUE,
  CHECK ((origin IN ('payout', 'return')) = (payment_id IS NOT NULL)),
  CHECK ((origin = 'duplicate') = (duplicate_of IS NOT NULL))
);
CREATE INDEX sandbox_bank_lines_unreleased ON sandbox_bank_lines (visible_at, seq) WHERE release_seq IS NULL;
CREATE INDEX sandbox_bank_lines_payment ON sandbox_bank_lines (payment_id) WHERE payment_id IS NOT NULL;

-- Every transfer the rail accepted, keyed by the reference the bank rejects when it sees it again.
-- scenario names the simulated behaviour; answers before and after settles_at derive from it in code.
CREATE TABLE sandbox_bank_transfers (
  rail_reference        text PRIMARY KEY,
  payment_id            text NOT NULL,
  rail                  text NOT NULL CHECK (rail IN ('PM', 'CCE')),
  amount_minor          bigint NOT NULL CHECK (amount_minor > 0),
  currency              char(3) NOT NULL,
  destination_account   text NOT NULL,
  destination_bank      text NOT NULL,
  scenario              text NOT NULL,
  submitted_at          timestamptz NOT NULL,
  settles_at            timestamptz NOT NULL CHECK (settles_at >= submitted_at),
  -- Later submissions of the same reference, answered as a duplicate and booked nothing.
  resubmissions         int NOT NULL DEFAULT 0
);
CREATE INDEX sandbox_bank_transfers_payment ON sandbox_bank_transfers (payment_id);

-- Operator control: payments whose debit the bank will not book.
CREATE TABLE sandbox_bank_suppressions (
  payment_id   text PRIMARY KEY,
  created_at   timestamptz NOT NULL
);
