import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedClients } from '../../bench/seed.ts';
import { type ServerProcess, startServerProcess } from '../../bench/server-process.ts';
import { createAdminCaller, createSignedCaller } from '../../bench/signing.ts';
import { PM } from '../support/payments.ts';
import { createTestDatabaseUrl, usingPostgres } from '../support/test-db.ts';

/**
 * `npm start` runs the build (dist/main.js, packages/server/build.mjs) with plain node, not the sources: the build
 * must run the whole service, from migrating a fresh database to paying and reading a payment with a signed request.
 * `npm test` builds first (pretest), so this is the build of the sources under test.
 */

let dataDir = '';
let database: { url: string; drop(): Promise<void> } | null = null;
let server: ServerProcess | null = null;
const adminToken = `built-${randomBytes(12).toString('hex')}`;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'dispersa-built-'));
  database = usingPostgres() ? await createTestDatabaseUrl() : null;
  server = await startServerProcess({
    dataDir,
    adminToken,
    databaseUrl: database?.url ?? null,
    built: true,
    env: { DISPERSA_LOG_LEVEL: 'error' },
  });
}, 90_000);

afterAll(async () => {
  await server?.stop();
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('the built service', () => {
  it('runs without the TypeScript loader, migrates, pays and reads', async () => {
    const command = (await readFile(`/proc/${server!.pid}/cmdline`, 'utf8')).split('\0').join(' ');
    expect(command).toContain(path.join('dist', 'main.js'));
    expect(command).not.toContain('tsx');

    const admin = createAdminCaller(server!.adminUrl, adminToken);
    const [key] = await seedClients(admin, { clients: 1, keysPerClient: 1, fundMinor: 1_000_000n, label: 'built' });
    const call = createSignedCaller(server!.baseUrl, key!.apiKey, key!.privatePem);
    const paid = await call('POST', '/v2/payments', {
      idempotencyKey: `built-${randomBytes(6).toString('hex')}`,
      body: { amountMinor: '150000', currency: 'VES', ...PM },
    });
    expect(paid.status, JSON.stringify(paid.body)).toBe(201);
    const id = (paid.body as { payload: { id: string } }).payload.id;
    const read = await call('GET', `/v2/payments/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ payload: { id, amountMinor: '150000' } });
  });
});
