import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { type Running, start } from '../../src/server.ts';
import type { Clock } from '../../src/shared/clock.ts';
import { testKeyPair } from './keys.ts';
import { type Answer, createSignedClient, NonceCounter, type SignedClient } from './signed-client.ts';
import { createTestDb, type TestDb } from './test-db.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
/** A webhook master key for production-mode tests (production refuses to start without one). */
export const TEST_MASTER_KEY = Buffer.alloc(32, 7).toString('base64');

export interface TestClient {
  clientId: string;
  keyId: string;
  apiKey: string;
  api: SignedClient;
}

export interface TestServer {
  running: Running;
  testDb: TestDb;
  baseUrl: string;
  adminUrl: string;
  dataDir: string;
  admin(method: string, target: string, body?: unknown): Promise<Answer>;
  newClient(options?: {
    currency?: string;
    /** Limits per rail; default: generous limits on every enabled rail. null: none. */
    limits?: { rail: string; perPaymentMaxMinor: string; dailyMaxMinor: string }[] | null;
    fundMinor?: bigint;
    keyIndex?: number;
  }): Promise<TestClient>;
  /** Another key of an existing client (limits on every enabled rail): parallel POSTs need one key each. */
  addKey(clientId: string, keyIndex: number): Promise<TestClient>;
  stop(): Promise<void>;
}

/** A real service on loopback (ephemeral ports) over a fresh database: embedded, or PostgreSQL with DATABASE_URL. */
export async function startTestServer(
  options: {
    env?: Record<string, string>;
    clock?: Clock;
    seedDemo?: boolean;
    testDb?: TestDb;
    dataDir?: string;
    /** Default: silent (or TEST_LOG_LEVEL). */
    logger?: Logger;
    /** Which of the service's background loops run, by name. Default all. */
    workers?: (name: string) => boolean;
  } = {},
): Promise<TestServer> {
  const testDb = options.testDb ?? (await createTestDb());
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(tmpdir(), 'dispersa-test-')));
  const config = loadConfig({
    DISPERSA_PORT: '0',
    DISPERSA_ADMIN_PORT: '0',
    DISPERSA_DATA_DIR: dataDir,
    DISPERSA_ADMIN_TOKEN: ADMIN_TOKEN,
    DISPERSA_LOG_LEVEL: 'silent',
    ...options.env,
  });
  const logger = options.logger ?? createLogger(process.env['TEST_LOG_LEVEL'] ?? 'silent');
  const running = await start({
    config: { ...config, adminToken: ADMIN_TOKEN },
    db: testDb.db,
    logger,
    clock: options.clock,
    seedDemo: options.seedDemo ?? false,
    workers: options.workers,
  });

  async function admin(method: string, target: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(running.adminUrl + target, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed, headers: res.headers };
  }

  let keyCounter = 0;
  async function newClient(o: Parameters<TestServer['newClient']>[0] = {}): Promise<TestClient> {
    const c = await admin('POST', '/admin/v1/clients', { name: 'test client', currency: o.currency ?? 'VES' });
    if (c.status !== 201) throw new Error(`client creation failed: ${JSON.stringify(c.body)}`);
    const clientId = c.body.payload.clientId as string;
    const pair = testKeyPair(o.keyIndex ?? keyCounter++ % 3);
    const k = await admin('POST', `/admin/v1/clients/${clientId}/keys`, { publicKeyPem: pair.publicPem });
    if (k.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(k.body)}`);
    const { keyId, apiKey } = k.body.payload as { keyId: string; apiKey: string };
    const limits =
      o.limits === undefined
        ? config.rails.map((rail) => ({ rail, perPaymentMaxMinor: '100000000000', dailyMaxMinor: '1000000000000' }))
        : o.limits;
    if (limits !== null) {
      const l = await admin('PUT', `/admin/v1/keys/${keyId}/limits`, { limits });
      if (l.status !== 200) throw new Error(`limits failed: ${JSON.stringify(l.body)}`);
    }
    if (o.fundMinor !== undefined) {
      const f = await admin('POST', `/admin/v1/clients/${clientId}/fundings`, {
        amountMinor: o.fundMinor.toString(),
        reference: `fund-${clientId}`,
      });
      if (f.status !== 201) throw new Error(`funding failed: ${JSON.stringify(f.body)}`);
    }
    return {
      clientId,
      keyId,
      apiKey,
      api: createSignedClient(running.baseUrl, apiKey, pair.privateKey, new NonceCounter()),
    };
  }

  async function addKey(clientId: string, keyIndex: number): Promise<TestClient> {
    const pair = testKeyPair(keyIndex);
    const k = await admin('POST', `/admin/v1/clients/${clientId}/keys`, { publicKeyPem: pair.publicPem });
    if (k.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(k.body)}`);
    const { keyId, apiKey } = k.body.payload as { keyId: string; apiKey: string };
    await admin('PUT', `/admin/v1/keys/${keyId}/limits`, {
      limits: config.rails.map((rail) => ({
        rail,
        perPaymentMaxMinor: '100000000000',
        dailyMaxMinor: '1000000000000',
      })),
    });
    return {
      clientId,
      keyId,
      apiKey,
      api: createSignedClient(running.baseUrl, apiKey, pair.privateKey, new NonceCounter()),
    };
  }

  return {
    running,
    testDb,
    addKey,
    baseUrl: running.baseUrl,
    adminUrl: running.adminUrl,
    dataDir,
    admin,
    newClient,
    async stop() {
      await running.stop();
      if (!options.testDb) await testDb.close();
      if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
