import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../support/test-db.ts';

/**
 * consume_nonces (migrations 0001, 0021, 0032) against a model of the anti-replay window written from its rule
 * alone: per key a mark and the 64 numbers below it; a strict nonce must be above the mark; a non-strict one may
 * also take an unseen number of the window; a nonce above the mark moves the window up. Random batches mix keys
 * (one deactivated, one unknown), nonces around a moving mark (above, on, inside and below the window), strict and
 * not, and the same nonce twice in a batch; each verdict, and each key's mark and window afterwards, must be the
 * model's, as if the batch's nonces had been applied one at a time in arrival order.
 */

const KEYS = ['key_nw_a', 'key_nw_b', 'key_nw_c'] as const;
const INACTIVE = 'key_nw_off';
const UNKNOWN = 'key_nw_missing';
const WINDOW = 64n;
const FULL = (1n << WINDOW) - 1n;

interface KeyState {
  mark: bigint;
  /** Bit (64 - p) set: nonce mark - p was used (p = 1..64), as the bit(64) column reads left to right. */
  window: bigint;
}

type Verdict = 'ok' | 'replay' | 'inactive';

function consume(keys: Map<string, KeyState>, keyId: string, nonce: bigint, strict: boolean): Verdict {
  const k = keys.get(keyId);
  if (k === undefined) return 'inactive';
  if (nonce > k.mark) {
    const d = nonce - k.mark;
    k.window = d > WINDOW ? 0n : ((k.window >> d) | (1n << (WINDOW - d))) & FULL;
    k.mark = nonce;
    return 'ok';
  }
  const below = k.mark - nonce;
  if (strict || below === 0n || below > WINDOW) return 'replay';
  const bit = 1n << (WINDOW - below);
  if ((k.window & bit) !== 0n) return 'replay';
  k.window |= bit;
  return 'ok';
}

const bits = (w: bigint): string => w.toString(2).padStart(64, '0');

let testDb: TestDb;

beforeAll(async () => {
  testDb = await createTestDb();
  await testDb.db.query(`INSERT INTO clients (id, name, currency) VALUES ('cli_nonce_props', 'nonce props', 'VES')`);
  for (const [i, id] of [...KEYS, INACTIVE].entries()) {
    await testDb.db.query(
      `INSERT INTO api_keys (id, client_id, environment, key_hash, public_key_spki_pem, public_key_fingerprint, active)
       VALUES ($1, 'cli_nonce_props', 'sandbox', $2, 'not a key', 'fp', $3)`,
      [id, Buffer.from(`hash-${i}`), id !== INACTIVE],
    );
  }
});

afterAll(async () => {
  await testDb.close();
});

const request = fc.record({
  key: fc.constantFrom<string>(...KEYS, KEYS[0], KEYS[0], INACTIVE, UNKNOWN),
  // Relative to the key's mark when the batch is built: far below, inside the window, on it, just above, far above.
  offset: fc.oneof(fc.integer({ min: -70, max: 3 }), fc.integer({ min: 60, max: 140 })),
  strict: fc.boolean(),
  repeat: fc.boolean(),
});

describe('consume_nonces', () => {
  it('gives each nonce of a batch the verdict of the window applied one nonce at a time', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(request, { minLength: 1, maxLength: 24 }), { maxLength: 8 }),
        async (batches) => {
          await testDb.db.query(`UPDATE api_keys SET nonce_mark = 1000, nonce_window = B'0'::bit(64)`);
          const model = new Map<string, KeyState>(KEYS.map((k) => [k, { mark: 1000n, window: 0n }]));
          for (const batch of batches) {
            const items: { key: string; nonce: bigint; strict: boolean }[] = [];
            for (const r of batch) {
              const base = model.get(r.key)?.mark ?? 1000n;
              const nonce = base + BigInt(r.offset) > 0n ? base + BigInt(r.offset) : 1n;
              items.push({ key: r.key, nonce, strict: r.strict });
              if (r.repeat) items.push({ key: r.key, nonce, strict: false });
            }
            const { rows } = await testDb.db.query<{ pos: number; verdict: Verdict }>(
              'SELECT pos, verdict FROM consume_nonces($1::text[], $2::numeric[], $3::boolean[]) ORDER BY pos',
              [items.map((i) => i.key), items.map((i) => i.nonce.toString()), items.map((i) => i.strict)],
            );
            const expected = items.map((i, n) => ({ pos: n + 1, verdict: consume(model, i.key, i.nonce, i.strict) }));
            expect(rows.map((r) => ({ pos: Number(r.pos), verdict: r.verdict }))).toEqual(expected);
          }
          const { rows } = await testDb.db.query<{ id: string; mark: string; window: string }>(
            `SELECT id, nonce_mark::text AS mark, nonce_window::text AS window FROM api_keys
            WHERE client_id = 'cli_nonce_props' ORDER BY id`,
          );
          expect(rows).toEqual(
            [...KEYS, INACTIVE].sort().map((id) => {
              const k = model.get(id) ?? { mark: 1000n, window: 0n };
              return { id, mark: k.mark.toString(), window: bits(k.window) };
            }),
          );
        },
      ),
      { numRuns: 60 },
    );
  });
});
