import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEmbeddedDb } from '../../src/db/embedded.ts';

describe('the embedded database', () => {
  it('starts WAL segments without filling them with zeros, for the whole session', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'dispersa-embedded-'));
    const db = await createEmbeddedDb(path.join(dir, 'db'));
    try {
      const show = async () => (await db.query<{ wal_init_zero: string }>('SHOW wal_init_zero')).rows[0]?.wal_init_zero;
      expect(await show()).toBe('off');
      // A session setting: a transaction, committed or rolled back, leaves it as it was.
      await db.tx(async (q) => q.query('SELECT 1'));
      await db.tx(async (q) => q.query('SELECT 1 FROM no_such_table')).catch(() => undefined);
      expect(await show()).toBe('off');
    } finally {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
