import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiKeyService, createApiKeyService, type KeyCacheTimes } from '../../src/auth/api-keys.ts';
import { parsePublicKeyPem } from '../../src/auth/public-key.ts';
import type { Db } from '../../src/db/db.ts';
import { testKeyPair } from '../support/keys.ts';
import { createTestDb, type TestDb, withQuery } from '../support/test-db.ts';

/**
 * The API key cache (auth/api-keys.ts): a key in use is read again in the background before its entry runs out, so
 * no request waits for that read; concurrent reads of one key share one query; a read that began before a
 * deactivation does not put the key back as active.
 */

let t: TestDb;
let clientId: string;
beforeAll(async () => {
  t = await createTestDb();
  clientId = `cli_cache_${Date.now()}`;
  await t.db.query("INSERT INTO clients (id, name, currency) VALUES ($1, 'cache', 'VES')", [clientId]);
});
afterAll(() => t.close());

/** A Db whose key reads are counted and can be held until released, before they reach the database or after. */
function watchedDb(inner: Db) {
  let held: Promise<void> | null = null;
  let heldAfter = false;
  let release: () => void = () => {};
  const counter = { reads: 0 };
  const db = withQuery(inner, async (sql, params) => {
    if (!sql.includes('WHERE k.key_hash = $1')) return inner.query(sql, params);
    counter.reads++;
    const gate = held;
    if (gate && !heldAfter) await gate;
    const result = await inner.query(sql, params);
    if (gate && heldAfter) await gate;
    return result as never;
  });
  return {
    db,
    counter,
    hold(after = false) {
      heldAfter = after;
      held = new Promise<void>((r) => {
        release = r;
      });
    },
    release() {
      held = null;
      release();
    },
  };
}

async function setUp(): Promise<{
  keys: ApiKeyService;
  apiKey: string;
  keyId: string;
  clock: { ms: number };
  watch: ReturnType<typeof watchedDb>;
}> {
  const watch = watchedDb(t.db);
  const clock = { ms: 1_000_000 };
  const times: KeyCacheTimes = { ttlMs: 5_000, refreshAfterMs: 4_000, unknownTtlMs: 1_000, now: () => clock.ms };
  const keys = createApiKeyService({ db: watch.db, cacheTimes: times });
  const parsed = parsePublicKeyPem(testKeyPair(0).publicPem);
  if (!parsed.ok) throw new Error(parsed.error);
  const { apiKey, keyId } = await keys.create(t.db, { clientId, environment: 'sandbox', publicKey: parsed.key });
  return { keys, apiKey, keyId, clock, watch };
}

/** Whether p settles before the next turns of the event loop (a held read never lets it). */
async function settlesAtOnce(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void p.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return settled;
}

describe('the API key cache', () => {
  it('reads a key in use again in the background before its entry runs out: no lookup waits for it', async () => {
    const { keys, apiKey, keyId, clock, watch } = await setUp();
    const first = await keys.lookup(apiKey);
    expect(first?.keyId).toBe(keyId);
    expect(watch.counter.reads).toBe(1);

    clock.ms += 3_000;
    expect((await keys.lookup(apiKey))?.keyId).toBe(keyId);
    expect(watch.counter.reads).toBe(1);

    // Old enough to be read again: the lookup answers from the cache while the read is held.
    clock.ms += 1_500;
    watch.hold();
    const during = keys.lookup(apiKey);
    expect(await settlesAtOnce(during)).toBe(true);
    expect((await during)?.keyId).toBe(keyId);
    expect(watch.counter.reads).toBe(2);
    // Uses while that read is in flight start no other.
    await keys.lookup(apiKey);
    expect(watch.counter.reads).toBe(2);
    watch.release();
    await new Promise((r) => setTimeout(r, 50));

    // Past the first read's five seconds, the entry is the background read's: still no wait, no read.
    clock.ms += 1_000;
    watch.hold();
    const after = keys.lookup(apiKey);
    expect(await settlesAtOnce(after)).toBe(true);
    expect(watch.counter.reads).toBe(2);
    watch.release();
    // The background read found the same public key and kept its parsed form instead of parsing the PEM again.
    const refreshed = await after;
    expect(refreshed).not.toBe(first);
    expect(refreshed?.publicKey).toBe(first?.publicKey);
  });

  it('reads in the open once an entry has run out unused, and concurrent lookups share that read', async () => {
    const { keys, apiKey, keyId, clock, watch } = await setUp();
    await keys.lookup(apiKey);
    clock.ms += 6_000;
    watch.hold();
    const lookups = [keys.lookup(apiKey), keys.lookup(apiKey), keys.lookup(apiKey)];
    expect(await settlesAtOnce(lookups[0]!)).toBe(false);
    watch.release();
    expect((await Promise.all(lookups)).map((r) => r?.keyId)).toEqual([keyId, keyId, keyId]);
    expect(watch.counter.reads).toBe(2);
  });

  it('remembers an unknown key as unknown for a second only', async () => {
    const { keys, clock, watch } = await setUp();
    expect(await keys.lookup('sk_test_unknown')).toBeNull();
    expect(await keys.lookup('sk_test_unknown')).toBeNull();
    expect(watch.counter.reads).toBe(1);
    clock.ms += 1_000;
    expect(await keys.lookup('sk_test_unknown')).toBeNull();
    expect(watch.counter.reads).toBe(2);
  });

  it('does not put a key back as active from a read that began before its deactivation', async () => {
    const { keys, apiKey, clock, watch, keyId } = await setUp();
    await keys.lookup(apiKey);
    clock.ms += 4_500;
    // Starts the background read, which reads the key while still active and is held before it answers.
    watch.hold(true);
    expect((await keys.lookup(apiKey))?.active).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    expect(await keys.deactivate(keyId)).toBe(true);
    watch.release();
    await new Promise((r) => setTimeout(r, 50));
    expect((await keys.lookup(apiKey))?.active).toBe(false);
    expect(watch.counter.reads).toBe(3);
  });
});
