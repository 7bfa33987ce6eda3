-- A page of the simulated bank's statement (rails/sandbox/statement-source.ts): the lines past a reader's cursor, in
-- statement position order. As a plain query its plan came from estimates: without statistics (a fresh database,
-- the embedded one between its maintenance runs) "release_seq > cursor" looks like a third of the table, and the
-- planner read the whole statement and sorted it on every page, a cost that grows with every line the bank ever
-- booked (reconciliation reads a page many times a second under load). Here the plan has one way: the position's
-- unique index, in order, from the cursor on.
CREATE FUNCTION sandbox_statement_page(after_position bigint, max_lines int)
RETURNS SETOF sandbox_bank_lines
LANGUAGE plpgsql STABLE SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off AS $$
BEGIN
  RETURN QUERY
  SELECT * FROM sandbox_bank_lines WHERE release_seq > after_position ORDER BY release_seq LIMIT max_lines;
END
$$;
