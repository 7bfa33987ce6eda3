-- Stored beneficiaries: saved destinations whose destination is frozen at creation (spec, Beneficiary).
-- The database, not the code, guarantees the two promises of the contract: the destination never changes
-- (trigger below) and one client holds at most one ACTIVE beneficiary per rail and account (partial unique index).

CREATE SEQUENCE beneficiaries_seq AS bigint MINVALUE 1 MAXVALUE 9999999999999999;

CREATE TABLE beneficiaries (
  -- 'ben_' + the sequence number zero-padded to 16 digits: every id has the same width, so ordering by id is
  -- ordering by seq is ordering by creation, whatever the collation. Keyset paging walks seq.
  id                text PRIMARY KEY,
  seq               bigint NOT NULL UNIQUE,
  client_id         text NOT NULL REFERENCES clients(id),
  alias             text NOT NULL CHECK (char_length(alias) BETWEEN 1 AND 100),
  rail              text NOT NULL CHECK (rail IN ('PM', 'CCE')),
  -- Not format-validated (spec): a malformed destination is rejected later by the rail.
  account           text NOT NULL CHECK (char_length(account) BETWEEN 1 AND 64),
  -- NULL only on records created before the field existed; the API never writes NULL here.
  bank_code         text CHECK (bank_code ~ '^[0-9]{4}$'),
  doc_type          text NOT NULL CHECK (doc_type IN ('V', 'E', 'J', 'P', 'G')),
  doc_number        text NOT NULL CHECK (doc_number ~ '^[0-9]{1,15}$'),
  -- CCE only; NULL on old CCE records and always on PM.
  beneficiary_name  text CHECK (char_length(beneficiary_name) BETWEEN 1 AND 35),
  status            text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'INACTIVE')),
  created_at        timestamptz NOT NULL,
  archived_at       timestamptz,
  CONSTRAINT beneficiaries_id_from_seq CHECK (id = 'ben_' || lpad(seq::text, 16, '0')),
  CONSTRAINT beneficiaries_cce_bank_prefix CHECK (rail <> 'CCE' OR bank_code IS NULL OR bank_code = left(account, 4)),
  CONSTRAINT beneficiaries_name_cce_only CHECK (rail = 'CCE' OR beneficiary_name IS NULL),
  CONSTRAINT beneficiaries_archived_at CHECK ((status = 'INACTIVE') = (archived_at IS NOT NULL))
);

-- Listing: one client's beneficiaries, newest first.
CREATE INDEX beneficiaries_client_seq ON beneficiaries (client_id, seq);

-- Per client: another client may store the same phone or account. Archived rows do not count, so the replace
-- flow (archive, then create) works and concurrent creations of one destination leave exactly one winner.
CREATE UNIQUE INDEX beneficiaries_active_destination ON beneficiaries (client_id, rail, account)
  WHERE status = 'ACTIVE';

-- Frozen destination: no code path can change it, whatever SQL it runs. The only changes allowed are a new
-- alias on an ACTIVE row and ACTIVE -> INACTIVE (archive; the CHECK on archived_at makes it stamp the time).
-- An archived row never changes again, so it is never revived.
CREATE FUNCTION beneficiaries_guard_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is ACTIVE past this point, so the only status change left (given the CHECK) is ACTIVE -> INACTIVE.
  IF OLD.status = 'INACTIVE' THEN
    RAISE EXCEPTION 'beneficiary % is archived and cannot change', OLD.id;
  END IF;
  IF NEW.id IS DISTINCT FROM OLD.id
     OR NEW.seq IS DISTINCT FROM OLD.seq
     OR NEW.client_id IS DISTINCT FROM OLD.client_id
     OR NEW.rail IS DISTINCT FROM OLD.rail
     OR NEW.account IS DISTINCT FROM OLD.account
     OR NEW.bank_code IS DISTINCT FROM OLD.bank_code
     OR NEW.doc_type IS DISTINCT FROM OLD.doc_type
     OR NEW.doc_number IS DISTINCT FROM OLD.doc_number
     OR NEW.beneficiary_name IS DISTINCT FROM OLD.beneficiary_name
     OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
    RAISE EXCEPTION 'beneficiary % destination is frozen', OLD.id;
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER beneficiaries_frozen BEFORE UPDATE ON beneficiaries
  FOR EACH ROW EXECUTE FUNCTION beneficiaries_guard_update();

-- Records are kept for ever: payments made by beneficiaryId keep pointing at them.
CREATE FUNCTION beneficiaries_refuse_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'beneficiary % cannot be deleted; archive it instead', OLD.id;
END;
$$;

CREATE TRIGGER beneficiaries_kept BEFORE DELETE ON beneficiaries
  FOR EACH ROW EXECUTE FUNCTION beneficiaries_refuse_delete();
