import type { Queryable } from '../db/db.ts';
import { randomId } from '../shared/ids.ts';

export interface Client {
  clientId: string;
  name: string;
  currency: string;
  createdAt: Date;
}

export type CreateClientResult = { ok: true; client: Client } | { ok: false; error: string };

const CURRENCY = /^[A-Z]{3}$/;

interface ClientRow {
  id: string;
  name: string;
  currency: string;
  created_at: Date;
}

const toClient = (r: ClientRow): Client => ({
  clientId: r.id,
  name: r.name,
  currency: r.currency.trim(),
  createdAt: r.created_at,
});

export async function createClient(
  q: Queryable,
  input: { name: unknown; currency: unknown },
): Promise<CreateClientResult> {
  if (typeof input.name !== 'string' || input.name.trim() === '' || input.name.length > 200) {
    return { ok: false, error: 'name is required: a string of 1 to 200 characters' };
  }
  if (typeof input.currency !== 'string' || !CURRENCY.test(input.currency)) {
    return { ok: false, error: 'currency is required: a three-letter upper-case code such as VES or USD' };
  }
  const { rows } = await q.query<ClientRow>(
    'INSERT INTO clients (id, name, currency) VALUES ($1, $2, $3) RETURNING id, name, currency, created_at',
    [randomId('cli'), input.name.trim(), input.currency],
  );
  return { ok: true, client: toClient(rows[0]!) };
}

export async function getClient(q: Queryable, clientId: string): Promise<Client | null> {
  const { rows } = await q.query<ClientRow>('SELECT id, name, currency, created_at FROM clients WHERE id = $1', [
    clientId,
  ]);
  return rows[0] ? toClient(rows[0]) : null;
}

export async function countClients(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ n: string }>('SELECT count(*)::text AS n FROM clients');
  return Number(rows[0]!.n);
}

/** Newest first; `before` is the id of the last client of the previous page. */
export async function listClients(
  q: Queryable,
  options: { before?: string; limit: number },
): Promise<{ items: Client[]; hasMore: boolean }> {
  const { rows } = await q.query<ClientRow>(
    `SELECT id, name, currency, created_at FROM clients
      WHERE $1::text IS NULL OR (created_at, id) < (SELECT created_at, id FROM clients WHERE id = $1)
      ORDER BY created_at DESC, id DESC LIMIT $2`,
    [options.before ?? null, options.limit + 1],
  );
  return { items: rows.slice(0, options.limit).map(toClient), hasMore: rows.length > options.limit };
}
