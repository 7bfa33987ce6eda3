-- A batch of statement lines cost eleven calls that did the same work whatever the batch held: the simulated bank's
-- fetch was five (BEGIN, its lock, the release of due lines, the page, COMMIT) and ingestion's transaction opened
-- with four (the ingestion lock, the source's row made sure of, its cursor locked, the join settings) and closed
-- with two (the balance rows of the batch's currencies, the cursor advanced). On the embedded database every call is
-- some 0.2-0.4 ms of the one thread that also serves the requests, and under the payment load a batch is 100 lines
-- about ten times a second. Each group is now one call; what each statement does and the order it runs in, within
-- its transaction, are unchanged (a VOLATILE function takes a new snapshot for each statement under READ COMMITTED,
-- as the separate statements did).

-- The simulated bank's statement past a position, after giving positions to at most a page of lines now due, under
-- the statement's lock (rails/sandbox/statement-source.ts says why positions are given that way). One statement is
-- its own transaction: the lock is held until the page is read and released with the positions' commit.
CREATE FUNCTION sandbox_fetch_statement(after_position bigint, visible_by timestamptz, max_lines int)
RETURNS SETOF sandbox_bank_lines
LANGUAGE plpgsql AS $$
BEGIN
  -- The statement's lock class (rails/sandbox/locks.ts).
  PERFORM pg_advisory_xact_lock(4242041, 0);
  PERFORM sandbox_release_due(visible_by, max_lines);
  RETURN QUERY SELECT * FROM sandbox_statement_page(after_position, max_lines);
END
$$;

-- What a transaction that stores statement lines begins with (reconciliation/ingest.ts, ingestLines): the ingestion
-- lock (INGEST_LOCK), and nested loops over the indexes for the rest of the transaction (ingestLines says why).
-- set_config's third argument keeps the settings to the transaction; the function has no SET clause that would
-- restore them on its exit.
CREATE FUNCTION recon_begin_ingest()
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  -- INGEST_LOCK (reconciliation/ingest.ts).
  PERFORM pg_advisory_xact_lock(4242071, 0);
  PERFORM set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true);
END
$$;

-- A batch of a paged source: recon_begin_ingest, then the source's cursor, locked (its row made first if new).
CREATE FUNCTION recon_open_batch(source_name text, at timestamptz)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  position text;
BEGIN
  PERFORM recon_begin_ingest();
  INSERT INTO recon_sources (name, cursor, updated_at) VALUES (source_name, NULL, at) ON CONFLICT (name) DO NOTHING;
  SELECT cursor INTO position FROM recon_sources WHERE name = source_name FOR UPDATE;
  RETURN position;
END
$$;

-- The end of any batch: a balance row for each currency the batch's lines are in (the balance check's list), and
-- for a paged source its cursor advanced past the batch (source_name null: an imported file, which has none).
CREATE FUNCTION recon_close_batch(currencies text[], source_name text, new_cursor text, fresh bigint, at timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO recon_balance (currency) SELECT unnest(currencies) ON CONFLICT (currency) DO NOTHING;
  IF source_name IS NOT NULL THEN
    UPDATE recon_sources SET cursor = new_cursor, lines_ingested = lines_ingested + fresh, updated_at = at
      WHERE name = source_name;
  END IF;
END
$$;
