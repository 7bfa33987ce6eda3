import { expect } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import { ledgerViolations } from '../../src/ledger/invariants.ts';

/** The shared invariant check: every test that moves money ends with a sound ledger. */
export async function expectLedgerSound(db: Db): Promise<void> {
  expect(await ledgerViolations(db)).toEqual([]);
}
