import type { AuthContext } from '../../src/auth/authenticate.ts';
import type { Db } from '../../src/db/db.ts';

/**
 * A VES client with a key and generous limits on both rails, written straight in SQL, for tests that drive the
 * services directly (no HTTP, so no real public key is needed).
 */
export async function insertServiceClient(db: Db, prefix: string): Promise<AuthContext> {
  const id = `${prefix}_${Math.random().toString(36).slice(2)}`;
  const keyId = `key_${id}`;
  await db.query("INSERT INTO clients (id, name, currency) VALUES ($1, 'prop', 'VES')", [id]);
  await db.query(
    `INSERT INTO api_keys (id, client_id, environment, key_hash, public_key_spki_pem, public_key_fingerprint)
     VALUES ($1, $2, 'sandbox', $3, 'unused', 'unused')`,
    [keyId, id, Buffer.from(keyId)],
  );
  for (const rail of ['PM', 'CCE']) {
    await db.query(
      'INSERT INTO key_limits (key_id, rail, per_payment_max_minor, daily_max_minor) VALUES ($1, $2, 1000000000, 100000000000)',
      [keyId, rail],
    );
  }
  return { keyId, clientId: id, clientCurrency: 'VES', environment: 'sandbox', fingerprint: 'unused' };
}
