-- The reconciliation's balance check (reconciliation/balance.ts) compares the bank's balance with the ledger's bank
-- account every few seconds per currency. The ledger's side was the sum of all the account's postings: every payout
-- and every funding adds one, so each check read the whole history of the account, and the read grew with the
-- ledger for as long as the service ran (2 M postings took 0.2-0.3 s on the 2-core machine; at 3,000 payments a
-- second an hour adds 10 M, and the check would soon take a core of its own beside the payments).
--
-- Each statement that writes postings now also writes, for each bank account it touched, one row with that
-- statement's total for the account, in the same statement (the trigger below, which already ran once per statement
-- to check that entries balance). The balance check sums these rows, and folds the rows it has read into one
-- (`compactBankDeltas`): the rows it deletes are exactly the ones it sums into the new row, in one statement, so
-- a row committed meanwhile by a payment is neither lost nor counted twice. The rows stay few whatever the ledger's
-- size: those written since the last check, plus one.
--
-- Only the bank accounts: their balance is what the check needs, and the client accounts cache theirs already
-- (ledger_accounts.available_minor). ledger/invariants.ts checks the rows against the postings.
CREATE TABLE bank_balance_deltas (
  id bigserial PRIMARY KEY,
  account_id text NOT NULL,
  -- A sum of many postings: numeric, as sum(bigint) is.
  amount_minor numeric NOT NULL
);
CREATE INDEX bank_balance_deltas_account ON bank_balance_deltas (account_id);

INSERT INTO bank_balance_deltas (account_id, amount_minor)
  SELECT account_id, sum(amount_minor) FROM postings WHERE account_id LIKE 'bank:%' GROUP BY account_id
  ORDER BY account_id;

-- 0035's check of the entries a statement wrote, and the bank accounts' totals of that statement.
DROP TRIGGER postings_balanced ON postings;
DROP FUNCTION check_entries_balanced();
CREATE FUNCTION postings_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  SELECT e.entry_id, s.currency, s.total INTO bad
  FROM (SELECT DISTINCT entry_id FROM added) e
  CROSS JOIN LATERAL (SELECT p.currency, sum(p.amount_minor) AS total FROM postings p WHERE p.entry_id = e.entry_id
                      GROUP BY p.currency HAVING sum(p.amount_minor) <> 0) s
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'journal entry % does not balance in % (off by %)', bad.entry_id, bad.currency, bad.total;
  END IF;
  INSERT INTO bank_balance_deltas (account_id, amount_minor)
    SELECT account_id, sum(amount_minor) FROM added WHERE account_id LIKE 'bank:%' GROUP BY account_id
    ORDER BY account_id;
  RETURN NULL;
END;
$$;
CREATE TRIGGER postings_inserted AFTER INSERT ON postings REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION postings_inserted();
