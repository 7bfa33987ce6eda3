-- The simulated bank gives statement positions to at most a page of visible lines per fetch
-- (rails/sandbox/statement-source.ts), the first in (visible_at, seq) order. As a plain statement its plan came from
-- estimates: without statistics the unreleased lines look like a handful, and the planner read every one of them
-- and sorted them to keep the first page, so each fetch cost the whole backlog again. Here the plan has one way:
-- the unreleased lines' index, in order, stopping after the page.
CREATE FUNCTION sandbox_release_due(visible_by timestamptz, max_lines int)
RETURNS void
LANGUAGE plpgsql SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off AS $$
BEGIN
  WITH top AS (SELECT coalesce(max(release_seq), 0) AS m FROM sandbox_bank_lines),
       due AS (SELECT seq, row_number() OVER (ORDER BY visible_at, seq) AS n
                 FROM (SELECT seq, visible_at FROM sandbox_bank_lines
                        WHERE release_seq IS NULL AND visible_at <= visible_by
                        ORDER BY visible_at, seq LIMIT max_lines) first_due)
  UPDATE sandbox_bank_lines l SET release_seq = top.m + due.n
    FROM due, top WHERE l.seq = due.seq;
END
$$;
