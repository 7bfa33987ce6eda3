import { createHash, createPublicKey, hash, type KeyObject, randomBytes } from 'node:crypto';
import type { Environment } from '../config.ts';
import type { Db, Queryable } from '../db/db.ts';
import { randomId } from '../shared/ids.ts';
import type { RegisteredPublicKey } from './public-key.ts';

/** API keys: `sk_test_` / `sk_live_` + 256 random bits. Stored only as a SHA-256 hash. */

export const KEY_PREFIX: Record<Environment, string> = { sandbox: 'sk_test_', production: 'sk_live_' };

export interface ApiKeyRecord {
  keyId: string;
  clientId: string;
  clientCurrency: string;
  environment: Environment;
  active: boolean;
  publicKey: KeyObject;
  fingerprint: string;
  createdAt: Date;
}

export function hashApiKey(apiKey: string): Buffer {
  return createHash('sha256').update(apiKey, 'utf8').digest();
}

export function generateApiKey(environment: Environment): string {
  return KEY_PREFIX[environment] + randomBytes(32).toString('base64url');
}

interface KeyRow {
  id: string;
  client_id: string;
  currency: string;
  environment: Environment;
  active: boolean;
  public_key_spki_pem: string;
  public_key_fingerprint: string;
  created_at: Date;
}

const SELECT_KEY = `SELECT k.id, k.client_id, c.currency, k.environment, k.active, k.public_key_spki_pem,
  k.public_key_fingerprint, k.created_at FROM api_keys k JOIN clients c ON c.id = k.client_id`;

/**
 * `previous` is what the cache held for this secret: a key's public key never changes, so when the row still carries
 * the same key, its parsed form is kept rather than parsed again from the PEM at every refresh.
 */
function toRecord(row: KeyRow, previous?: ApiKeyRecord | null): ApiKeyRecord {
  const samePublicKey =
    previous != null && previous.keyId === row.id && previous.fingerprint === row.public_key_fingerprint;
  return {
    keyId: row.id,
    clientId: row.client_id,
    clientCurrency: row.currency.trim(),
    environment: row.environment,
    active: row.active,
    publicKey: samePublicKey ? previous.publicKey : createPublicKey(row.public_key_spki_pem),
    fingerprint: row.public_key_fingerprint,
    createdAt: row.created_at,
  };
}

export interface ApiKeyService {
  create(
    q: Queryable,
    input: { clientId: string; environment: Environment; publicKey: RegisteredPublicKey },
  ): Promise<{ keyId: string; apiKey: string; createdAt: Date }>;
  /** The key record for a presented secret, or null. Cached briefly; deactivation is enforced again atomically by the nonce step. */
  lookup(apiKey: string): Promise<ApiKeyRecord | null>;
  getById(q: Queryable, keyId: string): Promise<ApiKeyRecord | null>;
  deactivate(keyId: string): Promise<boolean>;
  listForClient(q: Queryable, clientId: string): Promise<ApiKeyRecord[]>;
}

/** How long a looked-up key is used without asking the database again, and when, before that, it is read anew. */
export interface KeyCacheTimes {
  /** A known key's record is used this long after it was read. */
  ttlMs: number;
  /** From this age on, a use of the record also reads it again, in the background, for the uses after it. */
  refreshAfterMs: number;
  /** How long an unknown key is remembered as unknown. */
  unknownTtlMs: number;
  now(): number;
}

const CACHE_TIMES: KeyCacheTimes = { ttlMs: 5_000, refreshAfterMs: 4_000, unknownTtlMs: 1_000, now: Date.now };
const CACHE_MAX = 10_000;

interface CacheEntry {
  record: ApiKeyRecord | null;
  readAt: number;
}

export function createApiKeyService({
  db,
  cacheTimes = CACHE_TIMES,
}: {
  db: Db;
  cacheTimes?: KeyCacheTimes;
}): ApiKeyService {
  // Parsing a PEM and a database round trip per request are both avoidable; the cache keeps them off the hot path.
  // A key in use is read again in the background shortly before its entry runs out, so its requests never wait for
  // that read (before, each key's requests waited for it once an interval, and under load every key's entry ran out
  // at the same moment: 32 reads at once, 10-45 ms each). Deactivation needs no fresher record: every signed
  // request's nonce step refuses an inactive key in the database. Concurrent reads of one key share one query.
  const cache = new Map<string, CacheEntry>();
  const reading = new Map<string, Promise<ApiKeyRecord | null>>();
  // A read that started before a deactivation does not put what it read back into the cache.
  let deactivations = 0;

  function read(digest: string): Promise<ApiKeyRecord | null> {
    const inFlight = reading.get(digest);
    if (inFlight) return inFlight;
    const readAt = cacheTimes.now();
    const epoch = deactivations;
    const p = db
      .query<KeyRow>(`${SELECT_KEY} WHERE k.key_hash = $1`, [Buffer.from(digest, 'hex')])
      .then(({ rows }) => {
        const record = rows[0] ? toRecord(rows[0], cache.get(digest)?.record) : null;
        if (epoch === deactivations) {
          if (cache.size >= CACHE_MAX) cache.clear();
          cache.set(digest, { record, readAt });
        }
        return record;
      })
      .finally(() => reading.delete(digest));
    reading.set(digest, p);
    return p;
  }

  return {
    async create(q, { clientId, environment, publicKey }) {
      const keyId = randomId('key');
      const apiKey = generateApiKey(environment);
      const { rows } = await q.query<{ created_at: Date }>(
        `INSERT INTO api_keys (id, client_id, environment, key_hash, public_key_spki_pem, public_key_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at`,
        [keyId, clientId, environment, hashApiKey(apiKey), publicKey.spkiPem, publicKey.fingerprint],
      );
      return { keyId, apiKey, createdAt: rows[0]!.created_at };
    },

    async lookup(apiKey) {
      // Every signed request comes here: the one-shot hash builds no Hash object (a fifth of createHash's time).
      const digest = hash('sha256', apiKey, 'hex');
      const hit = cache.get(digest);
      if (hit) {
        const age = cacheTimes.now() - hit.readAt;
        if (hit.record === null) {
          if (age < cacheTimes.unknownTtlMs) return null;
        } else if (age < cacheTimes.ttlMs) {
          // A background read that fails leaves the entry as it is: a use after it runs out reads in the open.
          if (age >= cacheTimes.refreshAfterMs) read(digest).catch(() => {});
          return hit.record;
        }
      }
      return read(digest);
    },

    async getById(q, keyId) {
      const { rows } = await q.query<KeyRow>(`${SELECT_KEY} WHERE k.id = $1`, [keyId]);
      return rows[0] ? toRecord(rows[0]) : null;
    },

    async deactivate(keyId) {
      const { rowCount } = await db.query(
        'UPDATE api_keys SET active = false, deactivated_at = coalesce(deactivated_at, now()) WHERE id = $1',
        [keyId],
      );
      deactivations++;
      for (const [hash, entry] of cache) if (entry.record?.keyId === keyId) cache.delete(hash);
      return rowCount > 0;
    },

    async listForClient(q, clientId) {
      const { rows } = await q.query<KeyRow>(`${SELECT_KEY} WHERE k.client_id = $1 ORDER BY k.created_at`, [clientId]);
      return rows.map((row) => toRecord(row));
    },
  };
}
