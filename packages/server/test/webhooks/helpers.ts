import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { Db, Queryable } from '../../src/db/db.ts';
import { createEmbeddedDb } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPostgresDb } from '../../src/db/postgres.ts';
import { randomId } from '../../src/shared/ids.ts';

/**
 * Test support for the webhook tests: a migrated database (PGlite in memory, or with DATABASE_URL a
 * uniquely named PostgreSQL database dropped afterwards), outbox rows, and a receiver on 127.0.0.1.
 */

export interface WebhookTestDb {
  db: Db;
  /** A second, independent connection pool on the same database (PostgreSQL only), for a second worker. */
  openAnother(): Db | null;
  close(): Promise<void>;
}

async function adminQuery(baseUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function openTestDb(): Promise<WebhookTestDb> {
  const baseUrl = process.env['DATABASE_URL'];
  if (!baseUrl) {
    const db = await createEmbeddedDb(null);
    await migrate(db);
    return { db, openAnother: () => null, close: () => db.close() };
  }
  const name = `webhooks_t_${randomBytes(6).toString('hex')}`;
  await adminQuery(baseUrl, `CREATE DATABASE ${name}`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const db = createPostgresDb(url.toString(), { max: 10 });
  const others: Db[] = [];
  await migrate(db);
  return {
    db,
    openAnother() {
      const other = createPostgresDb(url.toString(), { max: 10 });
      others.push(other);
      return other;
    },
    async close() {
      await Promise.all([db, ...others].map((d) => d.close()));
      await adminQuery(baseUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

export async function insertClient(q: Queryable, name = 'Test client'): Promise<string> {
  const id = randomId('cli');
  await q.query('INSERT INTO clients (id, name, currency) VALUES ($1, $2, $3)', [id, name, 'VES']);
  return id;
}

export interface TestEvent {
  id: string;
  body: string;
}

/** An outbox row as the payment core writes it: body is the exact JSON text to deliver. */
export async function insertEvent(
  q: Queryable,
  options: { clientId: string; paymentId?: string | null; dueAt: Date; state?: string },
): Promise<TestEvent> {
  const id = randomId('evt');
  const paymentId = options.paymentId === undefined ? randomId('pay') : options.paymentId;
  const body = JSON.stringify({
    id,
    type: 'payment.state_changed',
    test: false,
    createdAt: options.dueAt.toISOString(),
    data: { payment: { id: paymentId, state: options.state ?? 'completed' }, previousState: 'processing' },
  });
  await q.query(
    `INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at)
     VALUES ($1, $2, 'payment.state_changed', false, $3, $4, $5, $5)`,
    [id, options.clientId, paymentId, body, options.dueAt],
  );
  return { id, body };
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export type ReceiverHandler = (req: ReceivedRequest, res: ServerResponse) => void;

export interface Receiver {
  port: number;
  url: string;
  requests: ReceivedRequest[];
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  setHandler(handler: ReceiverHandler): void;
  close(): Promise<void>;
}

/** An HTTP receiver on 127.0.0.1; answers 200 {} unless told otherwise. */
export async function startReceiver(handler?: ReceiverHandler): Promise<Receiver> {
  let current: ReceiverHandler =
    handler ??
    ((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  const requests: ReceivedRequest[] = [];
  const state = { connections: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(received);
      current(received, res);
    });
  });
  server.on('connection', () => {
    state.connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    get connections() {
      return state.connections;
    },
    setHandler(h) {
      current = h;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
