import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Db, Queryable } from '../../src/db/db.ts';
import { createPostgresDb } from '../../src/db/postgres.ts';
import { randomId } from '../../src/shared/ids.ts';
import { createTestDb } from '../support/test-db.ts';

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

export async function openTestDb(): Promise<WebhookTestDb> {
  const t = await createTestDb();
  const url = t.url;
  if (url === null) return { db: t.db, openAnother: () => null, close: t.close };
  const others: Db[] = [];
  return {
    db: t.db,
    openAnother() {
      const other = createPostgresDb(url, { max: 10 });
      others.push(other);
      return other;
    },
    async close() {
      await Promise.all(others.map((d) => d.close()));
      await t.close();
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
