-- The balance check's figures are sums over every client's money: stored as numeric, they cannot overflow. As
-- bigint, two fundings near the column's maximum made every later check fail with "bigint out of range", and the
-- bank-versus-ledger check stopped for the whole deployment (issue 13, item 6). Single amounts stay bigint, bounded
-- far below its range by the service (one funding at most 10^15 minor units, a balance at most 10^16).
ALTER TABLE recon_balance
  ALTER COLUMN baseline_minor TYPE numeric,
  ALTER COLUMN bank_minor TYPE numeric,
  ALTER COLUMN ledger_minor TYPE numeric,
  ALTER COLUMN explained_minor TYPE numeric,
  ALTER COLUMN unexplained_minor TYPE numeric;
-- A balance mismatch exception carries the unexplained difference, a sum as well.
ALTER TABLE recon_exceptions ALTER COLUMN amount_minor TYPE numeric;
