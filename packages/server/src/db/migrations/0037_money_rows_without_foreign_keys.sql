-- The rows a payment writes stop checking their parents through foreign keys. A payment's rows named their parents
-- in eight foreign-key checks (payments -> clients and api_keys, holds -> ledger_accounts, postings ->
-- journal_entries and ledger_accounts, two postings a payment, events -> clients), each a query of its own that
-- takes a KEY SHARE lock on the parent, run after every row: about a tenth of PostgreSQL's time under the payments
-- bench (perf: the after-row triggers 14 % of it, the PL/pgSQL ones among them 3 %), and the same work inside PGlite
-- on the embedded database's one thread. Without them a payment step takes 0.83 of its time on PostgreSQL and 0.85
-- on the embedded database (bench/step-bench.ts, alternated round by round; docs/performance.md). Every writer of
-- those rows names a parent it has just read or written in the same transaction (the authenticated key and its
-- client, the balance row it locks, the journal entry it inserts), so a check could only fail on a bug of that writer.
--
-- What the keys still gave is kept in two other places:
-- - the parents are kept for ever: a client, an API key, a ledger account or a journal entry is never deleted,
--   truncated or given another id (the triggers below; keys are deactivated and clients keep their history, as
--   beneficiaries already do), so no reference can come to dangle;
-- - ledger/invariants.ts checks every such reference from the rows themselves, with the ledger's balances, after the
--   crash and property tests.
-- The foreign keys of rows written at a person's pace (api_keys, ledger_accounts, fundings, quotes, webhooks...) stay.
ALTER TABLE payments DROP CONSTRAINT payments_client_id_fkey;
ALTER TABLE payments DROP CONSTRAINT payments_key_id_fkey;
ALTER TABLE holds DROP CONSTRAINT holds_account_id_fkey;
ALTER TABLE postings DROP CONSTRAINT postings_entry_id_fkey;
ALTER TABLE postings DROP CONSTRAINT postings_account_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_client_id_fkey;
ALTER TABLE key_daily_usage DROP CONSTRAINT key_daily_usage_key_id_fkey;

-- 23503 is foreign_key_violation: what a delete of a referenced parent answered before.
CREATE FUNCTION refuse_removing_kept_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_LEVEL = 'STATEMENT' THEN
    RAISE EXCEPTION '% rows are kept for ever and cannot be truncated', TG_TABLE_NAME USING ERRCODE = '23503';
  END IF;
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION '% row % is kept for ever and cannot be deleted', TG_TABLE_NAME, OLD.id USING ERRCODE = '23503';
  END IF;
  RAISE EXCEPTION '% row % is kept for ever and cannot change its id', TG_TABLE_NAME, OLD.id USING ERRCODE = '23503';
END;
$$;

CREATE TRIGGER clients_kept BEFORE DELETE ON clients FOR EACH ROW EXECUTE FUNCTION refuse_removing_kept_row();
CREATE TRIGGER clients_kept_id BEFORE UPDATE OF id ON clients
  FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION refuse_removing_kept_row();
CREATE TRIGGER clients_kept_all BEFORE TRUNCATE ON clients EXECUTE FUNCTION refuse_removing_kept_row();

CREATE TRIGGER api_keys_kept BEFORE DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION refuse_removing_kept_row();
CREATE TRIGGER api_keys_kept_id BEFORE UPDATE OF id ON api_keys
  FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION refuse_removing_kept_row();
CREATE TRIGGER api_keys_kept_all BEFORE TRUNCATE ON api_keys EXECUTE FUNCTION refuse_removing_kept_row();

CREATE TRIGGER ledger_accounts_kept BEFORE DELETE ON ledger_accounts
  FOR EACH ROW EXECUTE FUNCTION refuse_removing_kept_row();
CREATE TRIGGER ledger_accounts_kept_id BEFORE UPDATE OF id ON ledger_accounts
  FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION refuse_removing_kept_row();
CREATE TRIGGER ledger_accounts_kept_all BEFORE TRUNCATE ON ledger_accounts
  EXECUTE FUNCTION refuse_removing_kept_row();

-- Journal entries are append-only already (0003: no update, no delete); only a truncate went by the foreign key.
CREATE TRIGGER journal_entries_kept_all BEFORE TRUNCATE ON journal_entries
  EXECUTE FUNCTION refuse_removing_kept_row();
