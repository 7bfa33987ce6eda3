import type { Db } from '../../db/db.ts';
import { prepared } from '../../db/prepared.ts';
import type { Clock } from '../../shared/clock.ts';
import { minorFromDb } from '../../shared/money.ts';
import type { StatementPage, StatementSource } from '../rail.ts';
import { LINE_COLUMNS, type LineRow, one, toStatementLine } from './lines.ts';

export interface SandboxStatementDeps {
  db: Db;
  clock: Clock;
  /** The account's balance before any line, per currency. */
  openingBalance(currency: string): bigint;
  /** Most lines per page; call again with the returned cursor until a page comes back empty. */
  pageSize: number;
}

/**
 * Declared (db/prepared.ts): reconciliation fetches a page about ten times a second under the payment load, and on
 * the embedded database a declared statement's rows are read straight from the answer's bytes instead of by PGlite's
 * protocol parser, which spent about 1 % of the thread that serves requests on this page's rows
 * (docs/performance-log.md, "Thirty-ninth session").
 */
const FETCH_SQL = prepared(
  `SELECT ${LINE_COLUMNS}, release_seq FROM sandbox_fetch_statement($1::bigint, $2::timestamptz, $3::int)`,
);

/**
 * The simulated bank's statement, read the way reconciliation reads a real one.
 *
 * Cursor: neither insertion order (seq) nor visibility order (visible_at, seq) is safe on its own.
 * A line booked later can become visible earlier (an instant debit booked after a debit that settles
 * in two seconds), which breaks a seq cursor. An order on (visible_at, seq) relies on every line being
 * committed at the instant its visible_at is reached; a transaction that commits a few milliseconds
 * after it read the clock, or a clock set backwards, would slip a line behind a cursor already handed
 * out. So each fetch first gives every visible line that has no statement position yet the next
 * positions (release_seq, in (visible_at, seq) order) under a lock, then returns lines past the
 * cursor by position. Positions are assigned only under that lock and only to committed, visible
 * lines, so they grow in commit order: a line not committed at one fetch is given a higher position
 * at a later one, and every line is returned exactly once to a reader that follows its cursor.
 * Positions are global; any number of readers keep their own cursors.
 */
export function createSandboxStatementSource(deps: SandboxStatementDeps): StatementSource {
  const { db, clock } = deps;

  return {
    name: 'sandbox',

    async fetchSince(cursor: string | null): Promise<StatementPage> {
      const after = parseCursor(cursor);
      // One statement, its own transaction (migration 0040): under the statement's lock, at most a page of lines
      // is given positions per fetch, the first in (visible_at, seq) order (migration 0033), so the order and the
      // exactly-once reading above hold, and the fetch after a backlog (an interval of payments under load) costs a
      // page's work instead of the whole backlog's; then the page past the cursor, through the position's index
      // whatever the statistics say (migration 0031).
      const { rows } = await db.query<LineRow & { release_seq: string }>(FETCH_SQL, [
        after.toString(10),
        clock.now(),
        deps.pageSize,
      ]);
      const last = rows[rows.length - 1];
      return { lines: rows.map(toStatementLine), cursor: last === undefined ? cursor : last.release_seq };
    },

    async balance(currency: string): Promise<bigint> {
      // Every line visible by now: the released lines' running totals and the few not yet released (migration
      // 0039), where a sum over every line ever shown grew with each payment and was read every interval.
      const { rows } = await db.query<{ movements: string }>(
        'SELECT sandbox_bank_movements($1, $2)::text AS movements',
        [currency, clock.now()],
      );
      return deps.openingBalance(currency) + minorFromDb(one(rows).movements);
    },
  };
}

/** The cursor is the statement position of the last line returned; anything else is a caller's bug. */
function parseCursor(cursor: string | null): bigint {
  if (cursor === null) return 0n;
  if (!/^(0|[1-9][0-9]{0,17})$/.test(cursor)) throw new Error(`malformed sandbox statement cursor: ${cursor}`);
  return BigInt(cursor);
}
