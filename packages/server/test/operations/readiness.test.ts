import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb, usingPostgres } from '../support/test-db.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';

/**
 * /health is liveness (200 while the process runs); /readyz is readiness: 200 only while the database answers
 * and holds every migration of this release, 503 otherwise and from the start of a shutdown. Both take no token.
 */

let server: TestServer | undefined;
/** A database a test made for its server, closed (on PostgreSQL: dropped) after the server stops. */
let ownDb: TestDb | undefined;
afterEach(async () => {
  await server?.stop().catch(() => {});
  server = undefined;
  await ownDb?.close().catch(() => {});
  ownDb = undefined;
});

const readyz = async (url: string) => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as { status?: string; error?: string } };
};

describe('/readyz', () => {
  it('is 200 on both listeners, without a token, while the database answers', async () => {
    server = await startTestServer();
    expect(await readyz(server.baseUrl)).toEqual({ status: 200, body: { status: 'ready' } });
    expect(await readyz(server.adminUrl)).toEqual({ status: 200, body: { status: 'ready' } });
    expect((await fetch(`${server.baseUrl}/health`)).status).toBe(200);
  });

  it('is 503 while a migration of this release is missing from the database', async () => {
    server = await startTestServer();
    const db = server.testDb.db;
    const { rows } = await db.query<{ version: number; name: string }>(
      'SELECT version, name FROM schema_migrations ORDER BY version DESC LIMIT 1',
    );
    await db.query('DELETE FROM schema_migrations WHERE version = $1', [rows[0]!.version]);
    const missing = await readyz(server.baseUrl);
    expect(missing.status).toBe(503);
    expect(missing.body.error).toMatch(/^not ready: migrations pending/);
    await db.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [rows[0]!.version, rows[0]!.name]);
    expect((await readyz(server.baseUrl)).status).toBe(200);
  });

  it('is 503 once shutdown begins, while /health still answers', async () => {
    server = await startTestServer();
    server.running.readiness.markStopping();
    expect(await readyz(server.adminUrl)).toEqual({ status: 503, body: { error: 'not ready: shutting down' } });
    expect((await fetch(`${server.adminUrl}/health`)).status).toBe(200);
  });

  it.skipIf(usingPostgres())('embedded: is 503 when the database is closed under the service', async () => {
    const testDb = await createTestDb();
    ownDb = testDb;
    server = await startTestServer({ testDb });
    expect((await readyz(server.baseUrl)).status).toBe(200);
    await testDb.db.close();
    const down = await readyz(server.baseUrl);
    expect(down.status).toBe(503);
    expect(down.body.error).toMatch(/^not ready: database unavailable/);
    expect((await fetch(`${server.baseUrl}/health`)).status).toBe(200);
  });

  it.skipIf(!usingPostgres())(
    'PostgreSQL: is 503 while the database refuses connections, and 200 again when it is back',
    async () => {
      await onOwnDatabase(async ({ name, admin }) => {
        expect((await readyz(server!.baseUrl)).status).toBe(200);
        try {
          // The database stops: no new connection, and every open one is cut.
          await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
          await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
          const down = await readyz(server!.baseUrl);
          expect(down.status).toBe(503);
          expect(down.body.error).toMatch(/^not ready: database unavailable/);
          expect((await fetch(`${server!.baseUrl}/health`)).status).toBe(200);
          await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
          expect((await readyz(server!.baseUrl)).status).toBe(200);
        } finally {
          await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).catch(() => {});
        }
      });
    },
  );

  it.skipIf(!usingPostgres())(
    'PostgreSQL: is 200 right after the database cut every connection, since a new one answers',
    async () => {
      await onOwnDatabase(async ({ name, admin, testDb }) => {
        for (let round = 0; round < 8; round++) {
          // Connections the pool holds idle, each with a backend of its own.
          await Promise.all(Array.from({ length: 4 }, () => testDb.db.query('SELECT pg_sleep(0.01)')));
          // Their backends end (a restart, an administrator): the pool learns it only when it next uses one.
          await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
          expect((await readyz(server!.baseUrl)).status, `round ${round}`).toBe(200);
        }
      });
    },
  );
});

/**
 * Runs body with a server on a PostgreSQL database of its own (its name given), and a connection to that server as
 * its administrator, which can refuse the database's connections or end its backends.
 */
async function onOwnDatabase(
  body: (own: { name: string; admin: pg.Client; testDb: TestDb }) => Promise<void>,
): Promise<void> {
  const testDb = await createTestDb();
  ownDb = testDb;
  server = await startTestServer({ testDb });
  const admin = new pg.Client({ connectionString: process.env['DATABASE_URL'] });
  await admin.connect();
  try {
    await body({ name: new URL(testDb.url!).pathname.slice(1), admin, testDb });
  } finally {
    await admin.end();
  }
}
