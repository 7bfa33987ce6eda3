-- The service's own VES accounts exist from the start, so a payout never creates an account row (a hot insert
-- every booking would wait on). Their posted_minor is no longer maintained: their balance is the sum of their postings.
INSERT INTO ledger_accounts (id, kind, client_id, currency) VALUES
  ('bank:VES', 'bank', NULL, 'VES'),
  ('fx:VES', 'fx_position', NULL, 'VES')
ON CONFLICT (id) DO NOTHING;
UPDATE ledger_accounts SET posted_minor = 0 WHERE kind <> 'client_balance';

-- What each key has spent per rail and UTC day, kept by the payment transactions themselves: one conditional
-- upsert checks and takes the daily allowance, instead of summing the day's payments under a lock.
CREATE TABLE key_daily_usage (
  key_id      text NOT NULL REFERENCES api_keys(id),
  rail        text NOT NULL,
  day         date NOT NULL,
  used_minor  bigint NOT NULL CHECK (used_minor >= 0),
  PRIMARY KEY (key_id, rail, day)
);
INSERT INTO key_daily_usage (key_id, rail, day, used_minor)
  SELECT key_id, rail, (created_at AT TIME ZONE 'UTC')::date, sum(amount_minor)
  FROM payments WHERE state <> 'failed' GROUP BY 1, 2, 3;
