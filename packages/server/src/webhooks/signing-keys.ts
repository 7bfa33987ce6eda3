import { createHash, createPrivateKey, generateKeyPair, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import type { Environment } from '../config.ts';
import type { Db, Queryable } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import type { Jwks, PublicJwk } from './jws.ts';
import { loadOrCreateMasterKey, MasterKeyError, open, seal } from './master-key.ts';

/**
 * The deployment's RS256 webhook signing keys. One is active (signs); after a rotation the previous one is
 * retiring (still published in the JWKS, so events signed before the rotation still verify) until retired.
 * Private keys are stored sealed under the master key; decrypted KeyObjects live only in memory.
 */

export type SigningKeyStatus = 'active' | 'retiring' | 'retired';

export interface ActiveSigner {
  kid: string;
  privateKey: KeyObject;
}

export interface SigningKeyInfo {
  kid: string;
  status: SigningKeyStatus;
  environment: Environment;
  createdAt: Date;
  rotatedAt: Date | null;
  retiredAt: Date | null;
}

export type RetireResult = { ok: true } | { ok: false; error: 'not_found' | 'is_active' | 'already_retired' };

export interface SigningKeys {
  /** The key to sign with now. Cached; rechecked against the database at most every recheckMs. */
  activeSigner(): Promise<ActiveSigner>;
  /** Active and retiring public keys, active first: the body of GET /v2/webhook/keys. */
  jwks(): Promise<Jwks>;
  /** Makes a new active key; the previous active one becomes retiring. */
  rotate(): Promise<{ kid: string; previousKid: string | null }>;
  /** Drops a retiring key from the JWKS and erases its private key. */
  retire(kid: string): Promise<RetireResult>;
  list(): Promise<SigningKeyInfo[]>;
}

export interface SigningKeysDeps {
  db: Db;
  clock: Clock;
  environment: Environment;
  /** Where the master key file lives (<dataDir>/secrets/webhook-master.key); used when masterKey is absent. */
  dataDir?: string | null;
  /** An explicit master key (tests, or resolved from the configuration); 32 bytes. */
  masterKey?: Buffer;
  /** Where masterKey came from, named in the message when it cannot open the stored keys. */
  masterKeyOrigin?: string;
  /** How stale the cached active key may be before the database is asked again (other processes rotate). */
  recheckMs?: number;
}

/** Thrown when the database holds a key of the other environment: sandbox and production never share keys. */
export class SigningKeyEnvironmentError extends Error {
  constructor(kid: string, found: string, expected: Environment) {
    super(`webhook signing key ${kid} belongs to ${found}, this deployment is ${expected}: refusing to use it`);
    this.name = 'SigningKeyEnvironmentError';
  }
}

// Serialises first-start creation and rotation across processes sharing one PostgreSQL.
const KEYS_LOCK = 4_242_006;

interface KeyRow {
  kid: string;
  environment: string;
  status: SigningKeyStatus;
  public_jwk: PublicJwk | string;
  private_key_enc: string | null;
  created_at: Date;
  rotated_at: Date | null;
  retired_at: Date | null;
}

const generateRsa = promisify(generateKeyPair);

interface NewKey {
  kid: string;
  publicJwk: PublicJwk;
  privateKey: KeyObject;
  sealed: string;
}

/** RFC 7638 thumbprint: members e, kty, n in that order, no whitespace. */
function thumbprint(n: string, e: string): string {
  return createHash('sha256')
    .update(JSON.stringify({ e, kty: 'RSA', n }))
    .digest('base64url');
}

function aadFor(environment: Environment, kid: string): string {
  return `dispersa-webhook-signing-key:${environment}:${kid}`;
}

export async function createSigningKeys(deps: SigningKeysDeps): Promise<SigningKeys> {
  const { db, clock, environment } = deps;
  const recheckMs = deps.recheckMs ?? 5000;
  let masterKey: Buffer;
  if (deps.masterKey !== undefined) {
    masterKey = deps.masterKey;
  } else if (deps.dataDir) {
    masterKey = await loadOrCreateMasterKey(deps.dataDir);
  } else {
    throw new TypeError('createSigningKeys needs a masterKey or a dataDir');
  }
  if (masterKey.length !== 32) throw new TypeError('the webhook master key must be 32 bytes');

  let cached: (ActiveSigner & { checkedAt: number }) | null = null;

  function checkEnvironment(row: Pick<KeyRow, 'kid' | 'environment'>): void {
    if (row.environment !== environment) throw new SigningKeyEnvironmentError(row.kid, row.environment, environment);
  }

  async function newKey(): Promise<NewKey> {
    const { publicKey, privateKey } = await generateRsa('rsa', { modulusLength: 2048 });
    const { n, e } = publicKey.export({ format: 'jwk' });
    if (n === undefined || e === undefined) throw new Error('RSA public key exported without n or e');
    const kid = thumbprint(n, e);
    const der = privateKey.export({ format: 'der', type: 'pkcs8' });
    return {
      kid,
      privateKey,
      publicJwk: { kty: 'RSA', use: 'sig', alg: 'RS256', kid, n, e },
      sealed: seal(masterKey, der, aadFor(environment, kid)),
    };
  }

  async function insertActive(q: Queryable, key: NewKey): Promise<void> {
    await q.query(
      `INSERT INTO webhook_signing_keys (kid, environment, status, public_jwk, private_key_enc, created_at)
       VALUES ($1, $2, 'active', $3, $4, $5)`,
      [key.kid, environment, JSON.stringify(key.publicJwk), key.sealed, clock.now()],
    );
  }

  function unseal(row: KeyRow): KeyObject {
    checkEnvironment(row);
    if (row.private_key_enc === null) throw new Error(`webhook signing key ${row.kid} has no private key`);
    const der = open(masterKey, row.private_key_enc, aadFor(environment, row.kid));
    return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  }

  async function readActive(): Promise<KeyRow | undefined> {
    const { rows } = await db.query<KeyRow>(
      `SELECT kid, environment, status, private_key_enc FROM webhook_signing_keys WHERE status = 'active'`,
    );
    return rows[0];
  }

  async function ensureActiveKey(): Promise<void> {
    const existing = await readActive();
    if (existing !== undefined) {
      checkEnvironment(existing);
      return;
    }
    // Generated outside the transaction: RSA generation takes a noticeable fraction of a second.
    const fresh = await newKey();
    await db.tx(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock($1)', [KEYS_LOCK]);
      const { rows } = await q.query(`SELECT kid FROM webhook_signing_keys WHERE status = 'active'`);
      if (rows.length === 0) await insertActive(q, fresh);
    });
  }

  async function activeSigner(): Promise<ActiveSigner> {
    const now = clock.now().getTime();
    if (cached !== null && now - cached.checkedAt < recheckMs && now >= cached.checkedAt) {
      return { kid: cached.kid, privateKey: cached.privateKey };
    }
    let row = await readActive();
    if (row === undefined) {
      await ensureActiveKey();
      row = await readActive();
      if (row === undefined) throw new Error('no active webhook signing key after creating one');
    }
    // Decrypt only when the active key changed (a rotation here or in another process).
    const privateKey = cached !== null && cached.kid === row.kid ? cached.privateKey : unseal(row);
    cached = { kid: row.kid, privateKey, checkedAt: now };
    return { kid: row.kid, privateKey };
  }

  async function jwks(): Promise<Jwks> {
    const { rows } = await db.query<KeyRow>(
      `SELECT kid, environment, status, public_jwk FROM webhook_signing_keys
       WHERE status IN ('active', 'retiring') ORDER BY status = 'active' DESC, created_at DESC, kid`,
    );
    return {
      keys: rows.map((row) => {
        checkEnvironment(row);
        const jwk = typeof row.public_jwk === 'string' ? (JSON.parse(row.public_jwk) as PublicJwk) : row.public_jwk;
        return { kty: 'RSA', use: 'sig', alg: 'RS256', kid: row.kid, n: jwk.n, e: jwk.e };
      }),
    };
  }

  async function rotate(): Promise<{ kid: string; previousKid: string | null }> {
    const fresh = await newKey();
    const previousKid = await db.tx(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock($1)', [KEYS_LOCK]);
      const { rows } = await q.query<Pick<KeyRow, 'kid' | 'environment'>>(
        `UPDATE webhook_signing_keys SET status = 'retiring', rotated_at = $1 WHERE status = 'active'
         RETURNING kid, environment`,
        [clock.now()],
      );
      // Throwing rolls the demotion back: a key of the other environment is left exactly as it was.
      for (const row of rows) checkEnvironment(row);
      await insertActive(q, fresh);
      return rows[0]?.kid ?? null;
    });
    cached = { kid: fresh.kid, privateKey: fresh.privateKey, checkedAt: clock.now().getTime() };
    return { kid: fresh.kid, previousKid };
  }

  async function retire(kid: string): Promise<RetireResult> {
    const { rows } = await db.query<Pick<KeyRow, 'status' | 'environment' | 'kid'>>(
      'SELECT kid, status, environment FROM webhook_signing_keys WHERE kid = $1',
      [kid],
    );
    const row = rows[0];
    if (row === undefined || row.environment !== environment) return { ok: false, error: 'not_found' };
    if (row.status === 'active') return { ok: false, error: 'is_active' };
    if (row.status === 'retired') return { ok: false, error: 'already_retired' };
    const res = await db.query(
      `UPDATE webhook_signing_keys SET status = 'retired', retired_at = $2, private_key_enc = NULL
       WHERE kid = $1 AND status = 'retiring'`,
      [kid, clock.now()],
    );
    return res.rowCount === 1 ? { ok: true } : { ok: false, error: 'already_retired' };
  }

  async function list(): Promise<SigningKeyInfo[]> {
    const { rows } = await db.query<KeyRow>(
      `SELECT kid, environment, status, created_at, rotated_at, retired_at FROM webhook_signing_keys
       WHERE environment = $1 ORDER BY created_at DESC, kid`,
      [environment],
    );
    return rows.map((row) => ({
      kid: row.kid,
      status: row.status,
      environment: row.environment as Environment,
      createdAt: new Date(row.created_at),
      rotatedAt: row.rotated_at === null ? null : new Date(row.rotated_at),
      retiredAt: row.retired_at === null ? null : new Date(row.retired_at),
    }));
  }

  await ensureActiveKey();
  // Unsealing now makes a wrong master key or a foreign key fail at start, not at the first delivery.
  try {
    await activeSigner();
  } catch (err) {
    if (!(err instanceof MasterKeyError) || deps.masterKeyOrigin === undefined) throw err;
    throw new MasterKeyError(
      `${deps.masterKeyOrigin} cannot open the webhook signing keys stored in the database: it is not the key they ` +
        'were sealed with. Every process on one database needs the same master key',
    );
  }
  return { activeSigner, jwks, rotate, retire, list };
}
