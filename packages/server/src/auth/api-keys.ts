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

function toRecord(row: KeyRow): ApiKeyRecord {
  return {
    keyId: row.id,
    clientId: row.client_id,
    clientCurrency: row.currency.trim(),
    environment: row.environment,
    active: row.active,
    publicKey: createPublicKey(row.public_key_spki_pem),
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

const CACHE_TTL_MS = 5_000;
const CACHE_MAX = 10_000;

export function createApiKeyService({ db }: { db: Db }): ApiKeyService {
  // Parsing a PEM and a database round trip per request are both avoidable; the cache keeps them off the hot path.
  const cache = new Map<string, { record: ApiKeyRecord | null; expires: number }>();

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
      const now = Date.now();
      const hit = cache.get(digest);
      if (hit && hit.expires > now) return hit.record;
      const { rows } = await db.query<KeyRow>(`${SELECT_KEY} WHERE k.key_hash = $1`, [Buffer.from(digest, 'hex')]);
      const record = rows[0] ? toRecord(rows[0]) : null;
      if (cache.size >= CACHE_MAX) cache.clear();
      cache.set(digest, { record, expires: now + (record ? CACHE_TTL_MS : 1_000) });
      return record;
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
      for (const [hash, entry] of cache) if (entry.record?.keyId === keyId) cache.delete(hash);
      return rowCount > 0;
    },

    async listForClient(q, clientId) {
      const { rows } = await q.query<KeyRow>(`${SELECT_KEY} WHERE k.client_id = $1 ORDER BY k.created_at`, [clientId]);
      return rows.map(toRecord);
    },
  };
}
