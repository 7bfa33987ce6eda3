import { describe, expect, it } from 'vitest';
import { inSchema, interleavedRatio } from '../../bench/step-bench.ts';
import type { Db, QueryResult } from '../../src/db/db.ts';
import { preparedName } from '../../src/db/prepared.ts';

describe('interleaved steps (step-bench STEP_INTERLEAVE)', () => {
  it('recovers the candidate-to-migrated ratio through a drift that moves both alike', () => {
    // The machine slows threefold over the run and each step jitters by ±20 %; the candidate is 10 % cheaper.
    const samples = Array.from({ length: 4000 }, (_, s) => {
      const version = s % 2;
      const drift = 1 + (2 * s) / 4000;
      const jitter = 1 + 0.2 * Math.sin(s * 12.9898);
      return { version, value: drift * jitter * (version === 1 ? 0.9 : 1) };
    });
    const { ratio, low, high, blocks } = interleavedRatio(samples, 20);
    expect(blocks).toBe(200);
    expect(ratio).toBeCloseTo(0.9, 2);
    expect(low).toBeLessThan(ratio);
    expect(high).toBeGreaterThan(ratio);
    expect(high - low).toBeLessThan(0.02);
  });

  it('says so when the versions do not differ', () => {
    const samples = Array.from({ length: 2000 }, (_, s) => ({ version: s % 2, value: 1 + 0.3 * Math.cos(s * 7.1) }));
    const { low, high } = interleavedRatio(samples, 20);
    expect(low).toBeLessThan(1);
    expect(high).toBeGreaterThan(1);
  });

  it("sends a version's step calls to its schema's functions, each as a prepared statement of its own", async () => {
    const seen: { sql: string; params?: readonly unknown[] }[] = [];
    const db: Db = {
      kind: 'postgres',
      async query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
        seen.push({ sql, params });
        return { rows: [], rowCount: 0 };
      },
      exec: async () => {},
      tx: async (fn) => fn(db),
      close: async () => {},
    };
    const versioned = inSchema(db, 'step_b');
    await versioned.query('SELECT payment_id, moved FROM book_payments($1::jsonb, $2::timestamptz)', ['[]', 'now']);
    await versioned.query('SELECT 1 FROM payments WHERE id = $1', ['pay_1']);
    expect(seen[0]!.sql).toBe('SELECT payment_id, moved FROM step_b.book_payments($1::jsonb, $2::timestamptz)');
    expect(seen[0]!.params).toEqual(['[]', 'now']);
    expect(preparedName(seen[0]!.sql)).toBeDefined();
    expect(seen[1]!.sql).toBe('SELECT 1 FROM payments WHERE id = $1');
  });
});
