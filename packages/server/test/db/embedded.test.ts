import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEmbeddedDb } from '../../src/db/embedded.ts';
import { createDatabaseApart, holdsDatabase } from '../../src/db/embedded-create.ts';

describe('the embedded database', () => {
  it('is created in a worker of its own: what creating it leaves behind never reaches the service thread', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'dispersa-embedded-'));
    const dbDir = path.join(dir, 'db');
    try {
      expect(holdsDatabase(dbDir)).toBe(false);
      const before = process.memoryUsage().external;
      await createDatabaseApart(dbDir);
      // Created in this thread, the engine's memory alone would be hundreds of MB outside the heap (630 measured).
      expect(process.memoryUsage().external - before).toBeLessThan(64 * 2 ** 20);
      expect(holdsDatabase(dbDir)).toBe(true);
      // The service opens it as it would on a restart: the same database, and nothing created twice.
      const db = await createEmbeddedDb(dbDir);
      try {
        await db.exec('CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)');
      } finally {
        await db.close();
      }
      const again = await createEmbeddedDb(dbDir);
      try {
        expect((await again.query<{ n: number }>('SELECT n FROM kept')).rows).toEqual([{ n: 7 }]);
      } finally {
        await again.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a directory that cannot be created is an error, not a half-made database', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'dispersa-embedded-'));
    try {
      const file = path.join(dir, 'not-a-directory');
      await writeFile(file, 'x');
      await expect(createDatabaseApart(path.join(file, 'db'))).rejects.toThrow();
      expect(holdsDatabase(path.join(file, 'db'))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

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
