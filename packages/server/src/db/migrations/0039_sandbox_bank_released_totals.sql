-- The simulated bank's balance (rails/sandbox/statement-source.ts, `balance`), which reconciliation's balance check
-- reads for each currency every interval, was the sum of every line the bank had ever shown: a sequential scan of
-- sandbox_bank_lines that grew with every payment for as long as the sandbox ran (1 M lines took 150-350 ms of
-- PostgreSQL on the 2-core machine, 200,000 lines 71 ms of the embedded database's one thread; at 3,000 payments a
-- second an hour adds 10 M lines, and the embedded database would hold the service's thread for seconds each time).
-- 0038 made the ledger's side of the check constant; this is the bank's side.
--
-- A line gets its statement position (release_seq) once, under the statement's lock, when it is visible, and is
-- never deleted afterwards (a suppressed debit loses only lines not yet released). So the released lines' totals
-- are kept per currency by the statement that releases them, in the same statement; the balance is those totals
-- plus the lines visible but not yet released, which the unreleased lines' index reaches directly and which are at
-- most an interval's worth. With a clock that only moves forward that is exactly the sum it replaces (a released
-- line became visible before it was released); a clock set back (tests' manual clocks) keeps counting a line the
-- statement has already shown, as a bank would.
CREATE TABLE sandbox_bank_released_totals (
  currency char(3) PRIMARY KEY,
  -- Sums of many lines: numeric, as sum(bigint) is.
  credits_minor numeric NOT NULL DEFAULT 0,
  debits_minor numeric NOT NULL DEFAULT 0
);

INSERT INTO sandbox_bank_released_totals (currency, credits_minor, debits_minor)
  SELECT currency, coalesce(sum(amount_minor) FILTER (WHERE direction = 'credit'), 0),
         coalesce(sum(amount_minor) FILTER (WHERE direction = 'debit'), 0)
  FROM sandbox_bank_lines WHERE release_seq IS NOT NULL GROUP BY currency ORDER BY currency;

-- 0033's release of a page of due lines, which now adds what it released to its currencies' totals.
CREATE OR REPLACE FUNCTION sandbox_release_due(visible_by timestamptz, max_lines int)
RETURNS void
LANGUAGE plpgsql SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off AS $$
BEGIN
  WITH top AS (SELECT coalesce(max(release_seq), 0) AS m FROM sandbox_bank_lines),
       due AS (SELECT seq, row_number() OVER (ORDER BY visible_at, seq) AS n
                 FROM (SELECT seq, visible_at FROM sandbox_bank_lines
                        WHERE release_seq IS NULL AND visible_at <= visible_by
                        ORDER BY visible_at, seq LIMIT max_lines) first_due),
       released AS (
         UPDATE sandbox_bank_lines l SET release_seq = top.m + due.n
           FROM due, top WHERE l.seq = due.seq
           RETURNING l.currency, l.direction, l.amount_minor)
  INSERT INTO sandbox_bank_released_totals AS t (currency, credits_minor, debits_minor)
    SELECT currency, coalesce(sum(amount_minor) FILTER (WHERE direction = 'credit'), 0),
           coalesce(sum(amount_minor) FILTER (WHERE direction = 'debit'), 0)
    FROM released GROUP BY currency
    ON CONFLICT (currency) DO UPDATE
      SET credits_minor = t.credits_minor + excluded.credits_minor,
          debits_minor = t.debits_minor + excluded.debits_minor;
END
$$;

-- The bank's movements in one currency up to an instant (credits less debits, before the opening balance): the
-- released lines' totals, and the visible lines not yet released through their index, whatever the statistics say.
-- One statement, so one snapshot: a release committing meanwhile is counted on one side or the other, never both.
-- The currency compared as char(3), the columns' type, so the totals' key is an index too: compared as text, the
-- totals were a sequential scan priced at enable_seqscan's penalty, a plan cost that set PostgreSQL compiling the
-- statement with JIT (200 ms, for one row and a handful of lines); jit off makes sure no estimate does that again.
CREATE FUNCTION sandbox_bank_movements(of_currency text, visible_by timestamptz)
RETURNS numeric
LANGUAGE plpgsql STABLE SET enable_seqscan = off SET jit = off AS $$
BEGIN
  RETURN (SELECT coalesce(sum(t.credits_minor - t.debits_minor), 0)
            FROM sandbox_bank_released_totals t WHERE t.currency = of_currency::char(3))
       + (SELECT coalesce(sum(CASE WHEN l.direction = 'credit' THEN l.amount_minor ELSE -l.amount_minor END), 0)
            FROM sandbox_bank_lines l
            WHERE l.release_seq IS NULL AND l.visible_at <= visible_by AND l.currency = of_currency::char(3));
END
$$;
